package keys

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const example = "my-operator.example.com"

// The golden vectors below are the ones Python Kopf pins for its own key
// forming, so annotations written by either implementation are found by the
// other.
func TestV1Key(t *testing.T) {
	tests := []struct{ key, want string }{
		{"a_b.c-d/e", example + "/a_b.c-d.e"},
		{"x", example + "/x"},
		{strings.Repeat("x", 39), example + "/" + strings.Repeat("x", 39)},
		{strings.Repeat("x", 40), example + "/" + strings.Repeat("x", 30) + "xx-tEokcg"},
		{strings.Repeat("y", 40), example + "/" + strings.Repeat("y", 30) + "yy-VZlvhw"},
		{strings.Repeat("z", 40), example + "/" + strings.Repeat("z", 30) + "zz-LlPQyA"},
		{strings.Repeat("fn", 323), example + "/" + strings.Repeat("fn", 15) + "fn-Az-r.g"},
	}
	c := Convention{Prefix: example, V1: true}
	for _, tt := range tests {
		if got := c.V1Key(tt.key); got != tt.want {
			t.Errorf("V1Key(%.20q...) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestV2Key(t *testing.T) {
	tests := []struct{ key, want string }{
		{"a_b.c-d/e", example + "/a_b.c-d.e"},
		{"x", example + "/x"},
		{strings.Repeat("x", 63), example + "/" + strings.Repeat("x", 63)},
		{strings.Repeat("x", 64), example + "/" + strings.Repeat("x", 54) + "xx-SItAqA"},
		{strings.Repeat("y", 64), example + "/" + strings.Repeat("y", 54) + "yy-0d251g"},
		{strings.Repeat("z", 64), example + "/" + strings.Repeat("z", 54) + "zz-E7wvIA"},
		{strings.Repeat("fn", 323), example + "/" + strings.Repeat("fn", 27) + "fn-Az-r.g"},
		{"main.<locals>.fn", example + "/main._locals_.fn"},
	}
	c := Convention{Prefix: example, V1: true}
	for _, tt := range tests {
		if got := c.V2Key(tt.key); got != tt.want {
			t.Errorf("V2Key(%.20q...) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestKeys(t *testing.T) {
	tests := []struct {
		name string
		c    Convention
		key  string
		body map[string]any
		want []string
	}{
		{"same V1 and V2 once", Convention{Prefix: DefaultPrefix, V1: true}, "...", nil,
			[]string{"kopf.zalando.org/..."}},
		{"V2 then V1 when they differ", Convention{Prefix: DefaultPrefix, V1: true}, strings.Repeat(".", 64), nil,
			[]string{Convention{Prefix: DefaultPrefix}.V2Key(strings.Repeat(".", 64)), Convention{Prefix: DefaultPrefix}.V1Key(strings.Repeat(".", 64))}},
		{"no V1 when disabled", Convention{Prefix: DefaultPrefix}, strings.Repeat(".", 64), nil,
			[]string{Convention{Prefix: DefaultPrefix}.V2Key(strings.Repeat(".", 64))}},
		{"field handler id", Convention{Prefix: DefaultPrefix, V1: true}, "create_fn/spec.field", nil,
			[]string{"kopf.zalando.org/create_fn.spec.field"}},
		{"replicaset of a deployment", Convention{Prefix: "kopf.dev", V1: true}, "xyz",
			map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "Deployment"}}}},
			[]string{"kopf.dev/xyz-ofDRS"}},
		{"replicaset of something else", Convention{Prefix: "kopf.dev", V1: true}, "xyz",
			map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "OtherOwner"}}}},
			[]string{"kopf.dev/xyz"}},
		{"other kind owned by a deployment", Convention{Prefix: "kopf.dev", V1: true}, "xyz",
			map[string]any{"kind": "OtherKind", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "Deployment"}}}},
			[]string{"kopf.dev/xyz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.c.Keys(tt.key, tt.body)); diff != "" {
				t.Errorf("Keys() -want +got:\n%s", diff)
			}
		})
	}
}

func TestMarkedPrefixes(t *testing.T) {
	got := MarkedPrefixes([]string{
		"kopf.zalando.org/x",
		"sub.kopf.zalando.org/y",
		"my.example.com/kopf-managed",
		"my.example.com/other",
		"unrelated.example.com/z",
		"no-prefix",
		"notkopf.zalando.org.example.com/z",
	})
	want := map[string]bool{"kopf.zalando.org": true, "sub.kopf.zalando.org": true, "my.example.com": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MarkedPrefixes() -want +got:\n%s", diff)
	}
}

