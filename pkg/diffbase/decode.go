package diffbase

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Every cycle of an object reads its last handled essence back from the
// annotation, and a fresh process does so for every object it starts
// over: decoding is most of the cost of a cycle that finds nothing to do.
// parsePlain decodes the JSON text the engine (or Kopf) writes there in
// one pass, without encoding/json's validating scan and reflection. It
// gives up (ok false) on anything it does not take exactly as
// encoding/json would (a \u escape, invalid UTF-8, a number out of range,
// deep nesting, malformed text), and decode then leaves the text to
// encoding/json: the value, or the error, is encoding/json's either way.

// maxPlainDepth bounds the nesting that parsePlain follows itself.
const maxPlainDepth = 64

// parsePlain decodes text as encoding/json decodes it into an any: maps
// of string to any, []any, string, float64, bool and nil.
func parsePlain(text string) (any, bool) {
	p := plainParser{s: text}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.s)
}

type plainParser struct {
	s string
	i int
}

func (p *plainParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *plainParser) value(depth int) (any, bool) {
	if p.i >= len(p.s) || depth > maxPlainDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *plainParser) literal(word string) bool {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return false
	}
	p.i += len(word)
	return true
}

func (p *plainParser) object(depth int) (any, bool) {
	p.i++ // {
	m := map[string]any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[key.(string)] = v // the last of duplicate keys wins, as in encoding/json
		p.space()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (p *plainParser) array(depth int) (any, bool) {
	p.i++ // [
	out := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

// str reads a string whose escapes are the one-character ones and whose
// text is valid UTF-8; a string without escapes shares the text's memory.
func (p *plainParser) str() (any, bool) {
	p.i++ // "
	start := p.i
	ascii := true
	var b *strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			if b != nil {
				b.WriteString(s)
				s = b.String()
			}
			p.i++
			if !ascii && !utf8.ValidString(s) {
				return nil, false
			}
			return s, true
		case c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
			p.i++
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, false
			}
			unescaped, ok := simpleEscape(p.s[p.i+1])
			if !ok {
				return nil, false // \u and invalid escapes: encoding/json's
			}
			if b == nil {
				b = &strings.Builder{}
			}
			b.WriteString(p.s[start:p.i])
			b.WriteByte(unescaped)
			p.i += 2
			start = p.i
		default:
			p.i++
		}
	}
	return nil, false
}

// simpleEscape is the character of a one-character escape.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// number reads a number of JSON's grammar as a float64.
func (p *plainParser) number() (any, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return nil, false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		return nil, false // out of range: encoding/json's error
	}
	return f, true
}

func (p *plainParser) digits() int {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}
