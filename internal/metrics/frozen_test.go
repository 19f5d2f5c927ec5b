package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// toggle is a frozen state of its own (a pointer: states compare by identity).
type toggle struct{ frozen bool }

func (t *toggle) Frozen() (bool, string) { return t.frozen, "" }

// identities are the operators the frozen collector reports now.
func identities(t *testing.T) []string {
	t.Helper()
	r := prometheus.NewPedanticRegistry()
	r.MustRegister(frozen)
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == LabelIdentity {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	return out
}

// TestFrozenEntriesGo: an operator's entry goes when it unwatches (stops),
// and an earlier operator of the same identity does not take a later one's.
func TestFrozenEntriesGo(t *testing.T) {
	a, b, again := &toggle{}, &toggle{}, &toggle{}
	var unwatchA, unwatchB, unwatchAgain func()
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"two operators run", func() { unwatchA, unwatchB = WatchFrozen("test-a", a), WatchFrozen("test-b", b) }, []string{"test-a", "test-b"}},
		{"one stops", func() { unwatchB() }, []string{"test-a"}},
		{"the same identity runs again", func() { unwatchAgain = WatchFrozen("test-a", again) }, []string{"test-a"}},
		{"the earlier one stops late", func() { unwatchA() }, []string{"test-a"}},
		{"the later one stops", func() { unwatchAgain() }, []string{}},
	}
	for _, s := range steps {
		s.do()
		if diff := cmp.Diff(s.want, identities(t)); diff != "" {
			t.Errorf("%s: identities -want +got:\n%s", s.name, diff)
		}
	}
}
