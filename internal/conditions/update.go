package conditions

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/pkg/fields"
)

// The status fields that Update writes.
const (
	FieldConditions         = "conditions"
	FieldObservedGeneration = "observedGeneration"
)

// Input is what Update needs of one cycle.
type Input struct {
	Progress Progress
	// Generation is the object's metadata.generation as the cycle read
	// it; zero: no generation is written (a kind without a status
	// subresource, whose generation every status write moves on, so that
	// no written one could ever match).
	Generation int64
	// Resume: the cause is a resume, whose success does not end a
	// permanent failure of the same generation (nothing has changed
	// since that failure; the resume handlers only ran again).
	Resume bool
	Now    time.Time
}

// Update is what goes into the object's status for the input, as status
// field → value: the conditions list with the engine's three in it (the
// other writers' entries as they are in conditions, the list as the
// object and the cycle's patch have it) and, once the cause is handled,
// observedGeneration. Empty when nothing changes. A condition's
// lastTransitionTime moves only when its status does
// (meta.SetStatusCondition's rule).
func Update(conditions any, observed any, in Input) map[string]any {
	list, _ := conditions.([]any)
	ours := Derive(in.Progress)
	if in.Resume && ours[0].Status == metav1.ConditionTrue && stalledAt(list, in.Generation) {
		return nil
	}
	out := map[string]any{}
	merged, changed := merge(list, ours, in.Generation, in.Now)
	if changed {
		out[FieldConditions] = merged
	}
	if in.Generation > 0 && in.Progress.Done() && !fields.Equal(observed, in.Generation) {
		out[FieldObservedGeneration] = in.Generation
	}
	return out
}

// stalledAt reports whether the list has Stalled True of the generation.
func stalledAt(list []any, generation int64) bool {
	i := find(list, Stalled)
	if i < 0 {
		return false
	}
	c, _ := list[i].(map[string]any)
	return c["status"] == string(metav1.ConditionTrue) && fields.Equal(c["observedGeneration"], generation)
}

// merge puts the engine's conditions into the list (in place of their
// types' entries, or appended), keeping every other entry as it is; it
// reports whether anything changed.
func merge(list []any, ours []metav1.Condition, generation int64, now time.Time) ([]any, bool) {
	out := append([]any(nil), list...)
	changed := false
	for _, c := range ours {
		c.ObservedGeneration = generation
		i := find(out, c.Type)
		if i < 0 {
			c.LastTransitionTime = metav1.NewTime(now)
			out = append(out, encode(c))
			changed = true
			continue
		}
		old, _ := out[i].(map[string]any)
		c.LastTransitionTime = metav1.NewTime(now)
		entry := encode(c)
		if ltt, ok := old["lastTransitionTime"]; ok && old["status"] == string(c.Status) {
			entry["lastTransitionTime"] = ltt
		}
		if !fields.Equal(old, entry) {
			out[i] = entry
			changed = true
		}
	}
	return out, changed
}

// find is the index of the list's entry of the type; -1 if none.
func find(list []any, kind string) int {
	for i, item := range list {
		if c, ok := item.(map[string]any); ok && c["type"] == kind {
			return i
		}
	}
	return -1
}

// encode is a condition as it stands in an object's status (as
// metav1.Condition encodes: no observedGeneration when zero).
func encode(c metav1.Condition) map[string]any {
	m := map[string]any{
		"type":               c.Type,
		"status":             string(c.Status),
		"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
		"reason":             c.Reason,
		"message":            c.Message,
	}
	if c.ObservedGeneration != 0 {
		m["observedGeneration"] = c.ObservedGeneration
	}
	return m
}

// Rebase takes the engine's conditions from ours (a list that a cycle
// decided on an older read of the object) into fresh (the list as the
// object has it now): the other writers' entries are taken as they are
// now, so that a write sent again after a conflict does not undo what
// they wrote meanwhile.
func Rebase(ours, fresh []any) []any {
	out := append([]any(nil), fresh...)
	for _, kind := range []string{Ready, Reconciling, Stalled} {
		i := find(ours, kind)
		if i < 0 {
			continue
		}
		if j := find(out, kind); j >= 0 {
			out[j] = ours[i]
		} else {
			out = append(out, ours[i])
		}
	}
	return out
}
