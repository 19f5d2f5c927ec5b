package posting

import (
	"errors"
	"go/token"
	"reflect"
	"strings"
)

// DefaultErrorReason is the reason of Error Events whose error names no
// exported type.
const DefaultErrorReason = "Error"

// ReasonOfError is the reason of an Error Event about err when none is
// given: the name of the first exported type in err's chain (Kopf uses the
// exception's class name), so that fmt.Errorf("...: %w", err) still names
// the cause, as in "TemporaryError" or "StatusError". Errors of unexported
// types only (errors.New) and a nil error give "Error".
func ReasonOfError(err error) string {
	for err != nil {
		t := reflect.TypeOf(err)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		name, _, _ := strings.Cut(t.Name(), "[") // generic types: no parameters
		if token.IsExported(name) {
			return name
		}
		if multi, ok := err.(interface{ Unwrap() []error }); ok {
			if errs := multi.Unwrap(); len(errs) > 0 {
				err = errs[0]
				continue
			}
			break
		}
		err = errors.Unwrap(err)
	}
	return DefaultErrorReason
}

// MessageOfError is the message of an Error Event, as Kopf forms it: the
// message and the error separated by a space, or whichever of them exists.
func MessageOfError(message string, err error) string {
	switch {
	case err == nil:
		return message
	case message == "":
		return err.Error()
	default:
		return message + " " + err.Error()
	}
}
