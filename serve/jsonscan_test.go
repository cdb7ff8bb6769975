package serve

import (
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestValueEnd(t *testing.T) {
	tests := []struct {
		in  string
		end int // -1: error
	}{
		{`"abc"`, 5},
		{`"a\"b"`, 6},
		{`"a\\"x`, 5},
		{`"a\\\"b"`, 8},
		{`{"a":[1,2,{"b":"}"}]} tail`, 21},
		{`[1, "]", {"x": "\\"}]`, 21},
		{`123,`, 3},
		{`true}`, 4},
		{`"unterminated`, -1},
		{`{"a":1`, -1},
		{`"\\\\"`, 6},
	}
	for _, tt := range tests {
		got, err := valueEnd([]byte(tt.in), 0)
		if tt.end < 0 {
			if err == nil {
				t.Errorf("valueEnd(%q) = %d, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.end {
			t.Errorf("valueEnd(%q) = %d, %v; want %d", tt.in, got, err, tt.end)
		}
	}
}

// FuzzScan: the scanner never panics, and on valid JSON its members and
// elements cover exactly what encoding/json sees.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"messages":[{"role":"user","content":"x"}]}`, `[1,"\"",{}]`, `{"a":"\\"}`, `{`} {
		f.Add([]byte(s))
	}
	f.Add(sim{name: "f", resultSize: 60, say: 20}.body(2))
	f.Add(chatBody("f", 2, 40))
	f.Add(responsesBody(2))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The cached parse (twice: the second from the cache) is the fresh one.
		pc := newParseCache()
		for range 2 {
			for _, p := range []struct {
				cached func([]byte) (*request, error)
				fresh  func([]byte) (*request, error)
			}{{pc.anthropic, parseAnthropic}, {pc.chat, parseChat}, {pc.responses, parseResponses}} {
				got, err := p.cached(b)
				want, werr := p.fresh(b)
				if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("cached parse %+v, %v; fresh %+v, %v", got, err, want, werr)
				}
			}
		}
		if !json.Valid(b) {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return
		}
		s := skipWS(b, 0)
		e, err := valueEnd(b, s)
		if err != nil {
			t.Fatalf("valid JSON: %v", err)
		}
		n := 0
		if err := members(b, span{s, e}, func(key []byte, val span) error {
			n++
			if !json.Valid(b[val.s:val.e]) {
				t.Fatalf("member value %q is not a JSON value", b[val.s:val.e])
			}
			if b[val.s] == '[' {
				// elemSpans reads an array as elems does, and ends where valueEnd does.
				var want []span
				if err := elems(b, val, func(_ int, v span) error { want = append(want, v); return nil }); err != nil {
					t.Fatalf("elems of valid JSON: %v", err)
				}
				got, end, err := elemSpans(b, val.s)
				if err != nil || end != val.e || !reflect.DeepEqual(got, want) {
					t.Fatalf("elemSpans %v end %d, %v; want %v end %d", got, end, err, want, val.e)
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("members of valid JSON: %v", err)
		}
		if n < len(m) {
			t.Fatalf("members saw %d of %d keys", n, len(m))
		}
	})
}

// TestStr: str and strs decode as encoding/json does, escapes and all.
func TestStr(t *testing.T) {
	for _, raw := range []string{
		`"plain"`, `"a\"b"`, `"tab\tnl\nback\\slash\/"`, `"\b\f\r"`, `"em — dash"`, `"\u00e9\ud83d\ude00"`,
		`"bad \x"`, "\"ctl \x01 \\n\"", "\"\xff\xfe \\n\"", `"end\\"`, `"x\n"`, `"\n\n"`, `""`,
	} {
		var want string
		json.Unmarshal([]byte(raw), &want)
		if got := str([]byte(raw), span{0, len(raw)}); got != want {
			t.Errorf("str(%s) = %q, want %q", raw, got, want)
		}
		arr := "[" + raw + "," + raw + "]"
		var wants []string
		werr := json.Unmarshal([]byte(arr), &wants)
		gots, err := strs([]byte(arr))
		if werr == nil && (err != nil || len(gots) != 2 || gots[0] != wants[0] || gots[1] != wants[1]) {
			t.Errorf("strs(%s) = %q, %v; want %q", arr, gots, err, wants)
		}
	}
}

// TestSpliced: the spliced body read segment by segment (again and again,
// as the HTTP client replays it) is the materialized one.
func TestSpliced(t *testing.T) {
	body := []byte(`{"a":"0123456789","b":[1,2,3],"c":"end"}`)
	tests := []struct {
		name string
		sp   []splice
		want string
	}{
		{"none", nil, string(body)},
		{"replace", []splice{{s: 5, e: 17, repl: []byte(`"x"`)}}, `{"a":"x","b":[1,2,3],"c":"end"}`},
		{"insert and cut", []splice{{s: 5, e: 5, repl: []byte(`"y",`)}, {s: 25, e: 27}}, `{"a":"y","0123456789","b":[1,3],"c":"end"}`},
		{"at the ends", []splice{{s: 0, e: 1, repl: []byte(`[`)}, {s: len(body) - 1, e: len(body), repl: []byte(`]`)}}, `["a":"0123456789","b":[1,2,3],"c":"end"]`},
	}
	for _, tt := range tests {
		x := &spliced{body: body, sp: tt.sp}
		if got := string(x.bytes()); got != tt.want {
			t.Fatalf("%s: bytes %s, want %s", tt.name, got, tt.want)
		}
		if x.len() != len(tt.want) {
			t.Errorf("%s: len %d, want %d", tt.name, x.len(), len(tt.want))
		}
		for range 2 {
			got, err := io.ReadAll(x.reader())
			if err != nil || string(got) != tt.want {
				t.Errorf("%s: read %s, %v; want %s", tt.name, got, err, tt.want)
			}
			var sb strings.Builder
			if _, err := x.reader().WriteTo(&sb); err != nil || sb.String() != tt.want {
				t.Errorf("%s: WriteTo %s, %v; want %s", tt.name, sb.String(), err, tt.want)
			}
		}
	}
}
