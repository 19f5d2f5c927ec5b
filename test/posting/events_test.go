package posting

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/posting"
)

// QuotaError is an error type whose name becomes the reason.
type QuotaError struct{}

func (*QuotaError) Error() string { return "over quota" }

// TestKopfFields: the four functions post Events with every field Kopf
// sets, about an unstructured custom object and a typed ConfigMap whose
// kind comes from the scheme.
func TestKopfFields(t *testing.T) {
	ns := namespace(t).Name
	kex := example(t, ns, "kex1")
	cm := configMap(t, ns, "cm1")
	before := time.Now().Add(-time.Second)
	withPoster(t, &posting.Poster{}, func(ctx context.Context) {
		for _, obj := range []client.Object{kex, cm} {
			handlers.PostEvent(ctx, obj, "SomeType", "SomeReason", "some message")
			handlers.PostInfo(ctx, obj, "InfoReason", "info message")
			handlers.PostWarning(ctx, obj, "WarnReason", "warn message")
			handlers.PostException(ctx, obj, "", "failed:", &QuotaError{})
		}
	})
	wantSummary := []string{"SomeType/SomeReason/some message", "Normal/InfoReason/info message",
		"Warning/WarnReason/warn message", "Error/QuotaError/failed: over quota"}
	for _, tt := range []struct {
		uid      types.UID
		involved corev1.ObjectReference
	}{
		{kex.GetUID(), corev1.ObjectReference{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Name: "kex1", Namespace: ns, UID: kex.GetUID()}},
		{cm.GetUID(), corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm1", Namespace: ns, UID: cm.GetUID()}},
	} {
		events := eventsAbout(t, ns, tt.uid)
		if diff := cmp.Diff(wantSummary, summary(events)); diff != "" {
			t.Errorf("events about %s -want +got:\n%s", tt.involved.Kind, diff)
		}
		for _, ev := range events {
			if diff := cmp.Diff(tt.involved, ev.InvolvedObject); diff != "" {
				t.Errorf("involvedObject -want +got:\n%s", diff)
			}
			if ev.GenerateName != "kopf-event-" || !strings.HasPrefix(ev.Name, "kopf-event-") || ev.Namespace != ns {
				t.Errorf("event %s/%s, generateName %q; want kopf-event-… in %s", ev.Namespace, ev.Name, ev.GenerateName, ns)
			}
			if ev.Source.Component != "kopf" || ev.ReportingController != "kopf" || ev.ReportingInstance != "dev" || ev.Action != "Action?" {
				t.Errorf("source %q, reportingComponent %q, reportingInstance %q, action %q; want kopf, kopf, dev, Action?",
					ev.Source.Component, ev.ReportingController, ev.ReportingInstance, ev.Action)
			}
			for name, ts := range map[string]time.Time{"firstTimestamp": ev.FirstTimestamp.Time,
				"lastTimestamp": ev.LastTimestamp.Time, "eventTime": ev.EventTime.Time} {
				if ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
					t.Errorf("%s = %v, want the time of posting", name, ts)
				}
			}
		}
	}
}

// TestSeveralObjects: one call posts about each object of Objects or a list.
func TestSeveralObjects(t *testing.T) {
	ns := namespace(t).Name
	a, b := configMap(t, ns, "a"), configMap(t, ns, "b")
	kex := example(t, ns, "kex")
	var list corev1.ConfigMapList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var ulist unstructured.UnstructuredList
	ulist.SetAPIVersion("kopf.dev/v1")
	ulist.SetKind("KopfExampleList")
	if err := env.Client.List(context.Background(), &ulist); err != nil {
		t.Fatal(err)
	}
	withPoster(t, &posting.Poster{}, func(ctx context.Context) {
		handlers.PostInfo(ctx, handlers.Objects{a, kex}, "Together", "m")
		handlers.PostWarning(ctx, &list, "Listed", "typed list")
		handlers.PostWarning(ctx, &ulist, "Listed", "unstructured list")
	})
	for obj, want := range map[string][]string{
		"a":   {"Normal/Together/m", "Warning/Listed/typed list"},
		"b":   {"Warning/Listed/typed list"},
		"kex": {"Normal/Together/m", "Warning/Listed/unstructured list"},
	} {
		uid := map[string]types.UID{"a": a.UID, "b": b.UID, "kex": kex.GetUID()}[obj]
		if diff := cmp.Diff(want, summary(eventsAbout(t, ns, uid))); diff != "" {
			t.Errorf("events about %s -want +got:\n%s", obj, diff)
		}
	}
}

