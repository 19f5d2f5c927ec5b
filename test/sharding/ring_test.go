package sharding

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// Durations of the tests' rings: short, so that a crashed member's
// objects move within seconds; nested as the ring requires.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	renewPeriod   = 500 * time.Millisecond
)

// ringName is the ring of every test; each test has a namespace (and so
// Leases) of its own.
const ringName = "test"

// testRing is a ring of replicas in one namespace, all recording into one
// detector.
type testRing struct {
	t        *testing.T
	ns       string
	det      *detector
	replicas map[string]*replica
	// members are the member names of every replica started, by replica
	// name; a replica that stopped keeps its entry.
	members map[string]string
	// handlerTime is how long create and update handlers take: long
	// enough that an overlap would be seen.
	handlerTime time.Duration
	// peering makes the replicas take part in peering, through the
	// peering object "default" of the ring's namespace.
	peering bool
	// namespaces, if set, are the replicas' namespace patterns; else they
	// serve the ring's namespace, where their Leases are in any case.
	namespaces []string
	// register adds a test's own handlers to a replica's registry.
	register func(reg *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string)
	// ownHandlersOnly leaves the detector's handlers out: register's are
	// the replicas' only ones.
	ownHandlersOnly bool
	// name and leaseNS, if set, are the ring's name and the namespace of
	// its Leases, instead of ringName and the ring's namespace.
	name, leaseNS string
	// config, if set, is the replicas' user instead of the control
	// plane's administrator.
	config *rest.Config
	// noStandby starts the replicas with Sharding.NoStandby.
	noStandby bool
	// libraryDurations runs the ring at the library's default durations
	// instead of the tests' short ones.
	libraryDurations bool
	// grace, if set, is the replicas' shutdown grace instead of 5 s.
	grace time.Duration
}

// replica is one operator of the ring.
type replica struct {
	name string
	op   *kopftest.Operator
	cut  *cutter
	// lost is closed when the replica loses its membership.
	lost chan struct{}
}

func newRing(t *testing.T) *testRing {
	return &testRing{t: t, ns: env.Namespace(t), det: newDetector(), replicas: map[string]*replica{},
		members: map[string]string{}, handlerTime: 20 * time.Millisecond}
}

// identity is a replica's identity; its member name is on its Lease.
func identity(name string) string { return "kopf@test/" + name }

// member is the member name of a replica, as owner labels name it.
func (r *testRing) member(name string) string { return r.members[name] }

// keys are the keys of the ring's label and annotations: its Leases live
// in the test's namespace, the one its replicas serve, unless leaseNS
// says otherwise.
func (r *testRing) keys() ring.Keys { return ring.KeysOf(r.leases(), r.ringName()) }

// ringName is the ring's name: ringName unless the test names it.
func (r *testRing) ringName() string { return cmp.Or(r.name, ringName) }

// leases is the namespace of the ring's Leases.
func (r *testRing) leases() string { return cmp.Or(r.leaseNS, r.ns) }

// start starts a replica named name.
func (r *testRing) start(name string) *replica {
	r.t.Helper()
	reg := handlers.NewRegistry()
	res := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	if !r.ownHandlersOnly {
		r.handlersOf(res, name)
	}
	if r.register != nil {
		r.register(reg, res, name)
	}
	cut := &cutter{memberLease: []byte("kopf-shard-" + r.ringName() + "-")}
	cfg := rest.CopyConfig(cmp.Or(r.config, env.Config))
	cfg.WrapTransport = cut.wrap
	lost := make(chan struct{})
	shard := handlers.Sharding{Ring: r.ringName(), Namespace: r.leases(), LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RenewPeriod: renewPeriod,
		Lost: lost, NoStandby: r.noStandby}
	if r.libraryDurations {
		shard.LeaseDuration, shard.RenewDeadline, shard.RenewPeriod = 0, 0, 0
	}
	op := env.StartOperator(r.t, r.ns, reg, handlers.Options{
		Identity: identity(name), Standalone: !r.peering, ShutdownGrace: cmp.Or(r.grace, 5*time.Second), Namespaces: r.namespaces,
		Sharding: shard,
	}, kopftest.WithConfig(cfg))
	rep := &replica{name: name, op: op, cut: cut, lost: lost}
	r.replicas[name] = rep
	kopftest.Eventually(r.t, name+" joins the ring", 30*time.Second, func() bool {
		members, err := handlers.ShardMembers(context.Background(), env.Client, r.leases(), r.ringName())
		if err != nil {
			r.t.Fatal(err)
		}
		for m, id := range members {
			if id == identity(name) {
				r.members[name] = m
				return true
			}
		}
		return false
	})
	return rep
}