func TestMarker(t *testing.T) {
	tests := map[string]string{
		"kopf.zalando.org":  "",
		"kopf.example.com":  "",
		"my-op.example.com": "my-op.example.com/kopf-managed",
		"":                  "",
	}
	for prefix, want := range tests {
		if got := (Convention{Prefix: prefix}).Marker(); got != want {
			t.Errorf("Marker(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func TestPrefixTooLong(t *testing.T) {
	if (Convention{Prefix: strings.Repeat("x", 189)}).PrefixTooLong() {
		t.Error("a 189-character prefix must fit")
	}
	if !(Convention{Prefix: strings.Repeat("x", 190)}).PrefixTooLong() {
		t.Error("a 190-character prefix must be reported as too long")
	}
}

// The cached keys are the keys formed anew, for every convention, plain,
// hashed and marked keys alike, on the first call and on later ones.
func TestKeysCachedEqualFormed(t *testing.T) {
	conventions := []Convention{
		{Prefix: DefaultPrefix, V1: true}, {Prefix: DefaultPrefix}, {Prefix: example, V1: true}, {Prefix: example}, {},
	}
	ids := []string{"create_fn", "create_fn/spec.field", "main.<locals>.fn", "ключ/значение",
		strings.Repeat("x", 40), strings.Repeat("x", 64), strings.Repeat("fn", 323)}
	owned := map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "Deployment"}}}}
	for _, c := range conventions {
		for _, id := range ids {
			for _, body := range []map[string]any{nil, owned} {
				want := c.form(MarkKey(id, body))
				for call := range 2 {
					got := c.Keys(id, body)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%+v, %.20q, call %d: Keys() -formed +cached:\n%s", c, id, call, diff)
					}
					if len(got) != cap(got) {
						t.Errorf("%+v, %.20q: the shared slice has room to append in place (len %d, cap %d)", c, id, len(got), cap(got))
					}
				}
			}
		}
	}
	// Two prefixes' keys of one id are kept apart, and so are V1 and not.
	if a, b := (Convention{Prefix: "a.example.com"}).Keys("fn", nil), (Convention{Prefix: "b.example.com"}).Keys("fn", nil); a[0] == b[0] {
		t.Errorf("two prefixes share a key: %q", a[0])
	}
	long := strings.Repeat("x", 64)
	if with, without := (Convention{Prefix: example, V1: true}).Keys(long, nil), (Convention{Prefix: example}).Keys(long, nil); len(with) != 2 || len(without) != 1 {
		t.Errorf("V1 keys: %q with, %q without", with, without)
	}
}

// Past the limit, keys are formed on every call and none is kept.
func TestKeysPastTheLimit(t *testing.T) {
	formed.mu.Lock()
	saved := formed.keys
	full := make(map[formedID][]string, formedLimit)
	for i := range formedLimit {
		full[formedID{prefix: "filler", key: strconv.Itoa(i)}] = nil
	}
	formed.keys = full
	formed.mu.Unlock()
	t.Cleanup(func() {
		formed.mu.Lock()
		formed.keys = saved
		formed.mu.Unlock()
	})
	c := Convention{Prefix: example, V1: true}
	key := strings.Repeat("z", 40)
	for range 2 {
		if diff := cmp.Diff([]string{c.V2Key(key), c.V1Key(key)}, c.Keys(key, nil)); diff != "" {
			t.Errorf("Keys() past the limit -want +got:\n%s", diff)
		}
	}
	formed.mu.RLock()
	defer formed.mu.RUnlock()
	if len(formed.keys) != formedLimit {
		t.Errorf("%d keys kept, want the limit, %d", len(formed.keys), formedLimit)
	}
}

// BenchmarkKeys is a handler's keys as every cycle asks for them: kept,
// and formed anew.
func BenchmarkKeys(b *testing.B) {
	c := Convention{Prefix: DefaultPrefix, V1: true}
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			_ = c.Keys("create_fn", nil)
		}
	})
	b.Run("formed", func(b *testing.B) {
		for b.Loop() {
			_ = c.form("create_fn")
		}
	})
}