// TestLongMessages: messages over 1024 bytes are cut in the middle, as Kopf
// does for ASCII, and by bytes for other text, which the API server would
// reject otherwise.
func TestLongMessages(t *testing.T) {
	ns := namespace(t).Name
	cm := configMap(t, ns, "long")
	ascii := "start-" + strings.Repeat("x", 2000) + "-end"
	accented := strings.Repeat("é", 700) // 1400 bytes, 700 characters
	withPoster(t, &posting.Poster{}, func(ctx context.Context) {
		handlers.PostInfo(ctx, cm, "Long", ascii)
		handlers.PostInfo(ctx, cm, "Accented", accented)
		handlers.PostInfo(ctx, cm, "Exact", strings.Repeat("y", 1024))
	})
	events := eventsAbout(t, ns, cm.UID)
	if len(events) != 3 {
		t.Fatalf("%d events, want 3 (Long, Accented, Exact)", len(events))
	}
	want := ascii[:511] + "..." + ascii[len(ascii)-510:]
	if events[0].Message != want || len(events[0].Message) != 1024 {
		t.Errorf("message of %d bytes, want Kopf's cut: 511 bytes, ..., 510 bytes", len(events[0].Message))
	}
	head, tail, ok := strings.Cut(events[1].Message, "...")
	if !ok || len(events[1].Message) > 1024 || !strings.HasPrefix(accented, head) || !strings.HasSuffix(accented, tail) {
		t.Errorf("accented message of %d bytes, want it cut in the middle to 1024 bytes at most", len(events[1].Message))
	}
	if events[2].Message != strings.Repeat("y", 1024) {
		t.Errorf("a message of exactly 1024 bytes was changed")
	}
}

// TestNoEventsAboutEvents: Events about core v1 Events are dropped.
func TestNoEventsAboutEvents(t *testing.T) {
	ns := namespace(t).Name
	cm := configMap(t, ns, "cm")
	withPoster(t, &posting.Poster{}, func(ctx context.Context) {
		handlers.PostInfo(ctx, cm, "First", "m")
	})
	first := eventsAbout(t, ns, cm.UID)
	if len(first) != 1 {
		t.Fatalf("%d events, want 1", len(first))
	}
	typed := first[0]
	typed.TypeMeta = metav1.TypeMeta{}
	untyped := &unstructured.Unstructured{}
	untyped.SetAPIVersion("v1")
	untyped.SetKind("Event")
	untyped.SetNamespace(ns)
	untyped.SetName(typed.Name)
	untyped.SetUID(typed.UID)
	withPoster(t, &posting.Poster{}, func(ctx context.Context) {
		handlers.PostInfo(ctx, &typed, "AboutEvent", "typed")
		handlers.PostWarning(ctx, untyped, "AboutEvent", "unstructured")
	})
	if got := eventsAbout(t, ns, typed.UID); len(got) != 0 {
		t.Errorf("events about an event were posted: %v", summary(got))
	}
}

