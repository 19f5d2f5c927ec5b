package scopes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestServedFollowsChanges(t *testing.T) {
	s := ServeNames([]string{"b", "a", "b"})
	names, changed := s.Now()
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("Now() -want +got:\n%s", diff)
	}
	if s.Set([]string{"b", "a"}) {
		t.Error("Set() of the same namespaces = true, want no change")
	}
	select {
	case <-changed:
		t.Fatal("the channel is closed without a change")
	default:
	}
	if !s.Set([]string{"a"}) {
		t.Error("Set() of fewer namespaces = false, want a change")
	}
	<-changed // closed, or the test hangs
	names, next := s.Now()
	if diff := cmp.Diff([]string{"a"}, names); diff != "" {
		t.Errorf("Now() after the change -want +got:\n%s", diff)
	}
	if next == changed {
		t.Error("Now() gives the closed channel again")
	}
	if !s.Set(nil) {
		t.Error("Set(nil) after one namespace = false, want a change")
	}
	if names, _ := s.Now(); len(names) != 0 {
		t.Errorf("Now() = %q, want none", names)
	}
}

func TestServeAllNeverChanges(t *testing.T) {
	s := ServeAll()
	if !s.All() {
		t.Error("All() = false")
	}
	if s.Set([]string{"a"}) {
		t.Error("Set() on the whole cluster = true, want no change")
	}
	if names, _ := s.Now(); names != nil {
		t.Errorf("Now() = %q, want nil", names)
	}
}

func TestServeLaterIsKnownAtItsFirstSet(t *testing.T) {
	s := ServeLater()
	if s.Known() {
		t.Fatal("Known() = true before any Set")
	}
	_, changed := s.Now()
	if !s.Set(nil) {
		t.Error("the first Set(nil) = false, want a change: the set is known now")
	}
	<-s.Ready()
	<-changed
	if s.Set(nil) {
		t.Error("a second Set(nil) = true, want no change")
	}
}
