package judge

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/tokens"
)

// errorLine is the evidence the recall probe is about: it is in a tool
// result only, so a strategy that clears results loses it.
const errorLine = "calc_test.go:12: Add(2,2) = 5, want 4"

// session is a small recorded session with an error, a large read, a
// decision with its reason, a file write and a thinking block whose
// signature no server would accept (the judge must leave it out).
func session() *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent working in a Go repository.")},
		Tools: []conv.Tool{
			{Name: "bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
			{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "write_file", Description: "Write a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`)},
		},
	}
	c.Stamp(c.System)
	user := func(bs ...conv.Block) { c.Append(conv.Message{Role: conv.RoleUser, Blocks: bs}) }
	asst := func(bs ...conv.Block) { c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: bs}) }
	text := func(s string) conv.Block { return conv.NewText(conv.SourceAssistant, s) }
	var big strings.Builder
	big.WriteString("package calc\n\nfunc Add(a, b int) int { return a + b + 1 }\n")
	for i := range 400 {
		fmt.Fprintf(&big, "// filler line %d of the calculator package, kept for its history\n", i)
	}

	user(conv.NewText(conv.SourceUser, "Fix the failing test in this repository."))
	asst(text("I'll run the tests first to see what fails."), conv.NewToolUse("t1", "bash", json.RawMessage(`{"command":"go test ./..."}`)))
	user(conv.NewToolResult("t1", "bash", "--- FAIL: TestAdd (0.00s)\n    "+errorLine+"\nFAIL\nexit status 1", true))
	asst(conv.NewThinking("The test expects 4, so Add is probably off by one.", "not-a-valid-signature"),
		text("Let me read the source."), conv.NewToolUse("t2", "read_file", json.RawMessage(`{"path":"calc.go"}`)))
	user(conv.NewToolResult("t2", "read_file", big.String(), false))
	asst(text("The bug is in `Add`: it adds one too many. I decided to fix `Add` instead of the test, because the test states the intended behaviour."),
		conv.NewToolUse("t3", "write_file", json.RawMessage(`{"path":"calc.go","content":"package calc\n\nfunc Add(a, b int) int { return a + b }\n"}`)))
	user(conv.NewToolResult("t3", "write_file", "wrote 3 lines to calc.go", false))
	asst(text("Now I will rerun the tests."), conv.NewToolUse("t4", "bash", json.RawMessage(`{"command":"go test ./..."}`)))
	user(conv.NewToolResult("t4", "bash", "ok  \tcalc\t0.01s", false))
	asst(text("All tests pass now."))
	return c
}

func TestSessionIsValid(t *testing.T) {
	if vs := conv.Check(session()); len(vs) > 0 {
		t.Fatalf("test session breaks invariants: %v", vs)
	}
}

