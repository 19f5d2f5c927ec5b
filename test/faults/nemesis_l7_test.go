package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/faults/faultlog"
	"github.com/kopf-go/kopf/test/faults/proxy"
)

// The nemeses of one class of a replica's requests, through its L7
// proxy: the rest of its connection (one HTTP/2 connection, which
// client-go multiplexes every request over) goes on.

// The classes of requests they stall or hold.
var (
	// leaseWatches are the watches of Leases: the ring's members and
	// epoch, which every member follows.
	leaseWatches = proxy.Watches("coordination.k8s.io", "leases")
	// shareWatches are the watches of the sharded kind selected by the
	// member's own name (its share), not the assigner's watch of the
	// objects without a live owner (selected by "notin").
	shareWatches proxy.Class = func(r proxy.Request) bool {
		return proxy.Watches("kopf.dev", "kopfexamples")(r) && !strings.Contains(r.Query.Get("labelSelector"), "notin")
	}
	// objectWrites are the writes to the sharded kind's objects.
	objectWrites = proxy.Writes("kopf.dev", "kopfexamples")
	// leaseWrites are the writes to Leases: renewals, joins, the
	// assigner's election and its deletions.
	leaseWrites = proxy.Writes("coordination.k8s.io", "leases")
)

// stallWatch stalls the member's watches of the class for hold, then
// heals; kind is the fault's. If touch, it changes the member's objects
// at the start, so that their watch has events to withhold. A stall
// that withheld nothing tested nothing, and is not injected.
func (r *ring) stallWatch(ctx context.Context, m *member, kind string, class proxy.Class, hold time.Duration, touch bool) error {
	objects := m.activeOn(pickWindow)
	id := r.begin(ctx, faultlog.Entry{Kind: kind, Replica: m.PodID(), Actor: m.Actor(), Note: "slow " + m.slow.String()})
	m.l7.Stall(class)
	touched := 0
	if touch {
		touched = r.touch(ctx, objects)
	}
	sleep(ctx, hold)
	f := m.l7.Unstall()
	r.log.End(id, fmt.Sprintf("healed; %d objects changed meanwhile; %d bytes withheld on %d streams at the heal", touched, f.Bytes, f.Streams))
	if f.Streams == 0 {
		return notInjected(errors.New("the stall withheld nothing"))
	}
	return nil
}

// writeDelayed holds the member's writes to its objects at its L7 proxy
// for hold (longer than a lease), then delivers them upstream in the
// order they came, whether or not the member still waits for them. Its
// writes to Leases are held too: held object writes alone would leave
// its objects where they are (its handovers are writes to them), so its
// renewals are held with them, the ring counts it dead and moves its
// objects, and the writes it sent while they were its own land (or are
// refused) afterwards. It changes the member's objects at the start, so
// that their update handlers have results to write.
func (r *ring) writeDelayed(ctx context.Context, m *member, hold time.Duration) error {
	objects := m.activeOn(pickWindow)
	name, _ := r.memberName(ctx, m)
	id := r.begin(ctx, faultlog.Entry{Kind: faultlog.WriteDelayed, Replica: m.PodID(), Actor: m.Actor(), Note: fmt.Sprintf("slow %s; member %s", m.slow, name)})
	m.l7.Hold(proxy.AnyOf(objectWrites, leaseWrites))
	touched := r.touch(ctx, objects)
	sleep(ctx, hold)
	deliveries := m.l7.Deliver()
	summary, toObjects := deliveryNote(deliveries)
	r.log.End(id, fmt.Sprintf("%d objects changed at the start; %s%s", touched, summary, r.landed(ctx, deliveries, name)))
	if toObjects == 0 {
		return notInjected(errors.New("no write to an object was held"))
	}
	return nil
}

