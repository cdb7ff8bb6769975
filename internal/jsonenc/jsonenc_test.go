package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"html kept", map[string]string{"cmd": "a < b && c > d"}, `{"cmd":"a < b && c > d"}`},
		{"keys sorted, compact", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{"struct order", struct {
			Z string `json:"z"`
			A []int  `json:"a,omitempty"`
		}{Z: "x"}, `{"z":"x"}`},
		{"raw message kept", json.RawMessage(`{"k":"<v>"}`), `{"k":"<v>"}`},
		{"line separators escaped as json does", "a\u2028b", `"a\u2028b"`},
		{"nil", nil, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMarshalError(t *testing.T) {
	if _, err := Marshal(math.Inf(1)); err == nil {
		t.Error("Marshal(+Inf) succeeded, want an error")
	}
}
