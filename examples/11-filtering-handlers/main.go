// Command 11-filtering-handlers shows every kind of filter: handlers that
// match the example object log what matched, and those that do not match
// never run, so their lines never appear.
package main

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

type (
	object = *unstructured.Unstructured
	change = *cause.Change
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")

	// Labels: an exact value, presence, absence, and a callback.
	handlers.OnCreate(kex, "create_with_labels_matching", logging("Label is matching."),
		handlers.Labels{"somelabel": filter.Equals("somevalue")})
	handlers.OnCreate(kex, "create_with_labels_present", logging("Label is present."),
		handlers.Labels{"somelabel": filter.Present})
	handlers.OnCreate(kex, "create_with_labels_absent", logging("Label is absent."),
		handlers.Labels{"nonexistent": filter.Absent})
	handlers.OnCreate(kex, "create_with_labels_callback_matching", logging("Label callback matching."),
		handlers.Labels{"somelabel": filter.Check(isSomeValue)}, handlers.When(fieldIsSet))

	// Annotations: the same four; this callback never matches.
	handlers.OnCreate(kex, "create_with_annotations_matching", logging("Annotation is matching."),
		handlers.Annotations{"someannotation": filter.Equals("somevalue")})
	handlers.OnCreate(kex, "create_with_annotations_present", logging("Annotation is present."),
		handlers.Annotations{"someannotation": filter.Present})
	handlers.OnCreate(kex, "create_with_annotations_absent", logging("Annotation is absent."),
		handlers.Annotations{"nonexistent": filter.Absent})
	handlers.OnCreate(kex, "create_with_annotations_callback_matching", logging("Annotation callback mismatch."),
		handlers.Annotations{"someannotation": filter.Check(isSomeValue)}, handlers.When(fieldIsUnlikely))

	// Arbitrary conditions on the object and the cause.
	handlers.OnCreate(kex, "create_with_filter_satisfied", logging("Filter satisfied."),
		handlers.When(func(object, change) bool { return true }))
	handlers.OnCreate(kex, "create_with_filter_not_satisfied", logging("Filter not satisfied."),
		handlers.When(func(object, change) bool { return false }))

	// A field's value and presence; the ids get the suffix "/spec.field"
	// (and "/spec.inexistent"), as in Kopf.
	handlers.OnCreate(kex, "create_with_field_value_satisfied", logging("Field value is satisfied."),
		handlers.Field("spec.field"), handlers.Value(filter.Equals("value")))
	handlers.OnCreate(kex, "create_with_field_value_not_satisfied", logging("Field value is not satisfied."),
		handlers.Field("spec.field"), handlers.Value(filter.Equals("something-else")))
	handlers.OnCreate(kex, "create_with_field_presence_satisfied", logging("Field presence is satisfied."),
		handlers.Field("spec.field"), handlers.Value(filter.Present))
	handlers.OnCreate(kex, "create_with_field_presence_not_satisfied", logging("Field presence is not satisfied."),
		handlers.Field("spec.inexistent"), handlers.Value(filter.Present))

	// A field's change from one value to another.
	handlers.OnUpdate(kex, "update_with_field_change_satisfied", logging("Field change is satisfied."),
		handlers.Field("spec.field"), handlers.ValueBefore(filter.Equals("value")), handlers.ValueAfter(filter.Equals("changed")))

	// A daemon that runs only while the field has the value: it is stopped
	// when the field changes.
	handlers.Daemon(kex, "daemon_with_field", daemonWithField,
		handlers.Field("spec.field"), handlers.Value(filter.Equals("value")))

	handlers.Main(reg, handlers.RunOptions{})
}

// logging returns a handler that logs one line and succeeds.
func logging(line string) handlers.ChangeFunc[object] {
	return func(ctx context.Context, obj object, c change) (any, error) {
		logr.FromContextOrDiscard(ctx).Info(line)
		return nil, nil
	}
}

// isSomeValue is the value half of Kopf's callbacks say_yes and say_no. A
// kopf-go Check sees only the label's or annotation's value; the half that
// looks at the spec is a When filter (fieldIsSet, fieldIsUnlikely), and
// all filters must match.
func isSomeValue(value any) bool { return value == "somevalue" }

// fieldIsSet is the spec half of say_yes.
func fieldIsSet(obj object, c change) bool { return field(obj) != nil }

// fieldIsUnlikely is the spec half of say_no.
func fieldIsUnlikely(obj object, c change) bool { return field(obj) == "not-this-value-for-sure" }

// field returns spec.field, nil if it is absent.
func field(obj object) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "field")
	return v
}

// daemonWithField logs every second until it is asked to stop: when the
// object is deleted, or its spec.field is no longer "value".
func daemonWithField(ctx context.Context, obj object, d *cause.Daemon) (any, error) {
	log := logr.FromContextOrDiscard(ctx)
	for {
		log.Info("Field daemon is satisfied.")
		if !d.Sleep(ctx, time.Second) {
			return nil, nil
		}
	}
}
