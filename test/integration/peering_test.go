package integration

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"

	"github.com/kopf-go/kopf/pkg/cause"
)

// named returns the example object with another name.
func named(t *testing.T, namespace, name string) *unstructured.Unstructured {
	obj := exampleObject(t, namespace)
	obj.SetName(name)
	return obj
}

// Kopf's acceptance item 22: a live peer of higher priority freezes the
// operator: no handler runs, daemons stop (OPERATOR_PAUSING), the watch
// streams close, readiness fails; when the peer goes, the operator lists
// everything afresh and handles what it missed, and daemons start again.
// Its own record is in the peering object while it runs, and goes with it.
func TestFreezeInFavourOfAHigherPriority(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	reg, kind := kex()
	var seen calls
	var stops stopCauses
	handlers.OnCreate(kind, "create_fn", seen.record)
	handlers.Daemon(kind, "daemon", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		seen.add(&cause.Change{HandlerID: "daemon/" + obj.GetName()})
		<-ctx.Done()
		stops.add(context.Cause(ctx))
		return nil, ctx.Err()
	})
	w := &watches{resource: "kopfexamples"}
	probes, metricsAt := testenv.FreeAddress(t), testenv.FreeAddress(t)
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator"}, kopftest.WithConfig(w.config()),
		kopftest.WithManagerOptions(func(o *manager.Options) {
			o.HealthProbeBindAddress = probes
			o.Metrics.BindAddress = metricsAt
		}))

	create(t, named(t, ns, "before"))
	eventually(t, "the object is handled and the record written", func() bool {
		_, registered := peers(t, ns, "default")["go-operator"]
		return isHandled(t, ns, "before") && len(seen.of("daemon/before")) == 1 && registered && w.count() > 0
	})
	if got := peers(t, ns, "default")["go-operator"].(map[string]any); got["priority"] != int64(0) || got["lifetime"] != int64(60) {
		t.Errorf("own record = %v, want priority 0 and lifetime 60", got)
	}

	setPeer(t, ns, "default", "python-operator", kopfRecord(100, 60))
	eventually(t, "the operator freezes", func() bool {
		return len(op.Logs.Messages("Pausing operations in favour of [<Peer python-operator: priority=100, lifetime=60, lastseen=")) == 1
	})
	eventually(t, "the daemon stops and the watches close", func() bool {
		return errors.Is(stops.last(), cause.StopOperatorPausing) && w.count() == 0
	})
	if code, body := httpGet(t, "http://"+probes+"/readyz/kopf-peering"); code == http.StatusOK || !strings.Contains(body, "frozen: in favour of [<Peer python-operator") {
		t.Errorf("readiness while frozen = %d %q, want a failure saying why", code, body)
	}
	if code, _ := httpGet(t, "http://"+probes+"/healthz/kopf-peering"); code != http.StatusOK {
		t.Errorf("liveness while frozen = %d, want 200: a restart would not help", code)
	}
	if _, body := httpGet(t, "http://"+metricsAt+"/metrics"); !strings.Contains(body, `kopf_operator_frozen{identity="go-operator",reason="in favour of [<Peer python-operator`) ||
		!strings.Contains(grep(body, "kopf_operator_frozen{"), `"} 1`) {
		t.Errorf("the frozen metric is missing or 0:\n%s", grep(body, "kopf_operator_frozen"))
	}
	reads := w.read()
	create(t, named(t, ns, "during"))
	// A second peer comes after the object: once the operator names it in
	// its readiness, it has handled an event later than the object's
	// creation; frozen, it has neither listed nor watched the kind since
	// the freeze, so it cannot have seen the object.
	setPeer(t, ns, "default", "python-operator-2", kopfRecord(100, 60))
	eventually(t, "the operator judges the second peer", func() bool {
		_, body := httpGetMaybe("http://" + probes + "/readyz/kopf-peering")
		return strings.Contains(body, "<Peer python-operator-2: priority=100")
	})
	if n := w.read() - reads; n != 0 || isHandled(t, ns, "during") || len(seen.of("create_fn")) != 1 {
		t.Fatalf("the frozen operator read the kind %d times and handled %v (create_fn ran %d times, want 1)",
			n, isHandled(t, ns, "during"), len(seen.of("create_fn")))
	}

	setPeer(t, ns, "default", "python-operator-2", nil)
	setPeer(t, ns, "default", "python-operator", nil)
	eventually(t, "the operator resumes and handles what it missed", func() bool {
		return isHandled(t, ns, "during") && len(seen.of("daemon/before")) == 2 && len(seen.of("daemon/during")) == 1
	})
	if op.Logs.Count("Resuming operations after the pause. Conflicting operators with the same priority are gone.") != 1 ||
		op.Logs.Count("Resuming the watch-streams after the pause; listing everything afresh.") != 1 {
		t.Error("the resumption was not logged, by peering and by the engine")
	}
	if code, body := httpGet(t, "http://"+probes+"/readyz/kopf-peering"); code != http.StatusOK {
		t.Errorf("readiness after the freeze = %d %q", code, body)
	}
	if _, body := httpGet(t, "http://"+metricsAt+"/metrics"); !strings.Contains(body, `kopf_operator_frozen{identity="go-operator",reason=""} 0`) {
		t.Errorf("the frozen metric after the freeze:\n%s", grep(body, "kopf_operator_frozen"))
	}
	if n := len(seen.of("create_fn")); n != 2 {
		t.Errorf("create_fn ran %d times, want 2 (once per object)", n)
	}
	op.Stop(t)
	if _, still := peers(t, ns, "default")["go-operator"]; still {
		t.Error("the operator's own record outlived it")
	}
}

// httpGet returns the status code and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// httpGetMaybe is httpGet that returns code 0 when the server is not there.
func httpGetMaybe(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// grep returns the lines containing the substring.
func grep(text, substring string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substring) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// An object deleted while the operator is frozen brings no event (no watch
// is open then), and the fresh listing after the freeze does not have it:
// the operator still learns that it is gone, and forgets it.
func TestObjectDeletedWhileFrozenIsForgotten(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record) // no finalizer: nothing blocks the deletion
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator"})

	create(t, named(t, ns, "doomed"))
	create(t, named(t, ns, "survivor"))
	eventually(t, "both objects are handled", func() bool {
		return isHandled(t, ns, "doomed") && isHandled(t, ns, "survivor")
	})
	setPeer(t, ns, "default", "python-operator", kopfRecord(100, 60))
	eventually(t, "the operator freezes", func() bool {
		return len(op.Logs.Messages("Pausing operations in favour of [<Peer python-operator")) == 1
	})
	if err := env.Client.Delete(context.Background(), named(t, ns, "doomed")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object is gone", func() bool { return gone(t, ns, "doomed") })
	forgotten := func(name string) bool {
		return slices.Contains(op.Logs.About(name), "Deleted, really deleted, and we are notified.")
	}
	if forgotten("doomed") {
		t.Fatal("the frozen operator noticed a deletion")
	}

	setPeer(t, ns, "default", "python-operator", nil)
	eventually(t, "the resumed operator learns that the object is gone", func() bool { return forgotten("doomed") })
	if forgotten("survivor") {
		t.Error("the operator took an object that still exists for gone")
	}
	if n := len(seen.of("create_fn")); n != 2 {
		t.Errorf("create_fn ran %d times, want 2 (once per object)", n)
	}
}
