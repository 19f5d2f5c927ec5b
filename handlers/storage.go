package handlers

import (
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// Where the engine keeps its state on the objects (Kopf's
// settings.persistence): progress records per handler, and the last handled
// configuration. Options.ProgressStorage and Options.DiffBaseStorage take
// them; the defaults are Kopf's. Both are interfaces that an operator may
// implement itself (docs/handlers.md, "Storages"): their methods read the
// object's body and add what they write to the cycle's one Patch.
type (
	// ProgressStorage keeps per-handler progress records: Fetch reads a
	// handler's record (nil if none; an error if one is there but
	// unreadable), Store and Purge add writing and removing it to the
	// patch, and Clear removes the storage's own fields from an essence, so
	// that progress never looks like a change of the object.
	ProgressStorage = progress.Storage
	// ProgressRecord is one handler's progress, as Kopf persists it.
	ProgressRecord = progress.Record
	// DiffBaseStorage keeps the last handled configuration: Build makes an
	// object's essence without the storage's fields, Fetch reads the stored
	// one (nil if none), Store adds it to the patch and returns its encoded
	// form (for the size check), Forget takes it back out of the patch.
	DiffBaseStorage = diffbase.Storage
	// Patch collects a cycle's changes to an object, as one merge patch
	// (Cause.Patch, DaemonCause.Patch, and the storages' writes).
	Patch = patch.Patch
	// ProgressInStatus keeps progress records as maps in
	// status.<field>.<handler id> (Kopf's StatusProgressStorage); ReadOnly
	// reads them without writing any.
	ProgressInStatus = progress.Status
	// ProgressInMany reads a record from the first of its storages that
	// has one, and writes to and purges from all of them (Kopf's
	// MultiProgressStorage): to move from one storage to another, list the
	// new one first and the old one after it, read-only if it should no
	// longer be written.
	ProgressInMany = progress.Multi
	// KeyConvention forms annotation keys under a prefix, as Kopf does
	// (V1 also writes Kopf's legacy keys).
	KeyConvention = keys.Convention
	// ProgressInAnnotations keeps progress in annotations (Kopf's
	// AnnotationsProgressStorage).
	ProgressInAnnotations = progress.Annotations
	// DiffBaseInAnnotations keeps the last handled configuration in an
	// annotation (Kopf's AnnotationsDiffBaseStorage).
	DiffBaseInAnnotations = diffbase.Annotations
	// DiffBaseInStatus keeps it in status (Kopf's StatusDiffBaseStorage).
	DiffBaseInStatus = diffbase.Status
)

// NewDiffBaseInStatus keeps the last handled configuration in
// status.kopf.last-handled-configuration, as Kopf's StatusDiffBaseStorage.
func NewDiffBaseInStatus() *DiffBaseInStatus { return diffbase.NewStatus() }

// NewDiffBaseInAnnotations is the default: Kopf's annotation
// kopf.zalando.org/last-handled-configuration.
func NewDiffBaseInAnnotations() *DiffBaseInAnnotations { return diffbase.NewAnnotations() }

// NewProgressInAnnotations keeps progress in kopf.zalando.org/<id>
// annotations, V1 and V2 keys, as Kopf's AnnotationsProgressStorage.
func NewProgressInAnnotations() *ProgressInAnnotations { return progress.NewAnnotations() }

// NewProgressInStatus keeps progress in status.kopf.progress.<id>, as
// Kopf's StatusProgressStorage; field, if given, is another dotted path
// ("status.my-operator.progress").
func NewProgressInStatus(field ...string) *ProgressInStatus {
	path := fields.Path{"status", "kopf", "progress"}
	if len(field) > 0 {
		path = fields.Parse(field[0])
	}
	return &progress.Status{Field: path}
}

// NewProgressInMany combines storages, as Kopf's MultiProgressStorage.
func NewProgressInMany(storages ...ProgressStorage) ProgressInMany { return progress.Multi(storages) }

// NewSmartProgress is the default: annotations, plus Kopf's legacy records
// in status.kopf.progress read (never written), as Kopf's
// SmartProgressStorage.
func NewSmartProgress() ProgressInMany { return progress.NewSmart() }

// FieldPaths parses dotted field paths ("spec.replicas"), for
// DiffBaseInAnnotations.Ignored and DiffBaseInStatus.Ignored.
func FieldPaths(paths ...string) []fields.Path {
	out := make([]fields.Path, len(paths))
	for i, p := range paths {
		out[i] = fields.Parse(p)
	}
	return out
}
