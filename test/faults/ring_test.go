package faults

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/faults/faultlog"
	"github.com/kopf-go/kopf/test/faults/harness"
	"github.com/kopf-go/kopf/test/faults/proxy"
)

// timing is a ring's durations: zero for the library's defaults, which
// the probe then leaves alone.
type timing struct {
	lease, deadline, period time.Duration
}

// defaults are the library's: 15 s, 10 s, 5 s.
var defaults = timing{}

// effective fills in the library's defaults, for the suite's own waits.
func (d timing) effective() timing {
	if d.lease == 0 {
		return timing{15 * time.Second, 10 * time.Second, 5 * time.Second}
	}
	return d
}

// flags are the probe's flags that set the durations, none for defaults.
func (d timing) flags() []string {
	if d == (timing{}) {
		return nil
	}
	return []string{"--lease-duration=" + d.lease.String(), "--renew-deadline=" + d.deadline.String(),
		"--renew-period=" + d.period.String()}
}

// member is one replica of a ring with its proxy.
type member struct {
	*harness.Replica
	proxy      *proxy.Proxy
	l7         *l7Proxy
	slow       time.Duration
	ignoreStop bool
	records    string
}

// ring is a ring of probe replicas that serve one namespace.
type ring struct {
	t        testing.TB
	name     string
	ns       string // the objects'
	leaseNS  string // the member Leases'
	dir      string
	log      *faultlog.Log
	names    wireNames
	timing   timing
	priority int

	mu      sync.Mutex
	members []*member
	busy    map[string]bool // members under a fault, by POD_ID
	// secondRings counts the second rings started beside this one, to
	// give their replicas POD_IDs of their own; renames, its renames
	// (rename_test.go); reuses, its name-reused faults, to give their
	// incarnations names of their own (nemesis_names_test.go).
	secondRings, renames, reuses int
	// renaming: a rename of the ring is under way (rename_test.go).
	renaming bool
	// renamed are the rings its renames started; a rename that failed
	// half-way leaves replicas in one, which may hold objects.
	renamed []*ring
	// extra are more of the runner's flags for its replicas.
	extra []string
}

// newRing prepares a ring; members come with add. Everything it starts
// ends when the test does.
func newRing(t testing.TB, name, ns, leaseNS, dir string, log *faultlog.Log, d timing) *ring {
	t.Helper()
	for _, sub := range []string{"records", "out"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &ring{t: t, name: name, ns: ns, leaseNS: leaseNS, dir: dir, log: log,
		names: ringWireNames(leaseNS, name), timing: d, busy: map[string]bool{}}
}

// add starts a member with its own proxies and kubeconfig: the replica
// reaches the API server through a TCP proxy (partitions) in front of an
// L7 proxy (stalled streams, held writes). It may run beside the test's
// goroutine (a nemesis adds members), so it returns its errors rather
// than failing the test.
func (r *ring) add(podID string, slow time.Duration, ignoreStop bool) (*member, error) {
	l7, err := startL7()
	if err != nil {
		return nil, err
	}
	r.t.Cleanup(func() { _ = l7.Close() })
	p, err := proxy.Start(l7.Addr())
	if err != nil {
		return nil, err
	}
	r.t.Cleanup(func() { _ = p.Close() })
	kubeconfig := filepath.Join(r.dir, "out", podID+".kubeconfig")
	if err := writeProxyKubeconfig(kubeconfig, p.Addr(), l7.CA()); err != nil {
		return nil, err
	}
	records := filepath.Join(r.dir, "records", podID+".jsonl")
	args := []string{"--records=" + records, "--slow=" + slow.String()}
	if ignoreStop {
		args = append(args, "--ignore-stop")
	}
	args = append(append(args, r.timing.flags()...), "--", "--shard-ring="+r.name, "--namespace="+r.ns, "--verbose")
	if r.priority != 0 {
		args = append(args, fmt.Sprintf("--priority=%d", r.priority))
	}
	args = append(args, r.extra...)
	rep, err := harness.Start(harness.Spec{PodID: podID, Binary: fixtures.probe, Args: args,
		Env: []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + r.leaseNS}, Dir: filepath.Join(r.dir, "out")}, r.log)
	if err != nil {
		return nil, err
	}
	r.t.Cleanup(rep.Close)
	m := &member{Replica: rep, proxy: p, l7: l7, slow: slow, ignoreStop: ignoreStop, records: records}
	r.mu.Lock()
	r.members = append(r.members, m)
	r.mu.Unlock()
	return m, nil
}

