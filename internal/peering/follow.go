package peering

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kopf-go/kopf/internal/scopes"
	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// follow runs peering in each served namespace while it is served, as
// Kopf does for namespaces that appear and disappear at runtime: a new
// namespace's KopfPeering is watched and kept alive from its appearance,
// and a namespace that is gone stops freezing the operator.
func (p *Peering) follow(ctx context.Context, served *scopes.Served) error {
	select {
	case <-served.Ready():
	case <-ctx.Done():
		return nil
	}
	if !p.waitForCRD(ctx, kopfv1.GroupVersion.WithResource(kopfv1.KopfPeeringResource)) {
		return nil
	}
	type running struct {
		t      Target
		cancel context.CancelFunc
		wg     *sync.WaitGroup
	}
	active := map[string]running{}
	stop := func(r running) {
		r.cancel()
		r.wg.Wait()
		p.toggle.Set(r.t.blocker(), false, "")
	}
	for {
		names, changed := served.Now()
		for ns, r := range active {
			if !slices.Contains(names, ns) {
				stop(r)
				delete(active, ns)
			}
		}
		for _, ns := range names {
			if _, ok := active[ns]; ok {
				continue
			}
			t := Target{Namespace: ns, Name: p.s.Name}
			if p.s.Mode == ModeMandatory {
				p.toggle.Set(t.blocker(), true, fmt.Sprintf("the peering object %s has not been seen yet", t))
			}
			tctx, cancel := context.WithCancel(ctx)
			r := running{t: t, cancel: cancel, wg: &sync.WaitGroup{}}
			p.runTarget(tctx, t, r.wg)
			active[ns] = r
		}
		select {
		case <-changed:
		case <-ctx.Done():
			leave, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			for _, r := range active {
				r.cancel()
				r.wg.Wait()
				p.touch(leave, r.t, 0)
			}
			return nil
		}
	}
}
