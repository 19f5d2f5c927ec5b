package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Defaults of the commands' options, as Kopf's.
const (
	// defaultPriority is the priority of `kopf freeze` without --priority:
	// above operators' default of 0, below --dev operators' 666.
	defaultPriority = 100
	// devPriority is what --dev means, as for operators.
	devPriority = 666
)

// options are one command's parsed command line.
type options struct {
	// command is "freeze" or "resume".
	command string
	// peering is the name of the peering object(s).
	peering string
	// id is the record's identity; empty: peering.Identity(true, now).
	id string
	// priority and lifetime (seconds) of the record; a zero lifetime
	// removes the record, as resume does.
	priority int
	lifetime int
	// message says why the operators are frozen; it is stored in the
	// record, where Python Kopf ignores it.
	message string
	// namespaces: the KopfPeering of each; none: the ClusterKopfPeering.
	namespaces []string
	// clusterwide is -A: the ClusterKopfPeering.
	clusterwide bool
	kubeconfig  string
	// verbose prints each patch; quiet prints nothing on success.
	verbose, quiet bool
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// flagDef is one option: its names (the first is the long one), and the
// environment variable that supplies it when the command line does not,
// as click's auto_envvar_prefix does for Kopf (KOPF_<COMMAND>_<PARAM>).
type flagDef struct {
	names []string
	env   string
	value flag.Value
}

// parse reads the command line of freeze or resume (without the command's
// name). getenv supplies environment variables; empty means unset.
func parse(command string, args []string, getenv func(string) string) (options, error) {
	o := options{command: command, priority: defaultPriority}
	var dev, debug bool
	env := func(param string) string { return "KOPF_" + strings.ToUpper(command) + "_" + param }
	defs := []flagDef{
		{[]string{"peering", "P"}, env("PEERING"), stringValue{&o.peering}},
		{[]string{"id", "i"}, env("ID"), stringValue{&o.id}},
		{[]string{"namespace", "n"}, env("NAMESPACES"), (*stringList)(&o.namespaces)},
		{[]string{"all-namespaces", "A"}, env("CLUSTERWIDE"), boolValue{&o.clusterwide}},
		{[]string{"kubeconfig"}, "", stringValue{&o.kubeconfig}},
		{[]string{"verbose", "v"}, env("VERBOSE"), boolValue{&o.verbose}},
		{[]string{"debug", "d"}, env("DEBUG"), boolValue{&debug}},
		{[]string{"quiet", "q"}, env("QUIET"), boolValue{&o.quiet}},
	}
	if command == "freeze" {
		defs = append(defs,
			flagDef{[]string{"lifetime", "t"}, env("LIFETIME"), intValue{&o.lifetime}},
			flagDef{[]string{"priority", "p"}, env("PRIORITY"), intValue{&o.priority}},
			flagDef{[]string{"dev"}, env("DEV"), boolValue{&dev}},
			flagDef{[]string{"message", "m"}, env("MESSAGE"), stringValue{&o.message}},
		)
	}

	fs := flag.NewFlagSet("kopf "+command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	long := map[string]string{} // any name -> the long name
	for _, d := range defs {
		for _, name := range d.names {
			fs.Var(d.value, name, "")
			long[name] = d.names[0]
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return o, usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[long[f.Name]] = true })
	for _, d := range defs {
		if given[d.names[0]] || d.env == "" || getenv(d.env) == "" {
			continue
		}
		if err := setFromEnv(d.value, getenv(d.env)); err != nil {
			return o, usagef("invalid value %q of $%s: %v", getenv(d.env), d.env, err)
		}
		given[d.names[0]] = true
	}

	o.verbose = o.verbose || debug
	if dev {
		o.priority = devPriority
	}
	switch {
	case o.peering == "":
		return o, usagef("--peering NAME is required (or $%s)", env("PEERING"))
	case command == "freeze" && !given["lifetime"]:
		return o, usagef("--lifetime SECONDS is required (or $%s)", env("LIFETIME"))
	case o.lifetime < 0:
		return o, usagef("--lifetime must not be negative, not %d", o.lifetime)
	case o.clusterwide && len(o.namespaces) > 0:
		return o, usagef("either --namespace or --all-namespaces can be used, not both")
	}
	if command == "resume" {
		o.priority, o.lifetime = 0, 0
	}
	return o, nil
}

// setFromEnv sets an option from an environment variable as click does:
// lists are separated by whitespace, and booleans are words such as
// "1", "true", "yes", "on" (or their opposites).
func setFromEnv(v flag.Value, s string) error {
	switch v := v.(type) {
	case *stringList:
		for _, part := range strings.Fields(s) {
			if err := v.Set(part); err != nil {
				return err
			}
		}
		return nil
	case boolValue:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "1", "true", "t", "yes", "y", "on":
			*v.p = true
		case "0", "false", "f", "no", "n", "off":
			*v.p = false
		default:
			return errors.New("not a boolean")
		}
		return nil
	default:
		return v.Set(s)
	}
}

type stringValue struct{ p *string }

func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v stringValue) Set(s string) error { *v.p = s; return nil }

type intValue struct{ p *int }

func (v intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	*v.p = n
	return nil
}

type boolValue struct{ p *bool }

func (v boolValue) String() string {
	if v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("not a boolean")
	}
	*v.p = b
	return nil
}

// IsBoolFlag lets the flag stand alone (-A rather than -A=true).
func (v boolValue) IsBoolFlag() bool { return true }

// stringList is a repeatable option; commas separate values too.
type stringList []string

func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *stringList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" && !slices.Contains(*l, part) {
			*l = append(*l, part)
		}
	}
	return nil
}
