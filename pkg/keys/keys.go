// Package keys forms annotation keys for the framework's per-object storages
// exactly as Kopf does: safe characters, the 63-character name limit, blake2b
// hash suffixes, legacy (V1) and current (V2) forms, and the markers that let
// Kopf-based operators recognise each other's annotations.
package keys

import (
	"encoding/base64"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Wire names shared by every Kopf-based operator.
const (
	// DefaultPrefix is the annotation prefix of Kopf's storages.
	DefaultPrefix = "kopf.zalando.org"
	// MarkerName is written under a custom prefix so that other Kopf-based
	// operators leave that prefix out of their essence.
	MarkerName = "kopf-managed"
	// MarkerValue is the value of the marker annotation.
	MarkerValue = "yes"
	// LastAppliedAnnotation is kubectl's own state, never part of the essence.
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	// ShardPrefix is the prefix of the labels and annotations by which a
	// sharded operator's replicas hand objects to each other (sharding.md);
	// they are never part of the essence.
	ShardPrefix = "shard.kopf.dev"

	maxNameLength = 63
	maxKeyLength  = 253
)

// knownPrefixes are prefixes that always belong to Kopf-based operators.
var knownPrefixes = []string{DefaultPrefix}

// Convention forms the keys of one annotation prefix.
type Convention struct {
	// Prefix is the annotation prefix without the slash, e.g. "kopf.zalando.org".
	Prefix string
	// V1 also writes (and purges) the legacy keys, whose 63-character limit
	// counted the prefix too. Kopf writes both by default.
	V1 bool
}

// PrefixTooLong reports whether keys under this prefix may exceed the
// 253-character limit of a whole annotation key (Kopf only warns about it).
func (c Convention) PrefixTooLong() bool { return len(c.Prefix) > maxKeyLength-maxNameLength-1 }

// Keys returns the annotation keys for a storage key, the V2 key first, then
// the V1 key when it differs. The body, when given, marks keys on objects
// whose annotations Kubernetes overwrites from their owners (see MarkKey).
//
// Every cycle asks for the keys of every handler, and their forming (safe
// characters, hashes) is the same each time: the keys are formed once per
// prefix and key and kept (up to formedLimit of them). The slice returned
// is shared: callers read it and never change it.
func (c Convention) Keys(key string, body map[string]any) []string {
	key = MarkKey(key, body)
	id := formedID{prefix: c.Prefix, v1: c.V1, key: key}
	formed.mu.RLock()
	out, ok := formed.keys[id]
	formed.mu.RUnlock()
	if ok {
		return out
	}
	out = c.form(key)
	formed.mu.Lock()
	if len(formed.keys) < formedLimit {
		formed.keys[id] = out
	}
	formed.mu.Unlock()
	return out
}

// form forms the keys of Keys, without the cache. Its slice is full
// (length = capacity), so that an append by a caller copies it.
func (c Convention) form(key string) []string {
	v2 := c.V2Key(key)
	if !c.V1 {
		return []string{v2}
	}
	if v1 := c.V1Key(key); v1 != v2 {
		return []string{v2, v1}
	}
	return []string{v2}
}

// formedLimit bounds the formed keys kept: handler ids are few, but
// sub-handlers' ids may be made up per object, and those past the limit
// are formed on every call instead.
const formedLimit = 4096

// formedID is what the keys of Keys depend on.
type formedID struct {
	prefix string
	v1     bool
	key    string
}

// formed are the keys formed so far, shared by every Convention.
var formed = struct {
	mu   sync.RWMutex
	keys map[formedID][]string
}{keys: map[formedID][]string{}}

// V1Key is the legacy key: the whole "prefix/name" fits in 63 characters,
// and a too long safe name is cut and suffixed with the hash of the safe name.
func (c Convention) V1Key(key string) string {
	safe := SafeKey(key)
	prefix := c.prefixWithSlash()
	suffix := ""
	if length(safe) > maxNameLength-length(prefix) {
		suffix = Suffix(safe)
	}
	limit := max(0, maxNameLength-length(prefix)-length(suffix))
	return prefix + cut(safe, limit) + suffix
}

// V2Key is the current key: only the name part is limited to 63 characters,
// and a too long raw key is hashed before its safe form is cut.
func (c Convention) V2Key(key string) string {
	suffix := ""
	if length(key) > maxNameLength {
		suffix = Suffix(key)
	}
	limit := max(0, maxNameLength-length(suffix))
	return c.prefixWithSlash() + cut(SafeKey(key), limit) + suffix
}

func (c Convention) prefixWithSlash() string {
	if c.Prefix == "" {
		return ""
	}
	return c.Prefix + "/"
}

// Marker returns the marker annotation key for this prefix, or "" when the
// prefix needs none (prefixes starting with "kopf." are recognised anyway).
func (c Convention) Marker() string {
	if c.Prefix == "" || strings.HasPrefix(c.Prefix, "kopf.") {
		return ""
	}
	return c.Prefix + "/" + MarkerName
}

// StoreMarker adds the marker annotation to the patch when the prefix needs
// one and neither the object nor the patch has it yet.
func (c Convention) StoreMarker(body map[string]any, p *patch.Patch) {
	marker := c.Marker()
	if marker == "" {
		return
	}
	if _, ok := fields.Resolve(body, fields.Path{"metadata", "annotations", marker}); ok {
		return
	}
	if _, ok := p.Get("metadata", "annotations", marker); ok {
		return
	}
	p.SetAnnotation(marker, MarkerValue)
}

// SafeKey replaces the characters that annotation names cannot hold.
func SafeKey(key string) string { return safeChars.Replace(key) }

// safeChars and safeBase64 are built once: a Replacer builds its tables
// on its first use, and is safe for concurrent use.
var (
	safeChars  = strings.NewReplacer("/", ".", "<", "_", ">", "_")
	safeBase64 = strings.NewReplacer("+", "-", "/", ".")
)

// Suffix is "-" plus the base64 (alphabet ending in "-" and ".") of the
// 4-byte blake2b digest of the key, with trailing "=", "-" and "." stripped.
func Suffix(key string) string {
	h, err := blake2b.New(4, nil)
	if err != nil {
		panic(err) // unreachable: 4 is a valid digest size and there is no key
	}
	h.Write([]byte(key))
	enc := base64.StdEncoding.EncodeToString(h.Sum(nil))
	enc = safeBase64.Replace(enc)
	return strings.TrimRight("-"+enc, "=-.")
}

// MarkKey adds "-ofDRS" to keys of ReplicaSets owned by Deployments, because
// Kubernetes copies a Deployment's annotations onto its ReplicaSets, and the
// two objects' framework state must not overwrite each other.
func MarkKey(key string, body map[string]any) string {
	if body == nil || body["kind"] != "ReplicaSet" {
		return key
	}
	meta, _ := body["metadata"].(map[string]any)
	owners, _ := meta["ownerReferences"].([]any)
	for _, o := range owners {
		if ref, ok := o.(map[string]any); ok && ref["kind"] == "Deployment" {
			return key + "-ofDRS"
		}
	}
	return key
}

// MarkedPrefixes returns the annotation prefixes (without the slash) that
// belong to Kopf-based operators: known prefixes, their subdomains, and any
// prefix that carries a marker annotation.
func MarkedPrefixes(annotationKeys []string) map[string]bool {
	out := map[string]bool{}
	for _, key := range annotationKeys {
		prefix, name, ok := strings.Cut(key, "/")
		if !ok {
			continue
		}
		if name == MarkerName {
			out[prefix] = true
			continue
		}
		for _, known := range knownPrefixes {
			if prefix == known || strings.HasSuffix(prefix, "."+known) {
				out[prefix] = true
			}
		}
	}
	return out
}

// length counts characters, not bytes, as Kopf (Python) does.
func length(s string) int { return utf8.RuneCountInString(s) }

// cut keeps the first n characters of s.
func cut(s string, n int) string {
	if length(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
