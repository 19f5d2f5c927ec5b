// Package pyjson writes JSON text exactly as Python's json.dumps does with
// Kopf's separators: compact, map keys sorted (as encoding/json does), no
// HTML escaping, and non-ASCII characters escaped as \u sequences. The state
// kopf-go stores on objects is then byte-identical to Python Kopf's.
package pyjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf16"
)

// Marshal encodes a JSON-encodable value compactly. Plain JSON values
// (maps, slices, strings, numbers, booleans) cannot fail; anything else that
// json.Marshal rejects is returned as an error.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := Write(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write appends the encoded value to a buffer.
func Write(b *bytes.Buffer, v any) error {
	start := b.Len()
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Truncate(start)
		return err
	}
	b.Truncate(b.Len() - 1) // Encode appends a newline
	escaped := ASCII(b.Bytes()[start:])
	b.Truncate(start)
	b.Write(escaped)
	return nil
}

// ASCII escapes the non-ASCII characters (and DEL) of encoded JSON as
// Python's ensure_ascii does: \u escapes, with surrogate pairs beyond the
// basic plane. Such characters can only occur inside JSON strings.
func ASCII(raw []byte) []byte {
	if !slices.ContainsFunc(raw, func(c byte) bool { return c >= 0x7f }) {
		return raw
	}
	var b bytes.Buffer
	for _, r := range string(raw) {
		switch {
		case r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.Bytes()
}
