package serve

import (
	"strings"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		name   string
		recall bool
		n      int // which tool result (odd: Bash, even: Read)
		want   []string
	}{
		{"bash without recall", false, 1, []string{`[cleared by ctxkit: Bash "go test ./pkg1/..."`, "run the command again", "(recall id "}},
		{"read without recall", false, 2, []string{`[cleared by ctxkit: Read "/repo/pkg2/file.go"`, "read the file again"}},
		{"with the MCP recall tool", true, 1, []string{`[cleared by ctxkit: Bash "go test ./pkg1/..."`, "call mcp__ctxkit__recall with id"}},
	}
	for _, tt := range tests {
		s := sim{name: "ph", resultSize: 500, recall: tt.recall}
		r, err := parseAnthropic(s.body(2))
		if err != nil {
			t.Fatal(err)
		}
		b := r.Messages[2*tt.n].Blocks[0]
		got := placeholderText(b, r.Body, recallToolOf(r.Tools))
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
		if !strings.Contains(got, b.Hash) {
			t.Errorf("%s: %q lacks the recall id %s", tt.name, got, b.Hash)
		}
	}
}

func TestCacheControlDoesNotChangeHashes(t *testing.T) {
	// Claude Code moves its breakpoint to the newest block every turn; the
	// same content must keep its hash.
	s := sim{name: "cc", resultSize: 300}
	a, _ := parseAnthropic(s.body(2)) // breakpoint on result 2
	b, _ := parseAnthropic(s.body(3)) // breakpoint on result 3
	for i := range a.Messages {
		if a.Messages[i].Hash != b.Messages[i].Hash {
			t.Fatalf("message %d: hash changed when only its cache_control moved", i)
		}
	}
}
