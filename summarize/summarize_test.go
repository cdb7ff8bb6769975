package summarize

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/tokens"
)

var update = flag.Bool("update", false, "rewrite golden files")

// session builds a conversation from a compact script: "u:" user text,
// "a:" assistant text, "call:Name:{json}" a tool call in the current
// assistant message, "ok:text" / "err:text" the result of the oldest
// unanswered call.
type builder struct {
	c       *conv.Conversation
	pending []conv.Block // calls waiting for results
	n       int
}

func newBuilder() *builder { return &builder{c: &conv.Conversation{}} }

func (b *builder) user(text string) *builder {
	b.flush()
	b.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, text)}})
	return b
}

func (b *builder) say(text string, calls ...conv.Block) *builder {
	b.flush()
	blocks := []conv.Block{}
	if text != "" {
		blocks = append(blocks, conv.NewText(conv.SourceAssistant, text))
	}
	blocks = append(blocks, calls...)
	b.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: blocks})
	b.pending = calls
	return b
}

func (b *builder) call(name, input string) conv.Block {
	b.n++
	return conv.NewToolUse("tu"+itoa(b.n), name, json.RawMessage(input))
}

// results answers the pending calls in order.
func (b *builder) results(texts ...string) *builder {
	var blocks []conv.Block
	for i, call := range b.pending {
		t := texts[i]
		isErr := strings.HasPrefix(t, "ERR:")
		blocks = append(blocks, conv.NewToolResult(call.ToolUseID, call.Name, strings.TrimPrefix(t, "ERR:"), isErr))
	}
	b.pending = nil
	b.c.Append(conv.Message{Role: conv.RoleUser, Blocks: blocks})
	return b
}

func (b *builder) flush() {
	if len(b.pending) > 0 {
		panic("unanswered calls")
	}
}

func codingSession() *conv.Conversation {
	b := newBuilder()
	b.user("Fix the timezone bug in the sqlite backend. You must not change the public API, and never touch the migrations.")
	b.say("Let me look at the backend first.", b.call("Read", `{"file_path":"django/db/backends/sqlite3/operations.py"}`))
	b.results("   1 import datetime\n   2 def datetime_cast_date_sql(self, field_name, tzname):\n   3     return ...")
	b.say("I'll write a reproduction script because the issue is unclear.", b.call("Bash", `{"command":"cat <<'EOF' > reproduce.py\nimport django\nprint(1)\nEOF"}`))
	b.results("")
	b.say("", b.call("Bash", `{"command":"python reproduce.py"}`))
	b.results("ERR:Traceback (most recent call last):\n  File \"reproduce.py\", line 2, in <module>\nNameError: name 'pytz' is not defined\n<returncode>1</returncode>")
	b.say("The fix is to pass tzname through _sqlite_datetime_parse.", b.call("Edit", `{"file_path":"django/db/backends/sqlite3/base.py","old_string":"def _sqlite_datetime_parse(dt, tzname=None):","new_string":"def _sqlite_datetime_parse(dt, tzname=None, conn_tzname=None):"}`))
	b.results("The file django/db/backends/sqlite3/base.py has been updated.")
	b.say("", b.call("Bash", `{"command":"sed -i 's/conn_tzname/db_tzname/' django/db/backends/sqlite3/base.py && rm reproduce.py"}`), b.call("TodoWrite", `{"todos":[{"content":"Reproduce the bug","status":"completed"},{"content":"Fix _sqlite_datetime_parse","status":"in_progress"},{"content":"Run the sqlite test suite","status":"pending"}]}`))
	b.results("", "Todos have been modified successfully")
	b.user("Also add a regression test in tests/timezones/tests.py.")
	b.say("Next, I will add the test.", b.call("Write", `{"file_path":"tests/timezones/test_sqlite_tz.py","content":"import unittest\n\nclass T(unittest.TestCase):\n    pass\n"}`))
	b.results("File created successfully at: tests/timezones/test_sqlite_tz.py")
	b.say("Added the regression test; now running the suite.")
	return b.c
}