// startSettled starts the replicas, creates n objects, and waits until
// the ring has settled them (within timeout): the start of most tests.
func (r *testRing) startSettled(replicas []string, n int, timeout time.Duration) []string {
	r.t.Helper()
	for _, name := range replicas {
		r.start(name)
	}
	names := r.createObjects(n)
	r.waitSettled(names, timeout)
	return names
}

// handlersOf registers the detector's handlers: create, update, delete,
// a daemon and a timer, all recording where they run.
func (r *testRing) handlersOf(res *handlers.Resource[*unstructured.Unstructured], name string) {
	det := r.det
	handlers.OnCreate(res, "create", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		defer det.enter(obj.GetName(), name, "create")()
		time.Sleep(r.handlerTime)
		field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
		det.create(obj.GetName(), name, field)
		return nil, nil
	})
	handlers.OnUpdate(res, "update", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		defer det.enter(obj.GetName(), name, "update")()
		time.Sleep(r.handlerTime)
		field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
		det.update(obj.GetName(), field)
		return nil, nil
	}, handlers.Field("spec.field"))
	handlers.OnDelete(res, "delete", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		defer det.enter(obj.GetName(), name, "delete")()
		det.delete(obj.GetName())
		return nil, nil
	})
	handlers.Daemon(res, "daemon", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		defer det.enter(obj.GetName(), name, "daemon")()
		det.daemon(obj.GetName(), name, 1)
		defer det.daemon(obj.GetName(), name, -1)
		<-d.Stopped()
		return nil, nil
	})
	handlers.Timer(res, "timer", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		defer det.enter(obj.GetName(), name, "timer")()
		return nil, nil
	}, handlers.Interval(time.Second))
}

// stop stops a replica gracefully: its Lease goes once it has stopped.
func (r *testRing) stop(name string) {
	r.t.Helper()
	r.replicas[name].op.Stop(r.t)
	delete(r.replicas, name)
}

// crash cuts a replica off the API server without a graceful stop: its
// requests fail and its watches break, so it can renew nothing, fences
// itself at the renew deadline and stops; its Lease is left to expire.
func (r *testRing) crash(name string) {
	r.t.Helper()
	rep := r.replicas[name]
	rep.cut.cutOff()
	delete(r.replicas, name)
	if err := rep.op.Exited(r.t); !errors.Is(err, ring.ErrMembershipLost) {
		r.t.Errorf("the crashed replica %s exited with %v, want the lost membership", name, err)
	}
}

// object is a KopfExample of the ring's namespace.
func (r *testRing) object(name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(r.ns)
	obj.SetName(name)
	return obj
}

// createObjects creates n objects named obj-0000 onwards, a few at once.
func (r *testRing) createObjects(n int) []string {
	r.t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("obj-%04d", i)
	}
	r.createNamed(names)
	return names
}

// createNamed creates objects of these names, in parallel.
func (r *testRing) createNamed(names []string) {
	r.t.Helper()
	r.parallel(names, func(name string) error {
		obj := r.object(name)
		obj.Object["spec"] = map[string]any{"field": "v0"}
		return env.Client.Create(context.Background(), obj)
	})
}

