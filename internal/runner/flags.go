package runner

import (
	"flag"
	"strconv"
	"strings"

	"github.com/kopf-go/kopf/internal/scopes"
)

// optionalBool is a boolean flag that remembers whether it was given.
type optionalBool struct{ v **bool }

// OptionalBool is a boolean flag that sets *v, remembering so whether it
// was given (nil: it was not).
func OptionalBool(v **bool) flag.Value { return optionalBool{v} }

func (b optionalBool) String() string {
	if b.v == nil || *b.v == nil {
		return ""
	}
	return strconv.FormatBool(**b.v)
}

func (b optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.v = &v
	return nil
}

func (optionalBool) IsBoolFlag() bool { return true }

// Patterns is a repeatable flag of namespace patterns. A comma does
// not separate values: it separates the globs of one pattern, as in
// Kopf (docs/scopes.md).
type Patterns []string

func (l *Patterns) String() string { return strings.Join(*l, " ") }

func (l *Patterns) Set(v string) error {
	if _, err := scopes.ParsePattern(v); err != nil {
		return err
	}
	*l = append(*l, v)
	return nil
}
