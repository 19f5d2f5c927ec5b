package engine

import "testing"

// The finalizer is read by users, tools and Python Kopf: renaming it
// breaks them (and a takeover of Kopf's objects), so it is pinned here.
func TestWireNames(t *testing.T) {
	if DefaultFinalizer != "kopf.zalando.org/KopfFinalizerMarker" {
		t.Errorf("the default finalizer %q changed", DefaultFinalizer)
	}
}
