// Package progress stores per-handler progress records on the handled
// object, in Kopf's format: one compact JSON record per handler in an
// annotation (and, read-only, Kopf's legacy status.kopf.progress).
package progress

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/kopf-go/kopf/internal/isotime"
	"github.com/kopf-go/kopf/internal/pyjson"
)

// Record is one handler's progress, as persisted.
//
// Field order and omission follow Kopf exactly: started, stopped, delayed,
// purpose, retries, success, failure, message, subrefs; absent values are
// left out, while retries/success/failure are always written.
type Record struct {
	Started *time.Time
	Stopped *time.Time
	Delayed *time.Time
	Purpose string
	Retries int
	Success bool
	Failure bool
	Message *string
	Subrefs []string
}

// MarshalJSON writes the record compactly in Kopf's key order, with the
// string escaping of Python's json.dumps: no HTML escaping, non-ASCII
// characters as \u escapes. (json.Marshal of a Record re-adds HTML
// escaping; the storages call MarshalJSON directly.)
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	field := func(name string, v any) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`"` + name + `":`)
		_ = pyjson.Write(&b, v) // strings, ints, bools and []string cannot fail
	}
	if r.Started != nil {
		field("started", isotime.Format(*r.Started))
	}
	if r.Stopped != nil {
		field("stopped", isotime.Format(*r.Stopped))
	}
	if r.Delayed != nil {
		field("delayed", isotime.Format(*r.Delayed))
	}
	if r.Purpose != "" {
		field("purpose", r.Purpose)
	}
	field("retries", r.Retries)
	field("success", r.Success)
	field("failure", r.Failure)
	if r.Message != nil {
		field("message", *r.Message)
	}
	if len(r.Subrefs) > 0 {
		subrefs := slices.Clone(r.Subrefs)
		slices.Sort(subrefs)
		field("subrefs", subrefs)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// wireRecord is the lenient decoding form: every field optional, unknown
// fields ignored, nulls accepted (Kopf's verbose mode writes them).
type wireRecord struct {
	Started *string  `json:"started"`
	Stopped *string  `json:"stopped"`
	Delayed *string  `json:"delayed"`
	Purpose *string  `json:"purpose"`
	Retries *int     `json:"retries"`
	Success *bool    `json:"success"`
	Failure *bool    `json:"failure"`
	Message *string  `json:"message"`
	Subrefs []string `json:"subrefs"`
}

// UnmarshalJSON reads a record written by Kopf or by this library. Values of
// the wrong type or unparseable timestamps are errors: the caller decides
// what a malformed record means.
func (r *Record) UnmarshalJSON(data []byte) error {
	var w wireRecord
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	var out Record
	for _, ts := range []struct {
		src *string
		dst **time.Time
	}{{w.Started, &out.Started}, {w.Stopped, &out.Stopped}, {w.Delayed, &out.Delayed}} {
		if ts.src == nil {
			continue
		}
		t, err := isotime.Parse(*ts.src)
		if err != nil {
			return err
		}
		*ts.dst = &t
	}
	if w.Purpose != nil {
		out.Purpose = *w.Purpose
	}
	if w.Retries != nil {
		out.Retries = *w.Retries
	}
	if w.Success != nil {
		out.Success = *w.Success
	}
	if w.Failure != nil {
		out.Failure = *w.Failure
	}
	out.Message = w.Message
	out.Subrefs = w.Subrefs
	*r = out
	return nil
}

// Equal reports whether two records would be stored identically.
func (r Record) Equal(o Record) bool {
	a, _ := r.MarshalJSON()
	b, _ := o.MarshalJSON()
	return bytes.Equal(a, b)
}