// parallel runs f for every name, 8 at a time, and fails on any error.
func (r *testRing) parallel(names []string, f func(name string) error) {
	r.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	sem := make(chan struct{}, 8)
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(name); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		r.t.Fatal(err)
	}
}

// owners reads every object's owner label, the handover request of an
// assigner before the ring's epoch (which nothing writes any more), and
// the key the ring hashes it by.
func (r *testRing) owners() (owner, next map[string]string, hashKeys map[string]string) {
	r.t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := env.Client.List(context.Background(), list, client.InNamespace(r.ns)); err != nil {
		r.t.Fatal(err)
	}
	owner, next, hashKeys = map[string]string{}, map[string]string{}, map[string]string{}
	keys := r.keys()
	for _, obj := range list.Items {
		p := keys.Placement(obj.GetLabels(), obj.GetAnnotations())
		if p.Owner != p.Granted {
			r.t.Errorf("%s: owner label %q, but granted to %q", obj.GetName(), p.Owner, p.Granted)
		}
		owner[obj.GetName()] = p.Owner
		next[obj.GetName()] = obj.GetAnnotations()[keys.Next]
		hashKeys[obj.GetName()] = sharding.ObjectKey(obj.GetNamespace(), obj.GetName())
	}
	return owner, next, hashKeys
}

// hashKey is what an object of the ring's namespace is hashed by.
func (r *testRing) hashKey(name string) string { return sharding.ObjectKey(r.ns, name) }

// startHashing starts a replica that the object with the key hashes to,
// among it and the running replicas others: a member's name is drawn
// when it joins, so replicas b0, b1, ... are started until one is (a
// chance of one half each against one other), and the others leave
// again at once. It returns the replica's name.
func (r *testRing) startHashing(key string, others ...string) string {
	r.t.Helper()
	for i := 0; ; i++ {
		name := fmt.Sprintf("b%d", i)
		r.start(name)
		members := []string{r.member(name)}
		for _, o := range others {
			members = append(members, r.member(o))
		}
		if sharding.Owner(key, members) == r.member(name) {
			return name
		}
		r.stop(name)
	}
}

// waitCreates waits until every object's create handler has run: they
// run beside the daemons, not before them, so the last may still be
// under way when the ring has settled.
func (r *testRing) waitCreates(names []string) {
	r.t.Helper()
	kopftest.Eventually(r.t, "every create handler ran", 30*time.Second, func() bool {
		for _, name := range names {
			if len(r.det.creates(name)) == 0 {
				return false
			}
		}
		return true
	})
}

// waitHandled waits until every object's creation is handled and its
// outcome stored: the diffbase annotation is written.
func (r *testRing) waitHandled(names []string) {
	r.t.Helper()
	kopftest.Eventually(r.t, "every object's creation is stored as handled", 30*time.Second, func() bool {
		for _, name := range names {
			obj := r.object(name)
			if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, obj); err != nil {
				return false
			}
			if obj.GetAnnotations()[lastHandled] == "" {
				return false
			}
		}
		return true
	})
}

// lastHandled is the engine's (and Kopf's) diffbase annotation.
const lastHandled = "kopf.zalando.org/last-handled-configuration"

// waitGone waits until the objects are gone.
func (r *testRing) waitGone(names []string, timeout time.Duration) {
	r.t.Helper()
	kopftest.Eventually(r.t, "the objects are gone", timeout, func() bool {
		owner, _, _ := r.owners()
		for _, name := range names {
			if _, ok := owner[name]; ok {
				return false
			}
		}
		return true
	})
}

// liveMembers are the member names of the running replicas.
func (r *testRing) liveMembers() []string {
	var ms []string
	for name := range r.replicas {
		ms = append(ms, r.member(name))
	}
	return ms
}

// replicaOf is the replica name of a member name.
func (r *testRing) replicaOf(m string) string {
	for name, member := range r.members {
		if member == m {
			return name
		}
	}
	return ""
}

