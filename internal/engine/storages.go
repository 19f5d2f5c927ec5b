package engine

import (
	"fmt"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// The progress and diff-base storages may be the operator's own
// (Options.ProgressStorage, DiffBaseStorage). A panic in one of them ends
// the cycle at once, as Kopf's exception there escapes its cycle: the
// cycle writes nothing (what it did is done again), the object is
// throttled as after any unexpected error, and the log line carries the
// stack. Going on with whatever the storage did not return would run
// handlers on a cause that nobody detected.

// storagePanic is the error of a cycle that a storage's panic ended.
type storagePanic struct {
	// method names the storage's method: "ProgressStorage.Store".
	method string
	p      *contain.Panic
}

func (e *storagePanic) Error() string { return fmt.Sprintf("%s panicked: %v", e.method, e.p.Value) }
func (e *storagePanic) Unwrap() error { return e.p }

// storageGuard contains the panics of one kind's storages: it counts them
// and ends the cycle (contain.Unwind, up to reconciler.runCycle).
type storageGuard struct {
	kind string
}

// run calls the storage's method (its label in the metrics, and its name
// in the log); a panic ends the cycle.
func (g storageGuard) run(storage, method string, fn func()) {
	if p := contain.Call(fn); p != nil {
		metrics.CallbackPanicked(g.kind, metrics.CallbackStorage, storage)
		contain.Unwind(&storagePanic{method: method, p: p})
	}
}

// guardedProgress is a progress storage whose panics end the cycle.
type guardedProgress struct {
	storageGuard
	s progress.Storage
}

func (g guardedProgress) Fetch(body map[string]any, id string) (r *progress.Record, err error) {
	g.run(metrics.StorageProgress, "ProgressStorage.Fetch", func() { r, err = g.s.Fetch(body, id) })
	return r, err
}

func (g guardedProgress) Store(body map[string]any, p *patch.Patch, id string, r progress.Record) {
	g.run(metrics.StorageProgress, "ProgressStorage.Store", func() { g.s.Store(body, p, id, r) })
}

func (g guardedProgress) Purge(body map[string]any, p *patch.Patch, id string) {
	g.run(metrics.StorageProgress, "ProgressStorage.Purge", func() { g.s.Purge(body, p, id) })
}

func (g guardedProgress) Clear(essence map[string]any) {
	g.run(metrics.StorageProgress, "ProgressStorage.Clear", func() { g.s.Clear(essence) })
}

// guardedDiffBase is a diff-base storage whose panics end the cycle.
type guardedDiffBase struct {
	storageGuard
	s diffbase.Storage
}

func (g guardedDiffBase) Build(body map[string]any, extra []fields.Path) (essence map[string]any) {
	g.run(metrics.StorageDiffBase, "DiffBaseStorage.Build", func() { essence = g.s.Build(body, extra) })
	return essence
}

func (g guardedDiffBase) Fetch(body map[string]any) (essence map[string]any, err error) {
	g.run(metrics.StorageDiffBase, "DiffBaseStorage.Fetch", func() { essence, err = g.s.Fetch(body) })
	return essence, err
}

func (g guardedDiffBase) Store(body map[string]any, p *patch.Patch, essence map[string]any) (encoded string) {
	g.run(metrics.StorageDiffBase, "DiffBaseStorage.Store", func() { encoded = g.s.Store(body, p, essence) })
	return encoded
}

func (g guardedDiffBase) Forget(body map[string]any, p *patch.Patch) {
	g.run(metrics.StorageDiffBase, "DiffBaseStorage.Forget", func() { g.s.Forget(body, p) })
}

// guardStorages gives one kind's settings storages whose panics end the
// kind's cycles, counted under the kind.
func guardStorages(s Settings, kind string) Settings {
	g := storageGuard{kind: kind}
	if s.Progress != nil {
		s.Progress = guardedProgress{storageGuard: g, s: s.Progress}
	}
	if s.DiffBase != nil {
		s.DiffBase = guardedDiffBase{storageGuard: g, s: s.DiffBase}
	}
	return s
}
