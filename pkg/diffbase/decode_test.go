package diffbase

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plainTexts are texts that parsePlain decodes itself or leaves to
// encoding/json; the fuzz test starts from them.
var plainTexts = []string{
	`{"spec":{"duration":"1m","field":"value","items":["item1","item2"]},"metadata":{"labels":{"somelabel":"somevalue"},"annotations":{"someannotation":"somevalue"}}}` + "\n",
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e3`, `-12.25E-2`, `1E+2`, `"x"`, ` { "a" : [ 1 , 2 , { } , [ ] ] } `,
	`{"a":1,"a":2}`, `{"n":12345678901234567890}`, `{"big":1e400}`, `{"f":0.1}`,
	`{"s":"quote \" backslash \\ slash \/ \b\f\n\r\t end"}`, `{"u":"\u00e9\ud83d\ude00"}`, `{"lone":"\ud800"}`,
	`{"utf8":"héllo wörld ✓"}`, "{\"bad\":\"\xff\"}", "{\"ctl\":\"a\x01b\"}", `{"x":"\q"}`,
	`{`, `{"a"`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `nul`, `{"a":1}x`, `"unterminated`,
	`{"a":{"b":{"c":{"d":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}}}`,
}

// Whatever parsePlain decodes, it decodes as encoding/json does; the
// plain text the engine writes it decodes itself.
func TestParsePlainIsEncodingJSON(t *testing.T) {
	for _, text := range plainTexts {
		checkPlain(t, text)
	}
	essence := map[string]any{"spec": map[string]any{"field": "value", "n": int64(3), "list": []any{"a", 1.5, true, nil}},
		"metadata": map[string]any{"labels": map[string]any{"l": "v"}, "annotations": map[string]any{"a": "multi\nline \"quoted\""}}}
	encoded := string(Encode(essence)) + "\n"
	if _, ok := parsePlain(encoded); !ok {
		t.Errorf("the engine's own encoding is left to encoding/json: %s", encoded)
	}
	checkPlain(t, encoded)
	for _, text := range []string{`{"u":"\u00e9"}`, "{\"bad\":\"\xff\"}", `{"big":1e400}`, `{"a":1}x`} {
		if _, ok := parsePlain(text); ok {
			t.Errorf("parsePlain decoded %q itself, want it left to encoding/json", text)
		}
	}
}

func FuzzParsePlain(f *testing.F) {
	for _, text := range plainTexts {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) { checkPlain(t, text) })
}

// checkPlain: where parsePlain decodes text, encoding/json decodes it to
// the same value; and decode gives what encoding/json gives.
func checkPlain(t *testing.T, text string) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal([]byte(text), &want)
	got, ok := parsePlain(text)
	if ok {
		if wantErr != nil {
			t.Fatalf("parsePlain(%q) = %v, but encoding/json fails: %v", text, got, wantErr)
		}
		// reflect.DeepEqual first: cmp.Diff takes exponential time over
		// deeply nested lists.
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("parsePlain(%q) -encoding/json +parsePlain:\n%s", text, cmp.Diff(want, got))
		}
	}
	essence, err := decode(text)
	m, isMap := want.(map[string]any)
	switch {
	case strings.TrimSpace(text) == "":
		// decode's own error, before any decoding
	case wantErr != nil:
		if err == nil || err.Error() != wantErr.Error() {
			t.Fatalf("decode(%q) error %v, want encoding/json's %v", text, err, wantErr)
		}
	case want == nil:
		if essence != nil || err != nil {
			t.Fatalf("decode(%q) = %v, %v, want none", text, essence, err)
		}
	case isMap:
		if !reflect.DeepEqual(m, essence) || err != nil {
			t.Fatalf("decode(%q) error %v, -encoding/json +decode:\n%s", text, err, cmp.Diff(m, essence))
		}
	case err == nil:
		t.Fatalf("decode(%q) = %v, want an error: not an object", text, essence)
	}
}
