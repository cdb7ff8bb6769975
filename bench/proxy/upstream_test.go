package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestNamed checks that the stand-in summarizes the part of the
// conversation a summary instruction on the client's prefix names (serve's
// prefixInstruction), as a model does, and not the whole prefix: the
// summary before it and the tail kept after it are not summarized again.
func TestNamed(t *testing.T) {
	msgs := []conv.Message{
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "<summary>what came before</summary>")}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Let me look at the parser first."), conv.NewToolUse("c1", "shell", json.RawMessage(`{"command":"sed -n 1,80p parse.go"}`))}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("c1", "shell", "package parse\n\nfunc Parse() {}", false)}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("c2", "shell", json.RawMessage(`{"command":"go test ./..."}`))}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("c2", "shell", "ok  parse 0.01s", false)}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("c3", "shell_command", json.RawMessage(`{"command":"git status"}`))}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("c3", "shell_command", "clean", false)}},
	}
	instr := func(from, to string) string {
		s := fmt.Sprintf("Summarize the conversation above from the message that begins %q", from)
		if to != "" {
			s += fmt.Sprintf(" up to the message that begins %q (not included)", to)
		}
		return s + ": that part is about to be replaced by your summary. Aim for about 500 tokens."
	}
	tests := []struct {
		name        string
		instruction string
		lo, hi      int
	}{
		{"text to tool call", instr("Let me look at the parser first.", `[tool call shell {"command":"go test ./..."}]`), 1, 3},
		{"clipped excerpt", instr("Let me look at the pa…", "[tool result shell] ok  parse…"), 1, 4},
		{"tool result to the end", instr("[tool result shell] package parse\n\nfunc Parse() {}", ""), 2, 7},
		{"a name that is a prefix of another", instr(`[tool call shell_command {"command":"git status"}]`, ""), 5, 7},
		{"a clipped tool call", instr("Let me look", "[tool call shell …"), 1, 3},
		{"no part named (a transcript)", "Summarize this part of the conversation. Aim for about 500 tokens.", 0, 7},
		{"a part not found", instr("Something nobody said", ""), 0, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := named(msgs, tt.instruction)
			want := msgs[tt.lo:tt.hi]
			if len(got) != len(want) || len(got) > 0 && &got[0] != &want[0] {
				t.Errorf("named = %d messages from %q, want msgs[%d:%d]", len(got), messageText(&got[0]), tt.lo, tt.hi)
			}
		})
	}
}

// TestWithoutKeptWords checks that the stand-in leaves out of its summary
// the user's words serve's instruction says stay as they are — in the
// message it names and after, and only the user's own text — as a model
// following the instruction does, and as the engine leaves them out of
// what it gives its own summarizer.
func TestWithoutKeptWords(t *testing.T) {
	msgs := []conv.Message{
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Fix the parser."), conv.NewText(conv.SourceReminder, "<system-reminder>CLAUDE.md</system-reminder>")}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("c1", "Bash", json.RawMessage(`{"command":"go test ./..."}`))}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("c1", "Bash", "FAIL parse", false), conv.NewText(conv.SourceUser, "Keep the API stable.")}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Looking at it.")}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Also add a test.")}},
	}
	sentence := func(ex string) string {
		return fmt.Sprintf("Summarize the conversation above from the message that begins %q: that part is about to be replaced by your summary. "+
			"The user's own words from the message that begins %q on stay as they are after your summary: do not repeat them.", "Fix the parser.", ex)
	}
	words := func(ms []conv.Message) []string {
		var out []string
		for i := range ms {
			for _, b := range ms[i].Blocks {
				if b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser {
					out = append(out, b.Text)
				}
			}
		}
		return out
	}
	tests := []struct {
		name        string
		instruction string
		want        []string
	}{
		{"none kept", "Summarize this part of the conversation.", []string{"Fix the parser.", "Keep the API stable.", "Also add a test."}},
		{"from a tool result's message", sentence("[tool result Bash] FAIL parse"), []string{"Fix the parser."}},
		{"from the last", sentence("Also add a test."), []string{"Fix the parser.", "Keep the API stable."}},
		{"all", sentence("Fix the parser."), nil},
		{"a message not found", sentence("Nobody said this"), []string{"Fix the parser.", "Keep the API stable.", "Also add a test."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withoutKeptWords(msgs, tt.instruction)
			if w := words(got); strings.Join(w, "|") != strings.Join(tt.want, "|") {
				t.Errorf("user's words left: %q, want %q", w, tt.want)
			}
			if len(got) != len(msgs) || len(got[0].Blocks) < 1 || got[2].Blocks[0].Type != conv.TypeToolResult {
				t.Errorf("other blocks changed: %+v", got)
			}
			if msgs[2].Blocks[1].Text != "Keep the API stable." {
				t.Fatal("the input was changed")
			}
		})
	}
}