func TestExtractiveGolden(t *testing.T) {
	c := codingSession()
	out, err := NewExtractive().Summarize(context.Background(), Input{Messages: c.Messages, Span: conv.Span{First: 1, Last: 2}, TargetTokens: 2000, Counter: tokens.NewEstimator()})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "extractive_coding.md", out.Text)
	for _, want := range []string{
		"You must not change the public API", // the task, verbatim
		"Also add a regression test",         // a later user message, verbatim
		"`reproduce.py` — written",           // heredoc write …
		"deleted",                            // … and its removal
		"`django/db/backends/sqlite3/base.py` — edited ×2",
		"`tests/timezones/test_sqlite_tz.py` — created",
		"NameError: name 'pytz' is not defined", // the error's key line
		"`python reproduce.py` → exit 1",
		"In progress: Fix _sqlite_datetime_parse",
		"Pending: Run the sqlite test suite",
		"read only: django/db/backends/sqlite3/operations.py",
	} {
		if !strings.Contains(out.Text, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if out.Kind != "extractive" {
		t.Errorf("kind %q", out.Kind)
	}
	// Deterministic.
	again, _ := NewExtractive().Summarize(context.Background(), Input{Messages: c.Messages, Span: conv.Span{First: 1, Last: 2}, TargetTokens: 2000, Counter: tokens.NewEstimator()})
	if again.Text != out.Text {
		t.Error("extractive summary is not deterministic")
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\n%s", name, got)
	}
}

func TestExtractiveBudgetKeepsArtifacts(t *testing.T) {
	b := newBuilder()
	b.user("Refactor everything.")
	for i := range 40 {
		p := "pkg/file" + itoa(i) + ".go"
		b.say("Let me update "+p+" because it uses the old API and I will keep the behaviour.", b.call("Edit", `{"file_path":"`+p+`","old_string":"old","new_string":"new"}`))
		b.results("ok")
		b.say("", b.call("Bash", `{"command":"go test ./pkg/... -run Test`+itoa(i)+`"}`))
		b.results("FAIL: TestX" + itoa(i) + "\nexit code: 1")
	}
	out, err := NewExtractive().Summarize(context.Background(), Input{Messages: b.c.Messages, TargetTokens: 600})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if !strings.Contains(out.Text, "pkg/file"+itoa(i)+".go") {
			t.Errorf("artifact pkg/file%d.go dropped by the budget", i)
		}
	}
	if !strings.Contains(out.Text, "left out for space") {
		t.Error("trimmed sections should say that lines were left out")
	}
	if !strings.Contains(out.Text, "Refactor everything.") {
		t.Error("the task was dropped")
	}
}

func TestExtractiveNothing(t *testing.T) {
	_, err := NewExtractive().Summarize(context.Background(), Input{})
	if !errors.Is(err, ErrNothing) {
		t.Errorf("err = %v, want ErrNothing", err)
	}
}