// TestClusterScoped: Events about cluster-scoped objects go to the
// "default" namespace (or the poster's), with the object's empty namespace
// where the API server allows it.
func TestClusterScoped(t *testing.T) {
	target := namespace(t) // a Namespace object is cluster-scoped
	own := namespace(t).Name
	withPoster(t, &posting.Poster{}, func(ctx context.Context) {
		handlers.PostInfo(ctx, target, "Cluster", "in default")
	})
	withPoster(t, &posting.Poster{DefaultNamespace: own}, func(ctx context.Context) {
		handlers.PostInfo(ctx, target, "Cluster", "in the operator's namespace")
	})
	want := corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: target.Name, UID: target.UID}
	inDefault := eventsAbout(t, "default", target.UID)
	if len(inDefault) != 1 || inDefault[0].Message != "in default" {
		t.Fatalf("events in default: %v, want one", summary(inDefault))
	}
	if diff := cmp.Diff(want, inDefault[0].InvolvedObject); diff != "" {
		t.Errorf("involvedObject -want +got:\n%s", diff)
	}
	inOwn := eventsAbout(t, own, target.UID)
	want.Namespace = own // elsewhere, the API server wants it, as Kopf always sets it
	if len(inOwn) != 1 {
		t.Fatalf("events in %s: %v, want one", own, summary(inOwn))
	}
	if diff := cmp.Diff(want, inOwn[0].InvolvedObject); diff != "" {
		t.Errorf("involvedObject -want +got:\n%s", diff)
	}
}

// TestGates: Disabled and Level apply to all four functions alike.
func TestGates(t *testing.T) {
	tests := []struct {
		name     string
		settings posting.Settings
		want     []string
	}{
		{"defaults", posting.Settings{}, []string{"Normal/E/event", "Normal/I/info", "Warning/W/warn", "Error/X/exception boom"}},
		{"level warning", posting.Settings{Level: posting.LevelWarning}, []string{"Warning/W/warn", "Error/X/exception boom"}},
		{"level error", posting.Settings{Level: posting.LevelError}, []string{"Error/X/exception boom"}},
		{"level debug", posting.Settings{Level: posting.LevelDebug}, []string{"Debug/D/debug", "Normal/E/event", "Normal/I/info",
			"Warning/W/warn", "Error/X/exception boom"}},
		{"disabled", posting.Settings{Disabled: true}, nil},
	}
	ns := namespace(t).Name
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := configMap(t, ns, "gates-"+string(rune('a'+i)))
			withPoster(t, &posting.Poster{Settings: tt.settings}, func(ctx context.Context) {
				handlers.PostEvent(ctx, cm, posting.TypeDebug, "D", "debug")
				handlers.PostEvent(ctx, cm, posting.TypeNormal, "E", "event")
				handlers.PostInfo(ctx, cm, "I", "info")
				handlers.PostWarning(ctx, cm, "W", "warn")
				handlers.PostException(ctx, cm, "X", "exception", errors.New("boom"))
			})
			if diff := cmp.Diff(tt.want, summary(eventsAbout(t, ns, cm.UID))); diff != "" {
				t.Errorf("events -want +got:\n%s", diff)
			}
		})
	}
}

// TestLogsAsEvents: handler log lines become Events only with Loggers on,
// with reason Logging; local lines never do.
func TestLogsAsEvents(t *testing.T) {
	ns := namespace(t).Name
	tests := []struct {
		name     string
		settings posting.Settings
		want     []string
	}{
		{"off by default", posting.Settings{}, nil},
		{"loggers", posting.Settings{Loggers: true}, []string{
			"Normal/Logging/Handler 'create_fn' succeeded.", "Error/Logging/Handler 'create_fn' failed temporarily: not yet"}},
		{"loggers at warning", posting.Settings{Loggers: true, Level: posting.LevelWarning}, []string{
			"Error/Logging/Handler 'create_fn' failed temporarily: not yet"}},
		{"loggers but disabled", posting.Settings{Loggers: true, Disabled: true}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kex := example(t, ns, "logs-"+string(rune('a'+i)))
			p := &posting.Poster{Settings: tt.settings}
			ref, err := posting.RefOf(kex, nil)
			if err != nil {
				t.Fatal(err)
			}
			withPoster(t, p, func(context.Context) {
				log := posting.Logger(logr.Discard(), p, ref)
				log.Info("Handler 'create_fn' succeeded.")
				log.V(1).Info("A debug line.")
				log.Error(errors.New("not yet"), "Handler 'create_fn' failed temporarily:")
				posting.Local(log).Info("Adding the finalizer, thus preventing the actual deletion.")
			})
			if diff := cmp.Diff(tt.want, summary(eventsAbout(t, ns, kex.GetUID()))); diff != "" {
				t.Errorf("events -want +got:\n%s", diff)
			}
		})
	}
}