// TestFromTranscript checks that the stand-in reads a transcript summary
// request (serve's transcript) back into the messages it shows, so its
// summary is of those messages, as the engine's replay writes its own.
func TestFromTranscript(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []conv.Message
	}{
		{"no transcript", "Summarize this.", nil},
		{
			"calls, results and text",
			"Summarize this part of the conversation. Aim for about 500 tokens.\n\n" +
				"## user\nfix the parser\nplease\n" +
				"## assistant\nLooking.\n[tool call shell {\"command\":\"go test ./...\"}]\n[tool call read {\"path\":\"a.go\"}]\n" +
				"## user\n[tool result shell]\nFAIL parse\nexit 1\n[tool result read]\npackage a\n" +
				"## assistant\n[tool call shell {\"command\":\"go vet …]\n",
			[]conv.Message{
				{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "fix the parser\nplease")}},
				{Role: conv.RoleAssistant, Blocks: []conv.Block{
					conv.NewText(conv.SourceAssistant, "Looking."),
					conv.NewToolUse("call1", "shell", json.RawMessage(`{"command":"go test ./..."}`)),
					conv.NewToolUse("call2", "read", json.RawMessage(`{"path":"a.go"}`)),
				}},
				{Role: conv.RoleUser, Blocks: []conv.Block{
					conv.NewToolResult("call1", "shell", "FAIL parse\nexit 1", false),
					conv.NewToolResult("call2", "read", "package a", false),
				}},
				{Role: conv.RoleAssistant, Blocks: []conv.Block{
					conv.NewToolUse("call3", "shell", json.RawMessage(`{"input":"{\"command\":\"go vet …"}`)),
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromTranscript(tt.text)
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tt.want)
			if string(g) != string(w) {
				t.Errorf("fromTranscript:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestReasoningCost checks that the stand-in gives encrypted reasoning the
// tokens the recording says it cost in every request the proxy sends that
// carries it: the client's forwarded request and the proxy's summary on
// the client's prefix, which the bench bills too. (A summary request's
// reasoning was counted by its ciphertext, ~2.5× the request's billed
// size on a Codex rollout at 200k.)
func TestReasoningCost(t *testing.T) {
	cipher := strings.Repeat("c2VhbGVk", 500)
	const key, cost = "sk-ctxkit-bench-test", 420
	body := func(newest string) []byte {
		return []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[` +
			`{"role":"user","content":"fix the build"},` +
			`{"role":"assistant","content":[{"type":"redacted_thinking","data":"` + cipher + `"},{"type":"text","text":"on it"}]},` +
			`{"role":"user","content":[{"type":"text","text":` + strconv.Quote(newest) + `}]}]}`)
	}
	tests := []struct {
		name    string
		newest  string
		summary bool
	}{
		{"the client's request", "go on", false},
		{"a summary on the client's prefix", "go on\n\nSummarize the conversation above.", true},
	}
	for n, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := NewUpstream(func(context.Context, []conv.Message) (string, error) { return "done", nil })
			u.expect(key, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "go on")}}, &reported{counter: tokens.NewEstimator(), reasoning: map[string]int{cipher: cost}})
			c := &llmtest.Call{N: n + 1, API: llmtest.Anthropic, Header: http.Header{"X-Api-Key": {key}}, Body: body(tt.newest)}
			reply := u.answer(c)
			if got := reply.Usage == nil; got != tt.summary {
				t.Fatalf("answered as a summary: %v, want %v", got, tt.summary)
			}
			req := u.answers[c.N].req
			if req == nil {
				t.Fatal("the request did not decode")
			}
			if b := req.Messages[1].Blocks[0]; b.Type != conv.TypeRedactedThinking || b.Meta.Tokens != cost {
				t.Errorf("reasoning %s counted %d tokens, want %d", b.Type, b.Meta.Tokens, cost)
			}
		})
	}
}

// TestEndsWithNewest: the stand-in tells the client's forwarded request
// from a summary request the proxy makes by its last message. The proxy's
// oversize guard may cut a block of the client's newest message, and a
// summary may open it; the request is still the client's, answered with
// the recorded answer and the bill's usage. A cut one was taken for a
// summary request (on ponyc-4595 at 16k the proxy was told the next
// answer was 707 tokens, not 100, and compacted a request early).
func TestEndsWithNewest(t *testing.T) {
	log := strings.Repeat("compiling unit 17 of the parser\n", 40)
	result := conv.NewToolResult("c1", "shell", log, false)
	cut := conv.NewToolResult("c1", "shell", log[:200]+"[… cut …]", false)
	typed := conv.NewText(conv.SourceUser, log)
	typedCut := conv.NewText(conv.SourceUser, log[:200]+"[… cut …]")
	summary := conv.NewText(conv.SourceUser, "<summary>what came before</summary>")
	instruction := conv.NewText(conv.SourceUser, "Summarize the conversation above.")
	for _, tc := range []struct {
		name      string
		sent, got []conv.Block
		want      bool
	}{
		{"as sent", []conv.Block{result}, []conv.Block{result}, true},
		{"a result cut by the guard", []conv.Block{result}, []conv.Block{cut}, true},
		{"a text cut by the guard", []conv.Block{typed}, []conv.Block{typedCut}, true},
		{"opened by the summary", []conv.Block{result}, []conv.Block{summary, result}, true},
		{"a summary instruction after the client's message", []conv.Block{result}, []conv.Block{result, instruction}, false},
		{"a summary instruction alone", []conv.Block{result}, []conv.Block{instruction}, false},
		{"the instruction in the client's text", []conv.Block{conv.NewText(conv.SourceUser, "go on")}, []conv.Block{conv.NewText(conv.SourceUser, "go on\n\nSummarize the conversation above.")}, false},
		{"another call's result", []conv.Block{result}, []conv.Block{conv.NewToolResult("c2", "shell", log, false)}, false},
		{"nothing sent", nil, []conv.Block{summary}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endsWithNewest(&conv.Message{Role: conv.RoleUser, Blocks: tc.got}, &conv.Message{Role: conv.RoleUser, Blocks: tc.sent}); got != tc.want {
				t.Errorf("endsWithNewest = %v, want %v", got, tc.want)
			}
		})
	}
}
