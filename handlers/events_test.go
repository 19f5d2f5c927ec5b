package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/posting"
)

// postAll runs fn with a started poster in its context, as the engine
// gives handlers, stops the poster (which posts everything queued) and
// returns the Events as type/reason/message/involved name.
func postAll(t *testing.T, settings posting.Settings, fn func(ctx context.Context)) []string {
	t.Helper()
	defer goleak.VerifyNone(t)
	c := fake.NewClientBuilder().Build()
	p := &posting.Poster{Client: c, Settings: settings}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	fn(posting.NewContext(context.Background(), p))
	cancel()
	wg.Wait()
	var list corev1.EventList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, strings.Join([]string{ev.Type, ev.Reason, ev.Message, ev.InvolvedObject.Name}, "/"))
	}
	return out
}

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

type QuotaError struct{}

func (*QuotaError) Error() string { return "over quota" }

func TestEventFunctions(t *testing.T) {
	got := postAll(t, posting.Settings{}, func(ctx context.Context) {
		handlers.PostEvent(ctx, cm("a"), "SomeType", "SomeReason", "m1")
		handlers.PostInfo(ctx, cm("a"), "Created", "m2")
		handlers.PostWarning(ctx, cm("a"), "Slow", "m3")
		handlers.PostException(ctx, cm("a"), "Failed", "m4", fmt.Errorf("call: %w", &QuotaError{}))
		handlers.PostException(ctx, cm("a"), "", "m5", &QuotaError{})
		handlers.PostException(ctx, cm("a"), "", "", nil)
		handlers.PostInfo(ctx, handlers.Objects{cm("b"), cm("c")}, "Linked", "m6")
		handlers.PostInfo(ctx, &corev1.ConfigMapList{Items: []corev1.ConfigMap{*cm("d")}}, "Listed", "m7")
	})
	want := []string{
		"SomeType/SomeReason/m1/a",
		"Normal/Created/m2/a",
		"Warning/Slow/m3/a",
		"Error/Failed/m4 call: over quota/a",
		"Error/QuotaError/m5 over quota/a",
		"Error/Error//a",
		"Normal/Linked/m6/b",
		"Normal/Linked/m6/c",
		"Normal/Listed/m7/d",
	}
	if diff := cmp.Diff(want, sortedAsPosted(got, want)); diff != "" {
		t.Errorf("events -want +got:\n%s", diff)
	}
}

// sortedAsPosted orders got like want when they hold the same items (the
// fake client lists by generated name, not by creation).
func sortedAsPosted(got, want []string) []string {
	counts := map[string]int{}
	for _, g := range got {
		counts[g]++
	}
	var out []string
	for _, w := range want {
		if counts[w] > 0 {
			counts[w]--
			out = append(out, w)
		}
	}
	for g, n := range counts {
		for range n {
			out = append(out, g)
		}
	}
	return out
}

// TestEventGates: the same gates for all four functions.
func TestEventGates(t *testing.T) {
	all := func(ctx context.Context) {
		handlers.PostEvent(ctx, cm("a"), "Normal", "R", "event")
		handlers.PostInfo(ctx, cm("a"), "R", "info")
		handlers.PostWarning(ctx, cm("a"), "R", "warn")
		handlers.PostException(ctx, cm("a"), "R", "exception", nil)
	}
	tests := []struct {
		name     string
		settings posting.Settings
		want     []string
	}{
		{"defaults", posting.Settings{}, []string{"Normal/R/event/a", "Normal/R/info/a", "Warning/R/warn/a", "Error/R/exception/a"}},
		{"warning", posting.Settings{Level: posting.LevelWarning}, []string{"Warning/R/warn/a", "Error/R/exception/a"}},
		{"error", posting.Settings{Level: posting.LevelError}, []string{"Error/R/exception/a"}},
		{"disabled", posting.Settings{Disabled: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := postAll(t, tt.settings, all)
			if diff := cmp.Diff(tt.want, sortedAsPosted(got, tt.want)); diff != "" {
				t.Errorf("events -want +got:\n%s", diff)
			}
		})
	}
}

// TestEventWithoutPoster: outside the engine, posting does nothing and
// says so.
func TestEventWithoutPoster(t *testing.T) {
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx := logr.NewContext(context.Background(), log)
	handlers.PostInfo(ctx, cm("a"), "R", "m")
	if len(lines) != 1 || !strings.Contains(lines[0], "the context has no poster") {
		t.Errorf("logged %q, want one line about the missing poster", lines)
	}
	handlers.PostWarning(context.Background(), cm("a"), "R", "m") // no logger either: no panic
}

// TestEventBadObject: an object without a kind is logged, not posted.
func TestEventBadObject(t *testing.T) {
	got := postAll(t, posting.Settings{}, func(ctx context.Context) {
		var lines []string
		log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
		ctx = logr.NewContext(ctx, log)
		handlers.PostInfo(ctx, handlers.Objects{&unstructured.Unstructured{Object: map[string]any{}}, cm("ok")}, "R", "m")
		if len(lines) != 1 || !strings.Contains(lines[0], "Failed to post an event") {
			t.Errorf("logged %q, want the failure", lines)
		}
	})
	if diff := cmp.Diff([]string{"Normal/R/m/ok"}, got); diff != "" {
		t.Errorf("events -want +got:\n%s", diff)
	}
}