// deliveryNote sums up what became of the held writes: by kind of
// object and the upstream's answer. It returns how many went to objects.
func deliveryNote(ds []proxy.Delivery) (string, int) {
	count := map[string]map[string]int{"objects": {}, "Leases": {}, "others": {}}
	gone, toObjects := 0, 0
	var last time.Duration
	for _, d := range ds {
		what := "others"
		switch {
		case strings.Contains(d.Path, "/kopfexamples"):
			what = "objects"
			toObjects++
		case strings.Contains(d.Path, "/leases"):
			what = "Leases"
		}
		answer := fmt.Sprint(d.Status)
		if d.Status == 0 {
			answer = "error"
		} else if d.Status < 300 {
			answer = fmt.Sprintf("%d landed", d.Status)
		}
		count[what][d.Method+" "+answer]++
		if d.Gone {
			gone++
		}
		last = max(last, d.Delivered.Sub(d.Held))
	}
	var parts []string
	for _, what := range []string{"objects", "Leases", "others"} {
		var answers []string
		for a, n := range count[what] {
			answers = append(answers, fmt.Sprintf("%s ×%d", a, n))
		}
		if len(answers) > 0 {
			sort.Strings(answers)
			parts = append(parts, what+": "+strings.Join(answers, ", "))
		}
	}
	return fmt.Sprintf("delivered %d held writes (%s), the longest held %s, %d after their client had gone",
		len(ds), strings.Join(parts, "; "), last.Round(time.Millisecond), gone), toObjects
}

// touch changes the spec of the objects (namespace/name), directly, so
// that their owner's update handlers run; it returns how many it changed.
func (r *ring) touch(ctx context.Context, objects []string) int {
	n := 0
	for _, o := range objects {
		_, name, _ := strings.Cut(o, "/")
		patch := fmt.Sprintf(`{"spec":{"touched":%q}}`, time.Now().Format(time.RFC3339Nano))
		if fixtures.env.Client.Patch(ctx, newObject(r.ns, name), client.RawPatch(types.MergePatchType, []byte(patch))) == nil {
			n++
		}
	}
	return n
}

// pickAssigner chooses the ring's assigner as the victim, if it is up
// and under no other fault, and marks it busy until release.
func (r *ring) pickAssigner(ctx context.Context) (*member, error) {
	podID := r.assigner(ctx)
	for _, m := range r.all() {
		if m.PodID() != podID || !m.Up() || m.ignoreStop {
			continue
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.busy[podID] {
			return nil, fmt.Errorf("the assigner %s is under another fault", podID)
		}
		r.busy[podID] = true
		return m, nil
	}
	return nil, fmt.Errorf("no assigner up (%q)", podID)
}

// landed describes the held writes to objects that went in at their
// delivery: what they wrote, the version they made, and the object's
// owner label and grant just after, beside whether the ring's epoch lists
// the victim's member as retired (its objects adopted without a write).
func (r *ring) landed(ctx context.Context, ds []proxy.Delivery, member string) string {
	var out []string
	for _, d := range ds {
		if d.Status < 200 || d.Status >= 300 || !strings.Contains(d.Path, "/kopfexamples") {
			continue
		}
		var resp struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		version := "unknown (the answer is not JSON)"
		if json.Unmarshal(d.Response, &resp) == nil {
			version = resp.Metadata.ResourceVersion
		}
		_, rest, _ := strings.Cut(d.Path, "/kopfexamples/")
		name, _, _ := strings.Cut(rest, "/")
		body := string(d.Body)
		if len(body) > 300 {
			body = body[:300] + "..."
		}
		now := ""
		obj := newObject(r.ns, name)
		if err := fixtures.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil {
			now = fmt.Sprintf("; now owner %q, grant %q", obj.GetLabels()[r.names.ownerLabel], obj.GetAnnotations()[r.names.grantAnnotation])
		}
		out = append(out, fmt.Sprintf("LANDED %s %s held %s, made version %s%s: %s", d.Method, d.Path,
			d.Delivered.Sub(d.Held).Round(time.Millisecond), version, now, body))
	}
	if len(out) == 0 {
		return ""
	}
	var epoch coordinationv1.Lease
	retired := "unknown"
	if err := fixtures.env.Client.Get(ctx, client.ObjectKey{Namespace: r.leaseNS, Name: r.names.epochLease}, &epoch); err == nil {
		retired = epoch.Annotations["shard.kopf.dev/retired"]
	}
	return fmt.Sprintf("; the epoch's retired members now: %q (the victim's member: %s); %s", retired, member, strings.Join(out, "; "))
}