func TestArtifactsAgents(t *testing.T) {
	b := newBuilder()
	b.user("go")
	b.say("", b.call("str_replace_editor", `{"command":"create","path":"/repo/reproduce.py","file_text":"print(1)\n"}`))
	b.results("File created successfully")
	b.say("", b.call("str_replace_editor", `{"command":"str_replace","path":"/repo/src/marshmallow/fields.py","old_str":"a","new_str":"b"}`))
	b.results("edited")
	b.say("", b.call("str_replace_editor", `{"command":"view","path":"/repo/README.md"}`))
	b.results("...")
	b.say("", b.call("execute_bash", `{"command":"open src/x.py"}`))
	b.results("...")
	b.say("", b.call("execute_bash", `{"command":"edit 3:4\nfoo\nend_of_edit"}`))
	b.results("...")
	// An edit whose open happened out of sight: its result names the file.
	b.say("", b.call("bash", `{"command":"edit 1:1\nx\nend_of_edit"}`))
	b.results("[File: /repo/seen.py (12 lines total)]\n1:x")
	b.say("", b.call("MultiEdit", `{"file_path":"m.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`))
	b.results("ok")
	b.say("", b.call("edit_file", `{"path":"oh.py","content":"x"}`))
	b.results("ERR:could not apply")
	b.say("", b.call("apply_patch", `{"patch":"*** Begin Patch\n*** Add File: p.go\n+package p\n*** End Patch"}`))
	b.results("ok")
	// SWE-agent 1.x function calling: open/create make a file current,
	// edit and insert change it.
	b.say("", b.call("create", `{"filename":"repro.py"}`))
	b.results("[File: repro.py]")
	b.say("", b.call("insert", `{"text":"print(1)\n"}`))
	b.results("ok")
	b.say("", b.call("open", `{"path":"src/f.py","line_number":14}`))
	b.results("...")
	b.say("", b.call("edit", `{"search":"a","replace":"b"}`))
	b.results("ok")
	// OpenHands agent skills in IPython.
	b.say("", b.call("ipython", `{"code":"edit_file_by_replace(\n'/workspace/src/App.css',\nto_replace=\"a\", new_content=\"b\")"}`))
	b.results("ok")
	b.say("", b.call("ipython", `{"code":"create_file('/workspace/new.tsx')"}`))
	b.results("ok")
	got := map[string]string{}
	for _, a := range Artifacts(b.c.Messages) {
		var ops []string
		for _, o := range a.Ops {
			s := o.Op
			if o.Failed {
				s += "!"
			}
			ops = append(ops, s)
		}
		got[a.Path] = strings.Join(ops, ",")
	}
	want := map[string]string{
		"/repo/reproduce.py":              "created",
		"/repo/src/marshmallow/fields.py": "edited",
		"/repo/README.md":                 "read",
		"src/x.py":                        "read,edited",
		"m.go":                            "edited",
		"oh.py":                           "edited!",
		"p.go":                            "created",
		"/repo/seen.py":                   "edited",
		"repro.py":                        "created,edited",
		"src/f.py":                        "read,edited",
		"/workspace/src/App.css":          "edited",
		"/workspace/new.tsx":              "created",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d artifacts, want %d: %v", len(got), len(want), got)
	}
}

