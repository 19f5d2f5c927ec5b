package admission

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// process is one replica of test/admission/replica, run as a process.
type process struct {
	name    string
	p       *testenv.Process
	webhook string // host:port of its webhook server
	probes  string // host:port of its /readyz
}

// fleet runs replicas of the operator behind the balancer.
type fleet struct {
	t          *testing.T
	binary     string
	kubeconfig string
	env        []string
	lb         *balancer
	started    int
}

// start runs a new replica and waits until it is ready (its /readyz says
// so: it serves and counts among the replicas), then puts it in service.
func (f *fleet) start() *process {
	f.t.Helper()
	f.started++
	r := &process{name: fmt.Sprintf("replica-%d", f.started),
		webhook: testenv.FreeAddress(f.t), probes: testenv.FreeAddress(f.t)}
	host, port, _ := net.SplitHostPort(r.webhook)
	args := []string{"--standalone", "--kubeconfig=" + f.kubeconfig,
		"--webhook-host=" + host, "--webhook-port=" + port,
		"--webhook-cert-dir=" + env.WebhookInstallOptions.LocalServingCertDir,
		"--health-probe-bind-address=" + r.probes}
	p, err := testenv.StartProcess(f.binary, args, append([]string{"POD_ID=" + r.name}, f.env...))
	if err != nil {
		f.t.Fatal(err)
	}
	r.p = p
	f.t.Cleanup(func() {
		p.Kill()
		if f.t.Failed() {
			f.t.Logf("%s's output:\n%s", r.name, p.Output())
		}
	})
	kopftest.Eventually(f.t, r.name+" ready", 60*time.Second, func() bool {
		if p.Exited() {
			f.t.Fatalf("%s exited: %v\n%s", r.name, p.Err(), p.Output())
		}
		resp, err := http.Get("http://" + r.probes + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	f.lb.add(r.webhook)
	return r
}

// stop takes the replica out of service and stops it with SIGTERM, as a
// Pod's deletion does; it must exit with 0.
func (f *fleet) stop(r *process) {
	f.t.Helper()
	f.lb.remove(r.webhook)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.p.Stop(ctx); err != nil {
		f.t.Errorf("stop %s: %v\n%s", r.name, err, r.p.Output())
	}
}

// outcomes are what became of the writer's invalid objects.
type outcomes struct {
	mu       sync.Mutex
	admitted []string // the safety violations
	refused  int      // by the handler: its message
	failed   []string // refused because the webhook could not be called (failurePolicy: Fail)
	errors   []string // the API call failed otherwise
}

func (o *outcomes) refusals() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused
}

// write creates an invalid object every 100 ms until ctx ends.
func (o *outcomes) write(ctx context.Context, ns string) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		obj := kex(ns, fmt.Sprintf("invalid-%d", n), nil, map[string]any{"field": "invalid"})
		callCtx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		err := k8s.Create(callCtx, obj)
		cancel()
		o.mu.Lock()
		switch {
		case err == nil:
			o.admitted = append(o.admitted, obj.GetName())
		case strings.Contains(err.Error(), "the field is invalid (refused by replica-"):
			o.refused++
		case strings.Contains(err.Error(), "failed calling webhook"):
			o.failed = append(o.failed, err.Error())
		default:
			o.errors = append(o.errors, err.Error())
		}
		o.mu.Unlock()
	}
}

// Replicas with managed webhooks behind a load balancer, rolled one at a
// time while a writer creates an invalid object every 100 ms: every
// invalid object is refused, throughout. Three replicas are rolled as a
// Deployment with maxUnavailable does (SIGTERM one, start its
// replacement, wait until it is ready); one replica as with maxSurge (the
// replacement is ready before the old one gets SIGTERM). After the last
// replicas stop (at once), the non-persistent webhooks are gone and the
// persistent one stays.
func TestManagedWebhooksThroughARollingUpdate(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "replica")
	if err := testenv.Build(binary, "./test/admission/replica"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		replicas int
		surge    bool
	}{{"three replicas, one down at a time", 3, false}, {"one replica, surging", 1, true}} {
		t.Run(tt.name, func(t *testing.T) { rollingUpdate(t, binary, tt.replicas, tt.surge) })
	}
}

