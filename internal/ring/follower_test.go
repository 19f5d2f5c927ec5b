package ring

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/sharding"
)

// The assigner records a stop only while every member's Lease says that
// its version follows the rule (a member never seen counts as one that
// does not): a member of an earlier version would adopt otherwise.
func TestTheFollowerTellsTheMembersThatDoNotFollowTheRuleOfStops(t *testing.T) {
	s, err := AssignerSettings{Ring: "main", Namespace: "ops", Identity: identity, Kinds: configMaps,
		Clock: clocktesting.NewFakeClock(time.Now())}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{a: &Assigner{s: s}, live: sharding.NewLiveness(s.LeaseDuration), changed: make(chan struct{}, 1),
		released: map[string]release{}, stopping: map[string]bool{}, stopsHold: map[string]bool{}}
	lease := func(member string, annotations map[string]string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName("main", member), ResourceVersion: "1", Annotations: annotations}}
	}
	f.seen(lease("m-new", map[string]string{RulesAnnotation: "other, " + RuleStopsHold}))
	f.seen(lease("m-old", nil))
	members := []string{"m-new", "m-old", "m-unseen"}
	if got := f.unawareAmong(members); !slices.Equal(got, []string{"m-old", "m-unseen"}) {
		t.Errorf("unaware = %v, want m-old and m-unseen", got)
	}
	// m-old's replica is replaced by this version under its Lease.
	f.seen(lease("m-old", map[string]string{RulesAnnotation: RuleStopsHold}))
	if got := f.unawareAmong(members); !slices.Equal(got, []string{"m-unseen"}) {
		t.Errorf("unaware after the upgrade = %v, want m-unseen", got)
	}

	e1, _ := sharding.Epoch{}.Next([]string{"m-new", "m-old"}, nil, nil, nil)
	if e, _ := e1.Next([]string{"m-new", "m-old"}, []string{"m-new"}, nil, f.unawareAmong([]string{"m-new", "m-old"})); e.Stopped["m-new"] != e.Serial {
		t.Errorf("a stop beside members that all follow the rule is not recorded: %v", e.Stopped)
	}
	f.seen(lease("m-old", nil)) // rolled back
	if e, _ := e1.Next([]string{"m-new", "m-old"}, []string{"m-new"}, nil, f.unawareAmong([]string{"m-new", "m-old"})); e.Stopped != nil {
		t.Errorf("a stop beside a member of an earlier version is recorded: %v", e.Stopped)
	}
}
