package resources

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/scopes"
)

// served is a resource as discovery gives it, told by "group/version
// Kind", with a star when its version is the group's preferred one.
func served(spec string) scopes.Resource {
	preferred := strings.HasSuffix(spec, "*")
	spec = strings.TrimSuffix(spec, "*")
	gv, kind, _ := strings.Cut(spec, " ")
	group, version, _ := strings.Cut(gv, "/")
	return scopes.Resource{Group: group, Version: version, Kind: kind, Plural: strings.ToLower(kind) + "s", Namespaced: true,
		Preferred: preferred, Verbs: []string{"get", "list", "watch"}}
}

func servedAll(specs ...string) []scopes.Resource {
	var out []scopes.Resource
	for _, s := range specs {
		out = append(out, served(s))
	}
	return out
}

// specs renders resources back as served reads them, sorted.
func specs(rs []scopes.Resource) []string {
	var out []string
	for _, r := range rs {
		s := r.Group + "/" + r.Version + " " + r.Kind
		if r.Preferred {
			s += "*"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func gvs(m map[schema.GroupVersion]error) []string {
	var out []string
	for gv := range maps.Keys(m) {
		out = append(out, gv.String())
	}
	slices.Sort(out)
	return out
}

var (
	unavailable = errors.New("the server is currently unable to handle the request")
	stale       = discovery.StaleGroupVersionError{}
	notFound    = apierrors.NewNotFound(schema.GroupResource{}, "")
)

func TestKeepLastKnown(t *testing.T) {
	for _, tc := range []struct {
		name        string
		last        []string
		answered    []string
		failed      map[string]error
		want        []string
		wantKept    []string
		wantUnknown []string
	}{
		{name: "all answer: served as answered; a resource or group that is gone drops out",
			last:     []string{"kopf.dev/v1 KopfExample*", "kopf.dev/v1 Gone*", "gone.example/v1 Thing*", "apps/v1 Deployment*"},
			answered: []string{"kopf.dev/v1 KopfExample*", "apps/v1 Deployment*"},
			want:     []string{"apps/v1 Deployment*", "kopf.dev/v1 KopfExample*"}},
		{name: "a failing group keeps its last known resources; the others are served as answered",
			last:     []string{"kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*", "apps/v1 Deployment*", "apps/v1 Gone*"},
			answered: []string{"apps/v1 Deployment*", "batch/v1 Job*"},
			failed:   map[string]error{"kopf.dev/v1": stale},
			want:     []string{"apps/v1 Deployment*", "batch/v1 Job*", "kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*"},
			wantKept: []string{"kopf.dev/v1"}},
		{name: "a group version whose own endpoint fails (legacy discovery) keeps its resources too",
			last:     []string{"kopf.dev/v1 KopfExample*"},
			failed:   map[string]error{"kopf.dev/v1": unavailable},
			want:     []string{"kopf.dev/v1 KopfExample*"},
			wantKept: []string{"kopf.dev/v1"}},
		{name: "not found: the group version is gone (its CRD deleted while discovery looked)",
			last:     []string{"kopf.dev/v1 KopfExample*", "apps/v1 Deployment*"},
			answered: []string{"apps/v1 Deployment*"},
			failed:   map[string]error{"kopf.dev/v1": notFound},
			want:     []string{"apps/v1 Deployment*"}},
		{name: "a failing group never known keeps nothing, and is told apart",
			last:        []string{"apps/v1 Deployment*"},
			answered:    []string{"apps/v1 Deployment*"},
			failed:      map[string]error{"metrics.k8s.io/v1beta1": stale},
			want:        []string{"apps/v1 Deployment*"},
			wantUnknown: []string{"metrics.k8s.io/v1beta1"}},
		{name: "the preferred version fails: it stays preferred over the answer's next",
			last:     []string{"kopf.dev/v2 KopfExample*", "kopf.dev/v1 KopfExample"},
			answered: []string{"kopf.dev/v1 KopfExample*"},
			failed:   map[string]error{"kopf.dev/v2": stale},
			want:     []string{"kopf.dev/v1 KopfExample", "kopf.dev/v2 KopfExample*"},
			wantKept: []string{"kopf.dev/v2"}},
		{name: "another version fails: the answer's preference stands",
			last:     []string{"kopf.dev/v2 KopfExample*", "kopf.dev/v1 KopfExample"},
			answered: []string{"kopf.dev/v2 KopfExample*"},
			failed:   map[string]error{"kopf.dev/v1": stale},
			want:     []string{"kopf.dev/v1 KopfExample", "kopf.dev/v2 KopfExample*"},
			wantKept: []string{"kopf.dev/v1"}},
		{name: "a failing group version that answered in part is served as answered",
			last:     []string{"kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*"},
			answered: []string{"kopf.dev/v1 KopfExample*"},
			failed:   map[string]error{"kopf.dev/v1": unavailable},
			want:     []string{"kopf.dev/v1 KopfExample*"}},
		{name: "nothing known yet (the first answer): the answer as it is",
			answered:    []string{"apps/v1 Deployment*"},
			failed:      map[string]error{"kopf.dev/v1": stale},
			want:        []string{"apps/v1 Deployment*"},
			wantUnknown: []string{"kopf.dev/v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := discovered{resources: servedAll(tc.answered...)}
			if tc.failed != nil {
				d.failed = map[schema.GroupVersion]error{}
				for gv, err := range tc.failed {
					parsed, _ := schema.ParseGroupVersion(gv)
					d.failed[parsed] = err
				}
			}
			got := keepLastKnown(servedAll(tc.last...), d)
			if diff := cmp.Diff(tc.want, specs(got.resources)); diff != "" {
				t.Errorf("served -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantKept, gvs(got.kept)); diff != "" {
				t.Errorf("kept -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnknown, gvs(got.unknown)); diff != "" {
				t.Errorf("unknown -want +got:\n%s", diff)
			}
		})
	}
}

// fakeDiscovery answers ServerGroupsAndResources with what it is set to
// (the rest of discovery is not asked by the resource watch).
type fakeDiscovery struct {
	discovery.DiscoveryInterface
	groups []*metav1.APIGroup
	lists  []*metav1.APIResourceList
	err    error
}

func (f *fakeDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return f.groups, f.lists, f.err
}

// answer sets what discovery serves: "group/version" to kinds; the first
// version of a group is its preferred one.
func (f *fakeDiscovery) answer(failed map[schema.GroupVersion]error, gvs ...string) {
	f.groups, f.lists, f.err = nil, nil, nil
	byGroup := map[string]*metav1.APIGroup{}
	for _, spec := range gvs {
		gvText, kinds, _ := strings.Cut(spec, " ")
		gv, _ := schema.ParseGroupVersion(gvText)
		g := byGroup[gv.Group]
		if g == nil {
			g = &metav1.APIGroup{Name: gv.Group, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gvText, Version: gv.Version}}
			byGroup[gv.Group] = g
			f.groups = append(f.groups, g)
		}
		list := &metav1.APIResourceList{GroupVersion: gvText}
		for _, kind := range strings.Split(kinds, ",") {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: strings.ToLower(kind) + "s", Kind: kind, Namespaced: true,
				Verbs: []string{"get", "list", "watch"}}, metav1.APIResource{Name: strings.ToLower(kind) + "s/status", Kind: kind})
		}
		f.lists = append(f.lists, list)
	}
	if failed != nil {
		f.err = &discovery.ErrGroupDiscoveryFailed{Groups: failed}
	}
}

// The resource watch over a few refreshes: a group that fails keeps its
// resources (nothing changes for the engine), and says so once, then
// again as it still fails; when it answers without a resource, that one
// is gone. A failure of discovery as a whole changes nothing.
func TestResourceWatchKeepsFailingGroups(t *testing.T) {
	disco := &fakeDiscovery{}
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	fc := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	w := &Watch{disco: disco, clock: fc, log: log, jitter: jitter.Default(), failed: map[schema.GroupVersion]time.Time{},
		known: make(chan struct{}), changed: make(chan struct{})}
	kopfV1 := schema.GroupVersion{Group: "kopf.dev", Version: "v1"}
	ctx := context.Background()

	type step struct {
		name    string
		answer  func()
		changed bool
		served  []string
		failing bool
		said    []string
	}
	steps := []step{
		{name: "the first answer", answer: func() { disco.answer(nil, "kopf.dev/v1 KopfExample,KopfOther", "apps/v1 Deployment") },
			changed: false, served: []string{"apps/v1 Deployment*", "kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*"}},
		{name: "kopf.dev fails", answer: func() {
			disco.answer(map[schema.GroupVersion]error{kopfV1: unavailable}, "apps/v1 Deployment")
		}, served: []string{"apps/v1 Deployment*", "kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*"}, failing: true,
			said: []string{`"msg"="A group's discovery fails; its last known resources stay served until it answers again." "error"="the server is currently unable to handle the request" "groupVersion"="kopf.dev/v1" "retry"="30s"`}},
		{name: "it still fails", answer: func() {
			disco.answer(map[schema.GroupVersion]error{kopfV1: unavailable}, "apps/v1 Deployment")
		}, served: []string{"apps/v1 Deployment*", "kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*"}, failing: true,
			said: []string{`"level"=0 "msg"="A group's discovery still fails; its last known resources stay served." "groupVersion"="kopf.dev/v1" "since"="2026-12-01 10:00:01 +0000 UTC" "error"="the server is currently unable to handle the request"`}},
		{name: "discovery fails as a whole", answer: func() { disco.err = errors.New("connection refused") },
			served: []string{"apps/v1 Deployment*", "kopf.dev/v1 KopfExample*", "kopf.dev/v1 KopfOther*"}, failing: true,
			said: []string{`"msg"="Cannot discover the resources the cluster serves." "error"="discover the resources: connection refused"`}},
		{name: "it answers without a resource", answer: func() { disco.answer(nil, "kopf.dev/v1 KopfExample", "apps/v1 Deployment") },
			changed: true, served: []string{"apps/v1 Deployment*", "kopf.dev/v1 KopfExample*"},
			said: []string{`"level"=0 "msg"="A group's discovery answers again." "groupVersion"="kopf.dev/v1" "since"="2026-12-01 10:00:01 +0000 UTC"`}},
	}
	for _, s := range steps {
		s.answer()
		lines = nil
		_, before := w.Now()
		w.refresh(ctx)
		resources, _ := w.Now()
		var changed bool
		select {
		case <-before:
			changed = true
		default:
		}
		got := step{name: s.name, changed: changed, served: specs(resources), failing: w.failingNow(), said: lines}
		if diff := cmp.Diff(s, got, cmpopts.IgnoreFields(step{}, "answer"), cmp.AllowUnexported(step{})); diff != "" {
			t.Errorf("%s -want +got:\n%s", s.name, diff)
		}
		fc.Step(time.Second)
	}
}