// startL7 starts an L7 proxy to the control plane with a transport of its
// own (one replica's connections are not shared with another's), which
// carries the control plane's admin credentials.
func startL7() (*l7Proxy, error) {
	cfg := rest.CopyConfig(fixtures.env.Config)
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the control plane's TLS: %w", err)
	}
	base := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, IdleConnTimeout: 90 * time.Second}
	rt, err := rest.HTTPWrappersForConfig(cfg, base)
	if err != nil {
		return nil, fmt.Errorf("the control plane's credentials: %w", err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	l7, err := proxy.StartL7(u, rt)
	if err != nil {
		return nil, err
	}
	return &l7Proxy{L7: l7, base: base}, nil
}

// l7Proxy is an L7 proxy with its transport, closed together.
type l7Proxy struct {
	*proxy.L7
	base *http.Transport
}

func (p *l7Proxy) Close() error {
	err := p.L7.Close()
	p.base.CloseIdleConnections()
	return err
}

// writeProxyKubeconfig writes a kubeconfig with the server at the
// replica's TCP proxy (127.0.0.1, as the L7 proxy's certificate says)
// and the L7 proxy's CA, and no credentials: the L7 proxy uses its own.
func writeProxyKubeconfig(path, addr string, ca []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "https://" + addr, CertificateAuthorityData: ca}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write the replica's kubeconfig: %w", err)
	}
	return nil
}

// all are the ring's members, including those that left.
func (r *ring) all() []*member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.members)
}

// live counts the members that are up and do not ignore their stop.
func (r *ring) live() int {
	n := 0
	for _, m := range r.all() {
		if m.Up() && !m.ignoreStop {
			n++
		}
	}
	return n
}

// memberNames maps the names of the ring's member Leases (the owner
// label's values) to their holders' POD_IDs.
func (r *ring) memberNames(ctx context.Context) (map[string]string, error) {
	var list coordinationv1.LeaseList
	if err := fixtures.env.Client.List(ctx, &list, client.InNamespace(r.leaseNS),
		client.MatchingLabels{r.names.ringLabel: r.name}); err != nil {
		return nil, fmt.Errorf("list the ring's Leases: %w", err)
	}
	out := map[string]string{}
	for _, l := range list.Items {
		name, ok := strings.CutPrefix(l.Name, r.names.memberLeasePrefix)
		if ok && l.Spec.HolderIdentity != nil {
			out[name] = *l.Spec.HolderIdentity
		}
	}
	return out, nil
}

// assigner is the POD_ID that holds the assigner's Lease, "" if none.
// begin logs a fault as begun, noting (in the entry, and in its note for
// the reader) whether its target's replica is the ring's assigner now.
func (r *ring) begin(ctx context.Context, e faultlog.Entry) int {
	e.Assigner = e.Replica != "" && r.assigner(ctx) == e.Replica
	if e.Assigner {
		e.Note += "; the assigner"
	}
	return r.log.Begin(e)
}

func (r *ring) assigner(ctx context.Context) string {
	var l coordinationv1.Lease
	if err := fixtures.env.Client.Get(ctx, client.ObjectKey{Namespace: r.leaseNS, Name: r.names.assignerLease}, &l); err != nil ||
		l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// objects lists the objects of the namespace.
func (r *ring) objects(ctx context.Context) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := fixtures.env.Client.List(ctx, list, client.InNamespace(r.ns)); err != nil {
		return nil, fmt.Errorf("list the objects: %w", err)
	}
	return list.Items, nil
}

// owned maps each POD_ID to the objects its owner label names it for
// (not being deleted).
func (r *ring) owned(ctx context.Context) (map[string][]string, error) {
	names, err := r.memberNames(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := r.objects(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, o := range objs {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		if podID, ok := names[o.GetLabels()[r.names.ownerLabel]]; ok {
			out[podID] = append(out[podID], o.GetName())
		}
	}
	return out, nil
}

// createNamespace makes a namespace for the test.
func createNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := fixtures.env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
