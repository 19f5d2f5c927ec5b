package hierarchies

import "errors"

// errNoName is HarmonizeNaming's answer to an empty name; Kopf raises a
// LookupError when it finds no name.
var errNoName = errors.New("harmonize the naming: the name is empty")

// HarmonizeNaming names child after name, as Kopf's harmonize_naming. It
// acts only if the child has neither a name nor a generateName, or if
// Forced. Then, by default, the child gets generateName "<name>-" (the API
// server adds a random suffix; read the real name from the created object)
// and loses its name; with Strict it gets the name itself and loses its
// generateName.
func HarmonizeNaming(child Object, name string, opts ...NamingOption) error {
	return harmonizeNaming(child, name, newConfig(opts))
}

// harmonizeNaming is HarmonizeNaming with the options applied, shared with
// Adopt.
func harmonizeNaming(child Object, name string, c *config) error {
	if name == "" {
		return errNoName
	}
	if !c.forced && (child.GetName() != "" || child.GetGenerateName() != "") {
		return nil
	}
	if c.strict {
		child.SetName(name)
		child.SetGenerateName("")
	} else {
		child.SetGenerateName(name + "-")
		child.SetName("")
	}
	return nil
}
