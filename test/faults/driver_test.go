package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// driver creates, updates and deletes objects all along, directly (not
// through any replica's proxy), keeping about population of them: every
// object runs a daemon on its owner, and every change a handler, so
// that every replica has something to do when a fault hits it.
type driver struct {
	ns         string
	population int
	period     time.Duration
	rng        *rand.Rand

	mu   sync.Mutex
	live []string
	next int
	// spared are objects that the driver updates but never deletes: a
	// victim's objects that a later fault needs it to be active on.
	spared                    map[string]bool
	created, updated, deleted int
	errors                    []string
}

func newDriver(ns string, population int, period time.Duration, seed uint64) *driver {
	return &driver{ns: ns, population: population, period: period, rng: rand.New(rand.NewPCG(seed, 0x6b6f7066))}
}

// fill creates the initial population at once.
func (d *driver) fill(ctx context.Context) error {
	for range d.population {
		if err := d.create(ctx); err != nil {
			return err
		}
	}
	return nil
}

// run changes an object every period until ctx ends: creates one while
// there are fewer than population, else updates one (three times in
// four, and always a spared one) or deletes one. Names are never reused,
// so that a name is one object.
func (d *driver) run(ctx context.Context) {
	tick := time.NewTicker(d.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var err error
		d.mu.Lock()
		n, roll, pick := len(d.live), d.rng.IntN(4), d.rng.IntN(max(1, len(d.live)))
		if n > 0 && d.spared[d.live[pick]] {
			roll = 0
		}
		d.mu.Unlock()
		switch {
		case n < d.population:
			err = d.create(ctx)
		case roll < 3:
			err = d.update(ctx, pick)
		default:
			err = d.delete(ctx, pick)
		}
		if err != nil && ctx.Err() == nil {
			d.mu.Lock()
			d.errors = append(d.errors, err.Error())
			d.mu.Unlock()
		}
	}
}

func (d *driver) create(ctx context.Context) error {
	_, err := d.createWhere(ctx, func(string) bool { return true })
	return err
}

// createWhere creates an object under the next free name that accept
// takes (names it skips are never used) and returns the name.
func (d *driver) createWhere(ctx context.Context, accept func(name string) bool) (string, error) {
	d.mu.Lock()
	var name string
	for {
		d.next++
		if name = fmt.Sprintf("obj-%04d", d.next); accept(name) {
			break
		}
	}
	d.mu.Unlock()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(d.ns)
	obj.SetName(name)
	obj.Object["spec"] = map[string]any{"field": "v0"}
	if err := fixtures.env.Client.Create(ctx, obj); err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.live = append(d.live, name)
	d.created++
	return name, nil
}

// spare keeps the objects (by namespace/name, as activity names them)
// from deletion from now on.
func (d *driver) spare(objects []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.spared == nil {
		d.spared = map[string]bool{}
	}
	for _, o := range objects {
		if ns, name, _ := strings.Cut(o, "/"); ns == d.ns {
			d.spared[name] = true
		}
	}
}

func (d *driver) update(ctx context.Context, i int) error {
	d.mu.Lock()
	name := d.live[i]
	d.updated++
	value := fmt.Sprintf("v%d", d.updated)
	d.mu.Unlock()
	patch := fmt.Sprintf(`{"spec":{"field":%q}}`, value)
	if err := fixtures.env.Client.Patch(ctx, d.object(name), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("update %s: %w", name, err)
	}
	return nil
}

// delete asks for the deletion; the owner's delete handler completes it,
// whenever there is an owner.
func (d *driver) delete(ctx context.Context, i int) error {
	d.mu.Lock()
	name := d.live[i]
	d.live = append(d.live[:i], d.live[i+1:]...)
	d.deleted++
	d.mu.Unlock()
	if err := fixtures.env.Client.Delete(ctx, d.object(name)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

func (d *driver) object(name string) *unstructured.Unstructured { return newObject(d.ns, name) }

// newObject is a KopfExample to name in requests.
func newObject(ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// summary says what the driver did.
func (d *driver) summary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := fmt.Sprintf("the driver created %d objects, updated %d times, deleted %d", d.created, d.updated, d.deleted)
	if len(d.errors) > 0 {
		s += fmt.Sprintf("; %d requests failed, the first: %s", len(d.errors), d.errors[0])
	}
	return s
}