// settled reports whether every object is where the hashing over the
// running replicas puts it, with no handover pending, and its daemon runs
// there and nowhere else.
func (r *testRing) settled(names []string) (bool, string) {
	owner, next, hashKeys := r.owners()
	live := r.liveMembers()
	for _, name := range names {
		want := sharding.Owner(hashKeys[name], live)
		if owner[name] != want || next[name] != "" {
			return false, fmt.Sprintf("%s is owned by %q (next %q), want %q", name, owner[name], next[name], want)
		}
		hosts := r.det.daemonHosts(name)
		if len(hosts) != 1 || r.member(hosts[0]) != want {
			return false, fmt.Sprintf("%s has daemons on %v, want one on %s", name, hosts, r.replicaOf(want))
		}
	}
	return true, ""
}

// waitSettled waits until the ring has settled; timeout bounds the wait.
func (r *testRing) waitSettled(names []string, timeout time.Duration) {
	r.t.Helper()
	await.NoneMissing(r.t, "the ring settles", timeout, func() string {
		if ok, why := r.settled(names); !ok {
			return cmp.Or(why, "not yet")
		}
		return ""
	})
}

// cutter cuts a replica's connections to the API server at once: new
// requests fail, and open responses (watch streams) break.
type cutter struct {
	mu     sync.Mutex
	cut    bool
	bodies map[*cutBody]struct{}
	// reads are the replica's lists and watches of KopfExamples: the only
	// way for it to learn of an object it has not seen.
	reads int
	// noWrites refuses the replica's writes to KopfExamples; refused
	// counts them.
	noWrites bool
	refused  int
	// listed counts the KopfExamples that the replica's lists returned,
	// and the initial events of its watch-lists, by their label selector.
	listed map[string]int
	// memberLease is the prefix of the names of the ring's members'
	// Leases; memberEvents counts the events of those that the replica
	// received.
	memberLease  []byte
	memberEvents int
}

// followsLeases tells whether the replica has a watch of the ring's
// Leases open (a candidate's, sharding.md "Candidates"), and how many
// events of members' Leases its watches brought so far.
func (c *cutter) followsLeases() (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range c.bodies {
		if b.follows {
			return true, c.memberEvents
		}
	}
	return false, c.memberEvents
}

// addListed counts items listed with the label selector.
func (c *cutter) addListed(selector string, items int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed == nil {
		c.listed = map[string]int{}
	}
	c.listed[selector] += items
}

// listedItems is how many KopfExamples the replica's lists returned whose
// label selector has the part.
func (c *cutter) listedItems(part string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for sel, items := range c.listed {
		if strings.Contains(sel, part) {
			n += items
		}
	}
	return n
}

// countListed counts the items of a list's response, whose body it reads
// and gives back whole.
func (c *cutter) countListed(req *http.Request, resp *http.Response) error {
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(data, &list) != nil {
		return nil // not a list: an error's status
	}
	c.addListed(req.URL.Query().Get("labelSelector"), len(list.Items))
	return nil
}

// refuseWrites refuses, or lets through again, the replica's writes to
// KopfExamples, and says how many it refused so far.
func (c *cutter) refuseWrites(refuse bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noWrites = refuse
	return c.refused
}

// refusing counts and tells whether the request is a write to a
// KopfExample that is refused now.
func (c *cutter) refusing(req *http.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.noWrites || req.Method == http.MethodGet || !strings.Contains(req.URL.Path, "/kopfexamples/") {
		return false
	}
	c.refused++
	return true
}

// openWatches is how many watch streams of KopfExamples the replica has
// open.
func (c *cutter) openWatches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for b := range c.bodies {
		if b.watch {
			n++
		}
	}
	return n
}

// read is how many lists and watches of KopfExamples the replica made.
func (c *cutter) read() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

var (
	errCut           = errors.New("the connection is cut")
	errWritesRefused = errors.New("the test refuses this write")
)

