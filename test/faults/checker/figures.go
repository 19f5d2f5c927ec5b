package checker

import (
	"slices"
	"time"

	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// Distribution summarises durations; N = 0 leaves the rest zero.
type Distribution struct {
	N                     int
	Min, Median, P95, Max time.Duration
}

// distribution computes the nearest-rank percentiles.
func distribution(ds []time.Duration) Distribution {
	if len(ds) == 0 {
		return Distribution{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Distribution{N: len(s), Min: s[0], Median: rank(0.5), P95: rank(0.95), Max: s[len(s)-1]}
}

// KindFigures are the figures of one kind of fault.
type KindFigures struct {
	Kind   string
	Faults int
	// Takeover is, per fault whose victim's objects moved, the time from
	// its start to the first activity of a new actor on one of them.
	Takeover Distribution
	// Gap is, per moved object, from the old owner's last activity to
	// the new owner's first; Negative counts those below zero.
	Gap      Distribution
	Negative int
	// Stuck counts faults whose victim had objects of which none moved
	// (and not all were deleted meanwhile).
	Stuck int
	// Duplicates counts create handlers completed twice, laid at this
	// kind's door; Overlaps the overlaps it is the cause of. Kind "" has
	// those that no fault explains.
	Duplicates, Overlaps int
}

// kinds computes the figures of every kind that occurred, in the order
// of faultlog.Kinds, then any other.
func kinds(r Report, faults []faultlog.Entry) []KindFigures {
	byKind := map[string]*KindFigures{}
	var order []string
	get := func(kind string) *KindFigures {
		if byKind[kind] == nil {
			byKind[kind] = &KindFigures{Kind: kind}
			order = append(order, kind)
		}
		return byKind[kind]
	}
	for _, f := range faults {
		if f.IsFault() {
			get(f.Kind).Faults++
		}
	}
	takeover := map[string][]time.Duration{}
	gaps := map[string][]time.Duration{}
	for _, t := range r.Takeovers {
		k := get(t.Fault.Kind)
		if t.Moved > 0 {
			takeover[k.Kind] = append(takeover[k.Kind], t.First)
		} else if t.Objects > t.Gone+t.Later {
			k.Stuck++
		}
		for _, g := range t.Gaps {
			gaps[k.Kind] = append(gaps[k.Kind], g.Gap)
			if g.Gap < 0 {
				k.Negative++
			}
		}
	}
	for _, d := range r.Duplicates {
		get(d.Kind).Duplicates++
	}
	for _, o := range r.Overlaps {
		get(o.Cause.Kind).Overlaps++
	}
	out := []KindFigures{}
	for _, kind := range append(slices.Clone(faultlog.Kinds), order...) {
		k, ok := byKind[kind]
		if !ok || slices.ContainsFunc(out, func(o KindFigures) bool { return o.Kind == kind }) {
			continue
		}
		k.Takeover, k.Gap = distribution(takeover[kind]), distribution(gaps[kind])
		out = append(out, *k)
	}
	return out
}
