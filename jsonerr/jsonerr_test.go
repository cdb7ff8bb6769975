package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	type probe struct {
		Role string `json:"role"`
	}
	tests := []struct {
		data string
		dst  any
		want string
	}{
		{`{"role": 5}`, &probe{}, `line 1, column 10: "role" must be a string, not a number`},
		{"\n\n[1,2]", &probe{}, "line 3, column 1: expected an object, found an array"},
		{"{\n \"a\": x}", &probe{}, "line 2, column 7: unexpected character 'x' looking for beginning of value"},
		{`{"a": `, &probe{}, "the JSON ends too early"},
		{``, &probe{}, "the file is empty"},
		{`{"window": "big"}`, &struct {
			Window int `json:"window"`
		}{}, `"window" must be a whole number, not a string`},
	}
	for _, tt := range tests {
		err := json.Unmarshal([]byte(tt.data), tt.dst)
		got := Describe([]byte(tt.data), err, "a JSON object")
		if !strings.Contains(got, tt.want) {
			t.Errorf("Describe(%q) = %q, want %q", tt.data, got, tt.want)
		}
		if strings.Contains(got, "Go ") || strings.Contains(got, "jsonerr.") {
			t.Errorf("Describe(%q) = %q names a Go type", tt.data, got)
		}
	}
}