func (c *cutter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if c.isCut() {
			return nil, errCut
		}
		if c.refusing(req) {
			return nil, errWritesRefused
		}
		read := req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/kopfexamples")
		if read {
			c.mu.Lock()
			c.reads++
			c.mu.Unlock()
		}
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.Body == nil {
			return resp, err
		}
		watch := read && req.URL.Query().Get("watch") == "true"
		if read && !watch {
			if err := c.countListed(req, resp); err != nil {
				return nil, err
			}
		}
		leases := req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/leases") && req.URL.Query().Get("watch") == "true"
		body := &cutBody{ReadCloser: resp.Body, c: c, watch: watch,
			follows: leases && strings.Contains(req.URL.Query().Get("labelSelector"), ring.RingLabel)}
		if leases && len(c.memberLease) > 0 {
			body.members = &occurrences{marker: c.memberLease, found: c.memberEvent}
		}
		if watch && req.URL.Query().Get("sendInitialEvents") == "true" {
			body.initial = &initialEvents{c: c, selector: req.URL.Query().Get("labelSelector")}
		}
		c.mu.Lock()
		if c.bodies == nil {
			c.bodies = map[*cutBody]struct{}{}
		}
		c.bodies[body] = struct{}{}
		c.mu.Unlock()
		resp.Body = body
		return resp, nil
	})
}

func (c *cutter) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

func (c *cutter) cutOff() {
	c.mu.Lock()
	c.cut = true
	bodies := c.bodies
	c.bodies = nil
	c.mu.Unlock()
	for b := range bodies {
		_ = b.ReadCloser.Close()
	}
}

type cutBody struct {
	io.ReadCloser
	c *cutter
	// watch: the body is a watch stream of KopfExamples.
	watch bool
	// initial, if set, counts the initial events of a watch-list.
	initial *initialEvents
	// follows: a watch of the ring's Leases, by their label; members, if
	// set, counts in a watch of Leases the events of members' Leases:
	// each names its Lease once, in JSON as in protobuf.
	follows bool
	members *occurrences
}

// occurrences counts a marker in a stream, across its reads' bounds.
type occurrences struct {
	marker []byte
	found  func()
	tail   []byte
}

func (o *occurrences) scan(data []byte) {
	buf := append(o.tail, data...)
	for i := bytes.Index(buf, o.marker); i >= 0; i = bytes.Index(buf, o.marker) {
		o.found()
		buf = buf[i+len(o.marker):]
	}
	o.tail = append(o.tail[:0], buf[max(0, len(buf)-len(o.marker)+1):]...)
}

// memberEvent counts an event of a member's Lease.
func (c *cutter) memberEvent() {
	c.mu.Lock()
	c.memberEvents++
	c.mu.Unlock()
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.c.isCut() {
		return 0, errCut
	}
	n, err := b.ReadCloser.Read(p)
	if b.initial != nil {
		b.initial.scan(p[:n])
	}
	if b.members != nil {
		b.members.scan(p[:n])
	}
	return n, err
}

// initialEvents counts the ADDED events of a watch-list's stream (one
// JSON event a line) until the bookmark that ends its initial events:
// what a list would have returned.
type initialEvents struct {
	c        *cutter
	selector string
	line     []byte
	done     bool
}

func (e *initialEvents) scan(data []byte) {
	for !e.done && len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			e.line = append(e.line, data...)
			return
		}
		e.line = append(e.line, data[:i]...)
		data = data[i+1:]
		switch {
		case bytes.Contains(e.line, []byte(`"type":"BOOKMARK"`)) && bytes.Contains(e.line, []byte("initial-events-end")):
			e.done = true
		case bytes.Contains(e.line, []byte(`"type":"ADDED"`)):
			e.c.addListed(e.selector, 1)
		}
		e.line = e.line[:0]
	}
}

func (b *cutBody) Close() error {
	b.c.mu.Lock()
	delete(b.c.bodies, b)
	b.c.mu.Unlock()
	return b.ReadCloser.Close()
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
