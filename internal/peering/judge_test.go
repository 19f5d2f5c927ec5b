package peering

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/freeze"
)

// logs is a logr sink that keeps the messages, errors marked as such.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) Init(logr.RuntimeInfo)          {}
func (l *logs) Enabled(int) bool               { return true }
func (l *logs) WithValues(...any) logr.LogSink { return l }
func (l *logs) WithName(string) logr.LogSink   { return l }
func (l *logs) Info(_ int, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, msg)
}
func (l *logs) Error(err error, msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, "ERROR "+msg+": "+err.Error())
}

// statusOf reads a peering object's status from the fake cluster.
func statusOf(t *testing.T, p *Peering, tg Target) map[string]any {
	t.Helper()
	u, err := p.dyn.Resource(tg.Resource()).Namespace(tg.Namespace).Get(context.Background(), tg.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the peering object: %v", err)
	}
	// Through JSON, so that numbers compare as asTree's do.
	return asTree(t, mustJSON(t, u.Object["status"]))
}

// asTree turns JSON into the generic form the fake cluster stores.
func asTree(t *testing.T, s string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return out
}

func TestWatcherJudge(t *testing.T) {
	const (
		selfRecord = `"self": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}`
		higher     = `"higher": {"priority": 200, "lifetime": 60, "lastseen": "2020-12-31T23:59:29.123456+00:00"}`
		same       = `"same": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:09.123456+00:00"}`
		lower      = `"lower": {"priority": 50, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}`
		dead       = `"dead": {"priority": 200, "lifetime": 60, "lastseen": "2020-12-31T23:58:59.123456+00:00"}`
	)
	higherPeer := "<Peer higher: priority=200, lifetime=60, lastseen='2020-12-31T23:59:29.123456+00:00'>"
	samePeer := "<Peer same: priority=100, lifetime=60, lastseen='2020-12-31T23:59:09.123456+00:00'>"
	selfPeer := "<Peer self: priority=100, lifetime=60, lastseen='2020-12-31T23:59:59.123456+00:00'>"
	tests := []struct {
		name string
		mode Mode
		// frozen and present: the watcher's state before this look.
		frozen, present bool
		// status of the peering object; absent if "".
		status     string
		wantFrozen bool
		wantReason string
		wantWake   time.Time
		wantLogs   []string
		// wantStatus is the object's status afterwards (JSON).
		wantStatus string
	}{
		{
			name:       "absent object, automatic: not frozen",
			mode:       ModeAuto,
			frozen:     true,
			wantFrozen: false,
		},
		{
			name:       "absent object, mandatory: frozen",
			mode:       ModeMandatory,
			wantFrozen: true,
			wantReason: "the peering object 'default' cluster-wide does not exist",
		},
		{
			name:       "an appearing object gets this operator's record at once",
			status:     `{` + lower + `}`,
			wantLogs:   []string{"Keep-alive in 'default' cluster-wide: ok."},
			wantStatus: `{` + lower + `, ` + selfRecord + `}`,
		},
		{
			name:       "a known object is not touched again",
			present:    true,
			status:     `{` + lower + `}`,
			wantStatus: `{` + lower + `}`,
		},
		{
			name:       "a higher priority peer pauses",
			present:    true,
			status:     `{` + higher + `, ` + lower + `, ` + selfRecord + `}`,
			wantFrozen: true,
			wantReason: "in favour of [" + higherPeer + "]",
			wantWake:   now.Add(30 * time.Second),
			wantLogs:   []string{"Pausing operations in favour of [" + higherPeer + "]."},
			wantStatus: `{` + higher + `, ` + lower + `, ` + selfRecord + `}`,
		},
		{
			name:       "a higher priority peer keeps paused without logging again",
			present:    true,
			frozen:     true,
			status:     `{` + higher + `}`,
			wantFrozen: true,
			wantReason: "in favour of [" + higherPeer + "]",
			wantWake:   now.Add(30 * time.Second),
			wantStatus: `{` + higher + `}`,
		},
		{
			name:       "a same priority peer pauses all",
			present:    true,
			status:     `{` + same + `, ` + selfRecord + `}`,
			wantFrozen: true,
			wantReason: "conflicting operators with the same priority [" + samePeer + "]",
			wantWake:   now.Add(10 * time.Second),
			wantLogs: []string{
				"Possibly conflicting operators with the same priority: [" + samePeer + "].",
				"Pausing all operators, including self: [" + samePeer + ", " + selfPeer + "]",
			},
			wantStatus: `{` + same + `, ` + selfRecord + `}`,
		},
		{
			name:       "a same priority peer warns again while paused",
			present:    true,
			frozen:     true,
			status:     `{` + same + `}`,
			wantFrozen: true,
			wantReason: "conflicting operators with the same priority [" + samePeer + "]",
			wantWake:   now.Add(10 * time.Second),
			wantLogs:   []string{"Possibly conflicting operators with the same priority: [" + samePeer + "]."},
			wantStatus: `{` + same + `}`,
		},
		{
			name:       "resumes when the conflicts are gone",
			present:    true,
			frozen:     true,
			status:     `{` + lower + `, ` + selfRecord + `}`,
			wantLogs:   []string{"Resuming operations after the pause. Conflicting operators with the same priority are gone."},
			wantStatus: `{` + lower + `, ` + selfRecord + `}`,
		},
		{
			name:       "dead peers are removed and do not pause",
			present:    true,
			status:     `{` + dead + `, ` + selfRecord + `}`,
			wantStatus: `{` + selfRecord + `}`,
		},
		{
			name:       "mandatory: an object without conflicts unfreezes",
			mode:       ModeMandatory,
			present:    true,
			frozen:     true,
			status:     `{}`,
			wantLogs:   []string{"Resuming operations after the pause. Conflicting operators with the same priority are gone."},
			wantStatus: `{}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := Target{Name: "default"}
			var objects []runtime.Object
			var obj map[string]any
			if tt.status != "" {
				obj = asTree(t, `{"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"}, "status": `+tt.status+`}`)
				objects = append(objects, peeringObject(t, mustJSON(t, obj)))
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{clusterGVR: "ClusterKopfPeeringList"}, objects...)
			sink := &logs{}
			toggle := &freeze.Toggle{}
			p := &Peering{
				s: Settings{Mode: tt.mode, Name: "default", Priority: 100, Lifetime: DefaultLifetime, Identity: "self",
					Clock: clocktesting.NewFakeClock(now), Logger: logr.New(sink)},
				dyn:    dyn,
				toggle: toggle,
			}
			w := &watcher{p: p, t: tg, frozen: tt.frozen, present: tt.present}
			if tt.frozen {
				toggle.Set(tg.blocker(), true, "before")
			}

			var wake time.Time
			if obj == nil {
				wake = w.judge(context.Background(), nil)
			} else {
				wake = w.judge(context.Background(), peeringObject(t, mustJSON(t, obj)))
			}

			frozen, reason := toggle.Frozen()
			if frozen != tt.wantFrozen || w.frozen != tt.wantFrozen {
				t.Errorf("frozen = %v (watcher: %v), want %v", frozen, w.frozen, tt.wantFrozen)
			}
			if diff := cmp.Diff(tt.wantReason, reason); diff != "" {
				t.Errorf("reason mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWake, wake); diff != "" {
				t.Errorf("wake mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLogs, sink.msgs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("logs mismatch (-want +got):\n%s", diff)
			}
			if w.present != (obj != nil) {
				t.Errorf("present = %v, want %v", w.present, obj != nil)
			}
			if tt.wantStatus != "" {
				if diff := cmp.Diff(asTree(t, tt.wantStatus), statusOf(t, p, tg), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("stored status mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return string(raw)
}