func TestIsConstraint(t *testing.T) {
	for s, want := range map[string]bool{
		"You must not touch the migrations": true,
		"Never push to main.":               true,
		"Always run gofmt":                  true,
		"Do not use cgo":                    true,
		"不能修改公共接口":                          true,
		"必须保持向后兼容":                          true,
		"禁止使用全局变量":                          true,
		"务必先写测试":                            true,
		"Please look at the failing test":   false,
		"帮我看看测试覆盖率":                         false,
		"it mustard":                        false,
	} {
		if got := IsConstraint(s); got != want {
			t.Errorf("IsConstraint(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestExtractSummary(t *testing.T) {
	for in, want := range map[string]string{
		"<analysis>thinking</analysis>\n<summary>\n## Task\nx\n</summary>": "## Task\nx",
		"<analysis>a</analysis>just text":                                  "just text",
		"plain":                                                            "plain",
		"<analysis>never closed":                                           "",
		"pre <summary>open only":                                           "open only",
	} {
		if got := ExtractSummary(in); got != want {
			t.Errorf("ExtractSummary(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTarget(t *testing.T) {
	for _, tt := range []struct{ region, lo, hi, want int }{
		{10_000, 0, 0, 2000},
		{500, 0, 0, MinTarget},
		{1_000_000, 0, 0, MaxTarget},
		{10_000, 100, 1000, 1000},
	} {
		if got := Target(tt.region, tt.lo, tt.hi); got != tt.want {
			t.Errorf("Target(%d,%d,%d) = %d, want %d", tt.region, tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestMergeText(t *testing.T) {
	a := "## Task and intent\n> Fix the bug.\n## Artifact trail\n- `a.go` — edited (Edit)\n- `b.go` — created\n## Current work\nold work\n## Commands run\n- `go test` → exit 1"
	b := "## Artifact trail\n- `a.go` — deleted (rm)\n- `c.go` — created\n## Current work\nnew work\n## Commands run\n- `go test` → exit 1\n- `go vet` → exit 0"
	got := MergeText([]Part{{Text: a, Span: conv.Span{First: 1, Last: 3}}, {Text: b, Span: conv.Span{First: 4, Last: 6}}}, MergeInput{TargetTokens: 1000})
	for _, want := range []string{"Fix the bug.", "`a.go` — edited (Edit); then (turns 4-6) deleted (rm)", "`b.go` — created", "`c.go` — created", "new work", "`go vet` → exit 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("merge lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "old work") {
		t.Error("current work should come from the newest part only")
	}
	if strings.Count(got, "`go test` → exit 1") != 1 {
		t.Error("repeated lines should be merged")
	}
	if strings.Count(got, "## Artifact trail") != 1 {
		t.Error("sections should be merged")
	}
}

// fakeProvider answers from a script and records requests.
type fakeProvider struct {
	replies []func(*llm.Request) (*llm.Response, error)
	reqs    []*llm.Request
}

func (f *fakeProvider) Stream(ctx context.Context, req *llm.Request, on func(llm.Event)) (*llm.Response, error) {
	f.reqs = append(f.reqs, req)
	if len(f.replies) == 0 {
		return nil, errors.New("no reply scripted")
	}
	r := f.replies[0]
	f.replies = f.replies[1:]
	return r(req)
}

func textReply(s string) func(*llm.Request) (*llm.Response, error) {
	return func(*llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, s)}}, Usage: llm.Usage{Input: 100, Output: 50}}, nil
	}
}

func errReply(err error) func(*llm.Request) (*llm.Response, error) {
	return func(*llm.Request) (*llm.Response, error) { return nil, err }
}

func lastText(req *llm.Request) string {
	m := req.Messages[len(req.Messages)-1]
	return m.Blocks[len(m.Blocks)-1].Text
}

func TestLLMTranscriptRequest(t *testing.T) {
	c := codingSession()
	p := &fakeProvider{replies: []func(*llm.Request) (*llm.Response, error){textReply("<analysis>walk</analysis><summary>## Task and intent\nfix it</summary>")}}
	s := NewLLM(p, "claude-haiku-4-5", LLMOptions{})
	out, err := s.Summarize(context.Background(), Input{Messages: c.Messages, Span: conv.Span{First: 1, Last: 2}, Focus: "the sqlite parse function", TargetTokens: 700})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "## Task and intent\nfix it" || out.Kind != "llm" || out.Model != "claude-haiku-4-5" || out.CacheReuse {
		t.Errorf("output %+v", out)
	}
	req := p.reqs[0]
	if req.Model != "claude-haiku-4-5" || len(req.Tools) != 0 || len(req.Messages) != 1 {
		t.Fatalf("request model %q tools %d messages %d", req.Model, len(req.Tools), len(req.Messages))
	}
	body := lastText(req)
	for _, want := range []string{noTools, "the sqlite parse function", "## " + SecArtifacts, "## " + SecProgress, "about 700 tokens", "NameError: name 'pytz'", "turns 1 to 2", "<summary>"} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %q", want)
		}
	}
	if !strings.Contains(req.System[0].Text, noTools) {
		t.Error("system prompt lacks the no-tools guard")
	}
	// A small aim does not cut the answer short: the user's words and the
	// artifact trail come before it, and the analysis comes first.
	if want := min(MaxTarget*3+2048, 20_000); req.MaxTokens != want {
		t.Errorf("max_tokens %d for an aim of 700, want %d", req.MaxTokens, want)
	}
}

func TestLLMPrefixRequest(t *testing.T) {
	c := codingSession()
	prefix := &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 8000, System: []conv.Block{conv.NewText(conv.SourceSystem, "sys")}, Tools: []conv.Tool{{Name: "Bash", InputSchema: json.RawMessage(`{"type":"object"}`)}}, Messages: append(c.Messages, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "continue")}})}
	nBlocks := len(prefix.Messages[len(prefix.Messages)-1].Blocks)
	p := &fakeProvider{replies: []func(*llm.Request) (*llm.Response, error){textReply("<summary>ok</summary>")}}
	out, err := NewLLM(p, "cheap", LLMOptions{}).Summarize(context.Background(), Input{Messages: c.Messages[:5], Prefix: prefix, KeepFrom: "I'll write a reproduction", TargetTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if !out.CacheReuse || out.Model != "claude-sonnet-4-5" {
		t.Errorf("output %+v: want cache reuse with the agent's model", out)
	}
	req := p.reqs[0]
	if len(req.Messages) != len(prefix.Messages) || len(req.Tools) != 1 || req.System[0].Text != "sys" {
		t.Fatal("the cache-reusing request must keep the prefix's system, tools and messages")
	}
	if got := len(prefix.Messages[len(prefix.Messages)-1].Blocks); got != nBlocks {
		t.Error("the prefix was modified")
	}
	if !strings.Contains(lastText(req), "I'll write a reproduction") || !strings.HasPrefix(lastText(req), noTools) {
		t.Error("the instruction must be appended to the last user message, with the guard and the boundary")
	}
	// The engine left the window room for the agent's own max_tokens
	// after this prompt, not for more.
	if req.MaxTokens != prefix.MaxTokens {
		t.Errorf("max_tokens %d, want the agent request's %d", req.MaxTokens, prefix.MaxTokens)
	}
}

// TestLLMFoldsEarlier: given the earlier summary of a round cut twice, the
// model summary folds it in, in the one request: named in the scope when
// the request reuses the agent's prompt (which holds it), given before the
// transcript otherwise. Without one, neither is said.
func TestLLMFoldsEarlier(t *testing.T) {
	c := codingSession()
	prefix := &llm.Request{Model: "claude-sonnet-4-5", Messages: append(c.Messages, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "continue")}})}
	earlier := []Part{{Text: "## Task and intent\nfix the sqlite parse function", Span: conv.Span{First: 1, Last: 3}}}
	for _, tt := range []struct {
		name    string
		prefix  *llm.Request
		earlier []Part
		want    []string
		not     []string
	}{
		{"prefix", prefix, earlier, []string{"an earlier summary (of turns 1 to 3)", "replaces it too", "Carry forward"}, []string{"<earlier-summary"}},
		{"transcript", nil, earlier, []string{"<earlier-summary turns=\"1-3\">\n## Task and intent\nfix the sqlite parse function\n</earlier-summary>", "Before the transcript is an earlier summary (of turns 1 to 3)", "Carry forward"}, nil},
		{"prefix, none", prefix, nil, nil, []string{"earlier summary", "Carry forward"}},
		{"transcript, none", nil, nil, nil, []string{"earlier", "Carry forward"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProvider{replies: []func(*llm.Request) (*llm.Response, error){textReply("<summary>ok</summary>")}}
			out, err := NewLLM(p, "cheap", LLMOptions{}).Summarize(context.Background(), Input{Messages: c.Messages[:5], Span: conv.Span{First: 4, Last: 6}, Prefix: tt.prefix, KeepFrom: "I'll write a reproduction", TargetTokens: 500, Earlier: tt.earlier})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(p.reqs))
			}
			if out.Folded != (len(tt.earlier) > 0) {
				t.Errorf("Folded %v with %d earlier summaries", out.Folded, len(tt.earlier))
			}
			body := lastText(p.reqs[0])
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("request lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(body, w) {
					t.Errorf("request holds %q", w)
				}
			}
		})
	}
}

