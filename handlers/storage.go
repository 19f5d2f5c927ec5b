package handlers

import (
	"github.com/kopf-go/kopf/internal/diffbase"
	"github.com/kopf-go/kopf/internal/fields"
	"github.com/kopf-go/kopf/internal/keys"
	"github.com/kopf-go/kopf/internal/progress"
)

// Where the engine keeps its state on the objects (Kopf's
// settings.persistence): progress records per handler, and the last handled
// configuration. Options.ProgressStorage and Options.DiffBaseStorage take
// them; the defaults are Kopf's.
type (
	// ProgressStorage keeps per-handler progress records.
	ProgressStorage = progress.Storage
	// DiffBaseStorage keeps the last handled configuration.
	DiffBaseStorage = diffbase.Storage
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

// FieldPaths parses dotted field paths ("spec.replicas"), for
// DiffBaseInAnnotations.Ignored and DiffBaseInStatus.Ignored.
func FieldPaths(paths ...string) []fields.Path {
	out := make([]fields.Path, len(paths))
	for i, p := range paths {
		out[i] = fields.Parse(p)
	}
	return out
}
