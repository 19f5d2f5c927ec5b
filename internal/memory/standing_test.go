package memory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/memo"
)

// fakeGauge is a gauge that remembers its value.
type fakeGauge struct{ value float64 }

func (g *fakeGauge) Add(v float64) { g.value += v }

// TestStandingGauges follows objects through cycles, forgetting and
// re-creation, and checks that the gauges count each object once, and
// none once they are gone or the operator has stopped.
func TestStandingGauges(t *testing.T) {
	retrying := execution.Standing{Retrying: true}
	failed := execution.Standing{Failed: true}
	both := execution.Standing{Retrying: true, Failed: true}
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	type counts struct{ Retrying, Failed float64 }
	type step struct {
		name string
		do   func(m *Store)
		want counts
	}
	stand := func(uid types.UID, key types.NamespacedName, s execution.Standing) func(m *Store) {
		return func(m *Store) { m.Stand(m.Recall(uid, key), s) }
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a retry, then a success", []step{
			{"retrying", stand("a1", a, retrying), counts{Retrying: 1}},
			{"still retrying", stand("a1", a, retrying), counts{Retrying: 1}},
			{"recovered", stand("a1", a, execution.Standing{}), counts{}},
		}},
		{"a failure until a later cause is handled", []step{
			{"failed", stand("a1", a, failed), counts{Failed: 1}},
			{"the next cause retries", stand("a1", a, retrying), counts{Retrying: 1}},
			{"and fails too", stand("a1", a, both), counts{Retrying: 1, Failed: 1}},
			{"then succeeds", stand("a1", a, execution.Standing{}), counts{}},
		}},
		{"two objects", []step{
			{"a fails", stand("a1", a, failed), counts{Failed: 1}},
			{"b fails", stand("b1", b, both), counts{Retrying: 1, Failed: 2}},
			{"a is gone", func(m *Store) { m.Forget(a) }, counts{Retrying: 1, Failed: 1}},
			{"b is gone", func(m *Store) { m.Forget(b) }, counts{}},
			{"b is forgotten twice", func(m *Store) { m.Forget(b) }, counts{}},
		}},
		{"a cycle of a forgotten object counts nothing", []step{
			{"failed", stand("a1", a, failed), counts{Failed: 1}},
			{"gone while a cycle runs", func(m *Store) {
				mem := m.Recall("a1", a)
				m.Forget(a)
				m.Stand(mem, both)
			}, counts{}},
		}},
		{"a re-created object replaces the old one", []step{
			{"the old one failed", stand("a1", a, failed), counts{Failed: 1}},
			{"the new one is noticed", func(m *Store) { m.Notice("a2", a, false) }, counts{}},
			{"the new one retries", stand("a2", a, retrying), counts{Retrying: 1}},
		}},
		{"the operator stops", []step{
			{"a retries", stand("a1", a, retrying), counts{Retrying: 1}},
			{"b fails", stand("b1", b, failed), counts{Retrying: 1, Failed: 1}},
			{"released", func(m *Store) { m.Release() }, counts{}},
			{"released twice", func(m *Store) { m.Release() }, counts{}},
			{"a late cycle", stand("a1", a, both), counts{}},
			{"a late forget", func(m *Store) { m.Forget(b) }, counts{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, f := &fakeGauge{}, &fakeGauge{}
			m := NewStore(&memo.Memo{}, r, f, nil)
			for _, st := range tt.steps {
				st.do(m)
				if diff := cmp.Diff(st.want, counts{r.value, f.value}); diff != "" {
					t.Errorf("after %q -want +got:\n%s", st.name, diff)
				}
			}
		})
	}
}