func TestLLMPromptTooLong(t *testing.T) {
	c := codingSession()
	ptl := &llm.APIError{Status: 400, Kind: llm.ErrPromptTooLong, Message: "prompt is too long"}
	prefix := &llm.Request{Model: "big", Messages: c.Messages[:len(c.Messages)-1]}
	p := &fakeProvider{replies: []func(*llm.Request) (*llm.Response, error){errReply(ptl), errReply(ptl), errReply(ptl), textReply("<summary>short</summary>")}}
	out, err := NewLLM(p, "cheap", LLMOptions{}).Summarize(context.Background(), Input{Messages: c.Messages, Prefix: prefix, TargetTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "short" || len(p.reqs) != 4 || len(out.Notes) != 3 {
		t.Fatalf("text %q after %d requests, notes %q", out.Text, len(p.reqs), out.Notes)
	}
	if strings.Contains(lastText(p.reqs[1]), TruncationMarker) {
		t.Error("the first transcript request should be whole")
	}
	for _, r := range p.reqs[2:] {
		if !strings.Contains(lastText(r), TruncationMarker) {
			t.Error("retries must carry the truncation marker")
		}
	}
	if len(lastText(p.reqs[3])) >= len(lastText(p.reqs[1])) {
		t.Error("retries must send less")
	}
	// Bounded: a request that stays too long fails after PTLRetries.
	p = &fakeProvider{replies: []func(*llm.Request) (*llm.Response, error){errReply(ptl), errReply(ptl), errReply(ptl), errReply(ptl), errReply(ptl)}}
	_, err = NewLLM(p, "cheap", LLMOptions{}).Summarize(context.Background(), Input{Messages: c.Messages, TargetTokens: 500})
	if !errors.Is(err, llm.ErrPromptTooLong) || len(p.reqs) != 4 {
		t.Errorf("err %v after %d requests, want prompt-too-long after 4", err, len(p.reqs))
	}
}

func TestLLMFailures(t *testing.T) {
	c := codingSession()
	toolOnly := func(*llm.Request) (*llm.Response, error) {
		return &llm.Response{Message: conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("x", "Bash", json.RawMessage(`{}`))}}}, nil
	}
	unavailable := &llm.APIError{Status: 529, Kind: llm.ErrUnavailable, Message: "overloaded"}
	for name, tt := range map[string]struct {
		replies []func(*llm.Request) (*llm.Response, error)
		want    error
		reqs    int
	}{
		"tool call":        {[]func(*llm.Request) (*llm.Response, error){toolOnly}, ErrToolCall, 1},
		"empty":            {[]func(*llm.Request) (*llm.Response, error){textReply("<analysis>only</analysis>")}, ErrEmpty, 1},
		"auth":             {[]func(*llm.Request) (*llm.Response, error){errReply(&llm.APIError{Status: 401, Kind: llm.ErrAuth})}, llm.ErrAuth, 1},
		"unavailable":      {[]func(*llm.Request) (*llm.Response, error){errReply(unavailable), errReply(unavailable)}, llm.ErrUnavailable, 2},
		"retry then works": {[]func(*llm.Request) (*llm.Response, error){errReply(unavailable), textReply("fine")}, nil, 2},
	} {
		t.Run(name, func(t *testing.T) {
			p := &fakeProvider{replies: tt.replies}
			_, err := NewLLM(p, "m", LLMOptions{}).Summarize(context.Background(), Input{Messages: c.Messages})
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if len(p.reqs) != tt.reqs {
				t.Errorf("%d requests, want %d", len(p.reqs), tt.reqs)
			}
		})
	}
}

