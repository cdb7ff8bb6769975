package toolresult

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func lines(prefix string, n int) string {
	var sb strings.Builder
	for i := range n {
		sb.WriteString(prefix)
		sb.WriteString(strings.Repeat("x", 40))
		sb.WriteString(" ")
		sb.WriteString(strings.Repeat("y", i%7))
		sb.WriteString("\n")
	}
	return sb.String()
}

func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var out []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	for dec.More() {
		k, _ := dec.Token()
		out = append(out, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestCompressInput(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		ok    bool
		keys  []string
		wants []string
	}{
		{"write", `{"file_path":"src/store.go","content":` + string(mustJSON(lines("line ", 200))) + `}`, true, []string{"file_path", "content"}, []string{"src/store.go", "line xxxx", "190 more lines", "sha256 ", "recall b7"}},
		{"key order kept", `{"z":` + string(mustJSON(lines("z ", 100))) + `,"a":1,"m":[true,null,2.5]}`, true, []string{"z", "a", "m"}, []string{`"a":1`, `"m":[true,null,2.5]`}},
		{"multiedit nested", `{"file_path":"a.go","edits":[{"old_string":` + string(mustJSON(lines("old ", 60))) + `,"new_string":"short"}]}`, true, []string{"file_path", "edits"}, []string{`"new_string":"short"`, "more lines"}},
		{"short input", `{"command":"go test ./..."}`, false, nil, nil},
		{"not an object", `[` + string(mustJSON(lines("x", 100))) + `]`, false, nil, nil},
		{"not JSON", `{"a":` + strings.Repeat("x", 2000), false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := CompressInput(json.RawMessage(tt.in), "b7", InputLimits{})
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v: %s", ok, tt.ok, out)
			}
			if !ok {
				if string(out) != tt.in {
					t.Errorf("input changed although not ok")
				}
				return
			}
			if !json.Valid(out) || len(out) >= len(tt.in) {
				t.Fatalf("invalid or not shorter: %s", out)
			}
			if got := keys(t, out); strings.Join(got, ",") != strings.Join(tt.keys, ",") {
				t.Errorf("keys %v, want %v", got, tt.keys)
			}
			var m map[string]any
			_ = json.Unmarshal(out, &m)
			s := string(out)
			for _, w := range tt.wants {
				if !strings.Contains(s, w) {
					t.Errorf("%q missing from %s", w, s)
				}
			}
		})
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func TestClipInputAndText(t *testing.T) {
	in, _ := json.Marshal(map[string]string{"command": "cat > f.txt <<'EOF'\n" + strings.Repeat("日本語のテキスト\n", 500) + "EOF"})
	out, ok := ClipInput(in, 300, "b9")
	if !ok || !json.Valid(out) || len(out) > 700 || !strings.Contains(string(out), "recall b9") {
		t.Fatalf("ClipInput: ok %v, %d bytes: %s", ok, len(out), out)
	}
	for _, n := range []int{0, 1, 5, 50, 333} {
		s := ClipText(strings.Repeat("héllo wörld ✓\n", 200), n, "[cut]")
		if !utf8.ValidString(s) || !strings.Contains(s, "[cut]") {
			t.Errorf("ClipText(%d): invalid UTF-8 or no note", n)
		}
	}
	if s := ClipText("short", 100, "[cut]"); s != "short" {
		t.Errorf("a short text changed: %q", s)
	}
}