func TestProbes(t *testing.T) {
	rec := session()
	all := Probes(rec, ProbeOptions{N: 10})
	want := []Probe{
		{Kind: Recall, At: 9, Question: "What was the original error reported by the bash `go test ./...` call? Give its key error line.", Reference: "--- FAIL: TestAdd (0.00s)"},
		{Kind: Artifact, At: 9, Question: "Which files have been changed so far in this session, and how? List each file with what was done to it."},
		{Kind: Continuation, At: 7, Question: "What is the next step? Say in one sentence what you would do next, with which tool and on what, without doing it.", Reference: "Now I will rerun the tests.; calls bash `go test ./...`"},
		{Kind: Decision, At: 9, Question: "What was decided about `Add`, and why?", Reference: "I decided to fix `Add` instead of the test, because the test states the intended behaviour."},
		{Kind: Continuation, At: 5},
		{Kind: Continuation, At: 3},
	}
	if len(all) != len(want) {
		t.Fatalf("got %d probes, want %d:\n%s", len(all), len(want), dump(all))
	}
	for i, w := range want {
		g := all[i]
		if g.Kind != w.Kind || g.At != w.At || (w.Question != "" && g.Question != w.Question) || (w.Reference != "" && g.Reference != w.Reference) {
			t.Errorf("probe %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if art := all[1].Reference; !strings.Contains(art, "calc.go") || !strings.Contains(art, "written") {
		t.Errorf("artifact reference %q does not say calc.go was written", art)
	}
	if !reflect.DeepEqual(all, Probes(rec, ProbeOptions{N: 10})) {
		t.Error("probes are not deterministic")
	}
	// The default is one of each kind.
	if got := Probes(rec, ProbeOptions{}); !reflect.DeepEqual(got, all[:4]) {
		t.Errorf("default probes:\n%s\nwant the first four:\n%s", dump(got), dump(all[:4]))
	}
	if got := Probes(rec, ProbeOptions{N: 2}); !reflect.DeepEqual(got, all[:2]) {
		t.Errorf("two probes:\n%s", dump(got))
	}
}

func TestProbesFitTheBudget(t *testing.T) {
	rec := session()
	counter := tokens.NewEstimator()
	// The large read (message 4) does not fit in 2,000 tokens: the
	// questions move before it, to message 3, the latest turn that fits.
	got := Probes(rec, ProbeOptions{MaxPromptTokens: 2000, Counter: counter})
	if len(got) == 0 {
		t.Fatal("no probe fits 2,000 tokens")
	}
	for _, p := range got {
		if p.At != 3 {
			t.Errorf("%s probe asked at message %d, want 3 (the last turn whose full context fits)", p.Kind, p.At)
		}
	}
	if got[0].Kind != Recall {
		t.Errorf("first probe is %s, want recall (the error came before the cut)", got[0].Kind)
	}
	if got := Probes(rec, ProbeOptions{MaxPromptTokens: 10, Counter: counter}); len(got) != 0 {
		t.Errorf("with 10 tokens nothing fits, got %s", dump(got))
	}
}

func TestProbesShortSession(t *testing.T) {
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hi")}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "hello")}})
	if got := Probes(c, ProbeOptions{}); len(got) != 0 {
		t.Errorf("a one-turn session has no history to ask about, got %s", dump(got))
	}
	if got := Probes(&conv.Conversation{}, ProbeOptions{}); len(got) != 0 {
		t.Errorf("empty session: got %s", dump(got))
	}
}

func TestKeyLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    f()\nValueError: empty basket\n", "ValueError: empty basket"},
		{"bash: ponyc: command not found\n[The command completed with exit code 127.]", "bash: ponyc: command not found"},
		{"[exit code 1]", ""},
		{"<tool_use_error>File has not been read yet.</tool_use_error>", "File has not been read yet."},
		{"./main.go:3:2: undefined: foo\nexit status 1", "./main.go:3:2: undefined: foo"},
	}
	for _, tt := range tests {
		if got := keyLine(tt.in); got != tt.want {
			t.Errorf("keyLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecisionScore(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"I decided to use a map instead of a slice because lookups dominate.", 3},
		{"The root cause is the off-by-one in Add.", 2},
		{"I'll rerun the tests because the fix touched the parser.", 1},
		{"Let me look at the file.", 0},
		{"我决定改用缓存,因为请求太多。", 3},
	}
	for _, tt := range tests {
		if got := decisionScore(tt.s); got != tt.want {
			t.Errorf("decisionScore(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestTopicOf(t *testing.T) {
	tests := []struct{ s, want string }{
		{"I'll change `parseConfig` because it ignores defaults.", "parseConfig"},
		{"The fix is in src/parser.go since the lexer is fine.", "src/parser.go"},
		{"We should use snake_case names, e.g. for the keys.", "snake_case"},
		{"The approach is simpler.", ""},
		{"Since this is a CGI script, the flag.First thing is odd.", ""},
	}
	for _, tt := range tests {
		if got := topicOf(tt.s); got != tt.want {
			t.Errorf("topicOf(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func dump(ps []Probe) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %s @%d: %s → %s\n", p.Kind, p.At, p.Question, p.Reference)
	}
	return b.String()
}