func rollingUpdate(t *testing.T, binary string, count int, surge bool) {
	kopftest.NoLeaks(t)
	const name = "rolling.kopf.dev"
	dir := t.TempDir()
	kubeconfig, err := kopftest.WriteKubeconfig(env, dir)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, env.WebhookInstallOptions.LocalServingCAData, 0o600); err != nil {
		t.Fatal(err)
	}
	deleteConfigurations(t, name)
	leases, objects := namespace(t), namespace(t)
	lb := newBalancer(t, env.WebhookInstallOptions.LocalServingHost)
	f := &fleet{t: t, binary: binary, kubeconfig: kubeconfig, lb: lb, env: []string{
		"POD_NAMESPACE=" + leases, "REPLICA_MANAGED=" + name, "REPLICA_CA_FILE=" + caFile, "REPLICA_URL=https://" + lb.addr()}}

	var replicas []*process
	for range count {
		replicas = append(replicas, f.start())
	}
	waitForWebhooks(t, name, []string{"refuse-frozen." + name, "refuse-invalid." + name}, []string{"stamp." + name})
	kopftest.Eventually(t, "the API server calls the webhooks", 30*time.Second, func() bool {
		err := k8s.Create(context.Background(), kex(objects, "probe", nil, map[string]any{"field": "invalid"}), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "the field is invalid")
	})

	o := &outcomes{}
	writing, stopWriting := context.WithCancel(context.Background())
	written := make(chan struct{})
	go func() {
		defer close(written)
		o.write(writing, objects)
	}()
	t.Cleanup(func() { stopWriting(); <-written })
	for i, old := range replicas {
		if surge {
			replicas[i] = f.start()
			f.stop(old)
		} else {
			f.stop(old)
			replicas[i] = f.start()
		}
		// The writer's objects are refused by the handlers after each
		// step: the webhooks work, not merely fail.
		after := o.refusals()
		kopftest.Eventually(t, "refusals after replacing "+old.name, 30*time.Second, func() bool { return o.refusals() > after+3 })
	}
	stopWriting()
	<-written

	o.mu.Lock()
	t.Logf("invalid objects: %d refused by the handler, %d by failed calls, %d admitted, %d other errors",
		o.refused, len(o.failed), len(o.admitted), len(o.errors))
	if len(o.admitted) > 0 {
		t.Errorf("invalid objects were admitted during the rolling update: %v", o.admitted)
	}
	if len(o.errors) > 0 {
		t.Errorf("creations failed otherwise: %q", o.errors)
	}
	for _, e := range o.failed {
		t.Logf("a call failed: %s", e)
	}
	o.mu.Unlock()

	// The mutating webhook works too.
	valid := kex(objects, "valid", nil, map[string]any{"field": "fine"})
	if err := k8s.Create(context.Background(), valid); err != nil {
		t.Fatalf("a valid object is refused: %v", err)
	}
	if stamp, _, _ := unstructured.NestedString(valid.Object, "spec", "stamp"); !strings.HasPrefix(stamp, "replica-") {
		t.Errorf("the valid object's spec.stamp is %q, want a replica's name", stamp)
	}

	// The last replicas stop at once.
	var stopping sync.WaitGroup
	for _, r := range replicas {
		stopping.Go(func() { f.stop(r) })
	}
	stopping.Wait()
	v, m := webhookNames(t, name)
	if !slices.Equal(v, []string{"refuse-frozen." + name}) || len(m) != 0 {
		t.Errorf("after the last stop, the webhooks are %v and %v, want only the persistent one", v, m)
	}
	if got := presenceLeases(t, leases, name); len(got) != 0 {
		t.Errorf("presence Leases after the last stop: %d", len(got))
	}
	cleanups := 0
	for _, r := range replicas {
		cleanups += strings.Count(r.p.Output(), "Cleaning up the admission webhooks "+name+".")
	}
	if cleanups == 0 {
		t.Errorf("no replica says it cleaned up")
	}
	// With nothing serving, an invalid object is admitted: the
	// configuration holds no webhook that applies to it.
	err = k8s.Create(context.Background(), kex(objects, "invalid-after", nil, map[string]any{"field": "invalid"}))
	if err != nil {
		t.Errorf("an invalid object after the last stop: %v, want admitted (no webhook left for it)", err)
	}
}