func TestLLMMerge(t *testing.T) {
	p := &fakeProvider{replies: []func(*llm.Request) (*llm.Response, error){textReply("<summary>merged</summary>")}}
	out, err := NewLLM(p, "m", LLMOptions{}).Merge(context.Background(), []Part{{Text: "one", Span: conv.Span{First: 1, Last: 2}}, {Text: "two", Span: conv.Span{First: 3, Last: 4}}}, MergeInput{TargetTokens: 300})
	if err != nil || out.Text != "merged" {
		t.Fatalf("%v %q", err, out.Text)
	}
	if body := lastText(p.reqs[0]); !strings.Contains(body, `<part turns="1-2">`) || !strings.Contains(body, "two") {
		t.Error("merge request lacks the parts")
	}
}

func TestSentences(t *testing.T) {
	got := sentences("The fix is in pkg/m.go because 1.5 rounds. Next! 然后。好\nlast")
	want := []string{"The fix is in pkg/m.go because 1.5 rounds.", "Next!", "然后。", "好", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sentences = %q, want %q", got, want)
	}
}

// TestTranscriptNamesOpaque: the summarizer's transcript names an opaque
// block and a server tool call, never shows their bytes as text it read
// (issue 24 row 2).
func TestTranscriptNamesOpaque(t *testing.T) {
	msgs := []conv.Message{
		{Role: conv.RoleUser, Turn: 1, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "search"),
			conv.NewOpaque(conv.ProviderAnthropic, json.RawMessage(`{"type":"document","source":{"data":"SECRET-BYTES"}}`), conv.SourceUser)}},
		{Role: conv.RoleAssistant, Turn: 1, Blocks: []conv.Block{conv.NewServerToolUse(conv.ProviderResponses, "ws_1", "web_search",
			json.RawMessage(`{"query":"go"}`), json.RawMessage(`{"type":"web_search_call","id":"ws_1"}`))}},
	}
	got := Transcript(msgs, 1000)
	for _, want := range []string{"[document block from anthropic, not shown]", `[web_search run by the provider: {"query":"go"}]`} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SECRET-BYTES") {
		t.Errorf("transcript shows an opaque block's bytes:\n%s", got)
	}
}
