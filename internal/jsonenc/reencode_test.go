package jsonenc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReencode(t *testing.T) {
	drop := func(k string) bool { return k == "x" }
	upper := strings.ToUpper
	cases := []struct {
		name, in string
		drop     func(string) bool
		str      func(string) string
		want     string
	}{
		{"compact, order kept", `{ "b": 1, "a": [true, false, null, 1.50] }`, nil, nil, `{"b":1,"a":[true,false,null,1.50]}`},
		{"no HTML escaping", `{"s": "<a>&\u003c"}`, nil, nil, `{"s":"<a>&<"}`},
		{"drop at any depth", `{"x": {"y": 1}, "a": [{"x": 2, "b": 3}], "c": {"x": 4}}`, drop, nil, `{"a":[{"b":3}],"c":{}}`},
		{"strings, not keys", `{"k": ["v", {"k2": "w"}]}`, nil, upper, `{"k":["V",{"k2":"W"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dec := json.NewDecoder(strings.NewReader(tc.in))
			dec.UseNumber()
			var out bytes.Buffer
			if err := Reencode(dec, &out, tc.drop, tc.str); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %s, want %s", out.String(), tc.want)
			}
		})
	}
}

func TestReencodeBad(t *testing.T) {
	for _, in := range []string{`{"a": }`, `[1,`, ``} {
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		if err := Reencode(dec, &bytes.Buffer{}, nil, nil); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
