package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/kopf-go/kopf/cmd/kubebuilder-kopf/internal/scaffold"
)

// fallbackKopfVersion is the kopf-go that go.mod requires when neither
// --kopf-version nor the plugin's own build says which.
const fallbackKopfVersion = "v0.1.0"

// kopfVersion is the default of --kopf-version: the kopf-go release the
// plugin was installed from (go install ...@v0.3.0), else the fallback.
// Builds from a checkout carry no release, or one that may not be
// published (+dirty).
func kopfVersion() string {
	info, ok := debug.ReadBuildInfo()
	if ok && info.Main.Path == scaffold.Module && strings.HasPrefix(info.Main.Version, "v") && !strings.Contains(info.Main.Version, "+") {
		return info.Main.Version
	}
	return fallbackKopfVersion
}

// kopfFlags are the flags of init and edit, which both add kopf-go to
// the project.
func kopfFlags() []flag {
	return []flag{
		{Name: "kopf-version", Type: "string", Default: kopfVersion(), Usage: "the version of github.com/kopf-go/kopf that go.mod requires"},
		{Name: "kopf-replace", Type: "string", Usage: "replace github.com/kopf-go/kopf in go.mod with a directory (absolute, or ./ or ../ relative to the project), e.g. a checkout, or with module@version"},
	}
}

// forceFlag shares go/v4's --force of create api (kubebuilder gives both
// plugins the one value).
var forceFlag = flag{Name: "force", Type: "bool", Default: "false", Usage: "overwrite the kopf-go files of the kind if they exist"}

// subcommandFlags are the flags of each subcommand, by the name that the
// flags and metadata helpers use (--init, --api, --webhook, --edit).
func subcommandFlags(subcommand string) ([]flag, bool) {
	switch subcommand {
	case "init", "edit":
		return kopfFlags(), true
	case "api":
		return []flag{
			{Name: "daemon", Type: "bool", Default: "false", Usage: "also scaffold a daemon: a function that runs for as long as each object exists"},
			{Name: "timer", Type: "bool", Default: "false", Usage: "also scaffold a timer: a function called every minute for each object"},
			forceFlag,
		}, true
	case "webhook":
		return []flag{
			{Name: "validating", Type: "bool", Default: "true", Usage: "scaffold a validating admission handler"},
			{Name: "mutating", Type: "bool", Default: "true", Usage: "scaffold a mutating admission handler"},
			forceFlag,
		}, true
	}
	return nil, false
}

// resourceFlags are kubebuilder's own flags of create api and create
// webhook, which the plugin reads but does not declare.
var resourceFlags = []flag{{Name: "group", Type: "string"}, {Name: "version", Type: "string"}, {Name: "kind", Type: "string"}}

// values are parsed flags by name.
type values map[string]string

func (v values) bool(name string) bool {
	b, _ := strconv.ParseBool(v[name])
	return b
}

// parseArgs reads the known flags from the request's Args: kubebuilder
// passes every --flag of the command line (the other plugins' too) with
// the token after it when that is not a flag. Unknown flags are the other
// plugins'; kubebuilder has rejected the ones nobody declared.
func parseArgs(args []string, known []flag) (values, error) {
	v := values{}
	specs := map[string]flag{}
	for _, f := range known {
		specs[f.Name] = f
		v[f.Name] = f.Default
	}
	for i := 0; i < len(args); i++ {
		arg, isFlag := strings.CutPrefix(args[i], "--")
		if !isFlag {
			continue // the value of an unknown flag, or a stray argument
		}
		name, value, hasValue := strings.Cut(arg, "=")
		spec, ok := specs[name]
		next := i+1 < len(args) && !strings.HasPrefix(args[i+1], "--")
		switch {
		case !ok:
			continue
		case spec.Type == "bool":
			// A bool takes a value only as --name=value, as with pflag.
			if !hasValue {
				value = "true"
			}
			if _, err := strconv.ParseBool(value); err != nil {
				return nil, fmt.Errorf("--%s=%s: want true or false", name, value)
			}
		case !hasValue && next:
			i++
			value = args[i]
		case !hasValue:
			return nil, fmt.Errorf("--%s needs a value", name)
		}
		v[name] = value
	}
	return v, nil
}
