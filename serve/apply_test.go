package serve

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/micro"
)

// TestPlaceholders: a cleared result's placeholder is the engine's: the
// tool, its key argument, its size, and the way back — the recall tool the
// client offers its model, listed or deferred (Claude Code with tool
// search names a deferred MCP tool only in a <system-reminder>).
func TestPlaceholders(t *testing.T) {
	tests := []struct {
		name, want string
		recall     bool
		deferred   bool
	}{
		{"no recall tool", "— recall %s]", false, false},
		{"listed", `— call mcp__ctxkit__recall with id \"%s\"]`, true, false},
		{"deferred", `— call mcp__ctxkit__recall with id \"%s\"]`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := llmtest.NewServer(t, llmtest.Config{})
			p := newProxy(t, up.URL, Config{Policy: micro.Eager{}})
			s := sim{name: "ph", resultSize: 900, recall: tt.recall}
			body := func(n int) []byte {
				b := s.body(n)
				if tt.deferred {
					b = bytes.Replace(b, []byte(`"text":"Task for`), []byte(`"text":"<system-reminder>The following deferred tools are now available via ToolSearch: mcp__ctxkit__recall, mcp__other__recall_all</system-reminder> Task for`), 1)
				}
				return b
			}
			for n := 1; n <= 6; n++ {
				if resp, data := p.post(t, "/v1/messages", "ph", body(n)); resp.StatusCode != 200 {
					t.Fatalf("turn %d: %d %s", n, resp.StatusCode, data)
				}
			}
			last := up.Last().Body
			c, _ := parseAnthropic(body(6))
			id := c.Messages[2].Blocks[0].Hash[:idLen] // the first result's block: its recall id is its content hash's first digits
			for _, w := range []string{`[cleared: Bash \"go test ./pkg1/...\"`, fmt.Sprintf(tt.want, id)} {
				if !bytes.Contains(last, []byte(w)) {
					t.Errorf("upstream body lacks %q: %.2000s", w, last)
				}
			}
		})
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

// TestRecallToolOf: the recall tool is found among the tools, or named in
// the messages when the client defers it (Claude Code's tool search lists
// deferred tools one a line in a <system-reminder>: "\nmcp__ctxkit__recall").
func TestRecallToolOf(t *testing.T) {
	tests := []struct {
		name, body string
		tools      []string
		want       string
	}{
		{"listed", `{}`, []string{"Bash", "mcp__ctxkit__recall"}, "mcp__ctxkit__recall"},
		{"deferred, one a line", `{"messages":[{"role":"user","content":"<system-reminder>tools:\nWebFetch\nmcp__ctxkit__recall\n\nAgents</system-reminder>"}]}`, nil, "mcp__ctxkit__recall"},
		{"deferred, in a list", `{"x":["mcp__ctxkit__recall"]}`, nil, "mcp__ctxkit__recall"},
		{"a longer name", `{"x":"mcp__x__recall_all"}`, nil, ""},
		{"none", `{"x":"recall"}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recallToolOf(&request{Body: []byte(tt.body), Tools: tt.tools}); got != tt.want {
				t.Errorf("recallToolOf = %q, want %q", got, tt.want)
			}
		})
	}
}
