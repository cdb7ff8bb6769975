package agent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/llm/openai"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
)

const testModel = "claude-sonnet-4-5"

// newRepo writes a small Go project with a bug into a new git repository
// and returns its folder.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var calc strings.Builder
	calc.WriteString("// Package calc does arithmetic for the billing service.\npackage calc\n\n")
	calc.WriteString("// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n")
	calc.WriteString("// Mul returns the product of a and b.\nfunc Mul(a, b int) int {\n\treturn a * b\n}\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&calc, "\n// Scale%02d scales x by the tariff factor %d and adds the base fee %d.\nfunc Scale%02d(x int) int {\n\treturn x*%d + %d\n}\n", i, i+1, 3*i, i, i+1, 3*i)
	}
	var log strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&log, "2026-01-%02d 10:%02d:%02d worker-%d processed job %d in %dms status=%s\n",
			1+i%28, i%60, (i*7)%60, i%5, i, 17*i%900, map[bool]string{true: "retry", false: "ok"}[i%42 == 0])
	}
	files := map[string]string{
		"go.mod":            "module example.com/billing\n\ngo 1.22\n",
		"README.md":         "# billing\n\nThe billing service. `calc` holds the arithmetic; `notes/` holds operational logs.\n",
		"AGENTS.md":         "Keep functions documented. Run gofmt on every changed Go file.\n",
		"calc/calc.go":      calc.String(),
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Errorf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
		"notes/worker.log":  log.String(),
		".gitignore":        "*.tmp\n",
		"notes/ignored.tmp": "scratch\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// step answers one request of the scripted model.
type step func(c *llmtest.Call) llmtest.Reply

func say(r llmtest.Reply) step { return func(*llmtest.Call) llmtest.Reply { return r } }

// model is a scripted model: each request the agent sends gets the next
// step; summary requests from the compactor get a fixed summary.
type model struct {
	t       *testing.T
	mu      sync.Mutex
	steps   []step
	summary string
	// summaries counts summary requests; requests the others.
	summaries, requests int
}

func newModel(t *testing.T, steps ...step) *model {
	return &model{t: t, steps: steps, summary: "<analysis>notes</analysis><summary>\n## Task and intent\nThe user asked to fix Add in calc/calc.go and to report what notes/worker.log says about job 42.\n\n## Progress and next action\nDone: read calc/calc.go, listed the log. Next action: edit calc/calc.go so that Add returns a + b, then run gofmt.\n</summary>"}
}

func (m *model) handle(c *llmtest.Call) llmtest.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	if isSummaryRequest(c) {
		m.summaries++
		return llmtest.Text(m.summary)
	}
	m.requests++
	if len(m.steps) == 0 {
		m.t.Errorf("request %d: the script has no more steps", c.N)
		return llmtest.Text("(script exhausted)")
	}
	s := m.steps[0]
	m.steps = m.steps[1:]
	return s(c)
}

func (m *model) left() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps)
}

// isSummaryRequest tells the compactor's summary requests from the
// agent's own: they carry the summarizer's no-tools instruction.
func isSummaryRequest(c *llmtest.Call) bool {
	if strings.Contains(c.System, "hand-over summaries") {
		return true
	}
	if n := len(c.Messages); n > 0 {
		for _, b := range c.Messages[n-1].Blocks {
			if b.Type == conv.TypeText && strings.Contains(b.Text, "Do not call any tool: this request allows no tool use") {
				return true
			}
		}
	}
	return false
}

// lastResults returns the tool results of the request's last message.
func lastResults(c *llmtest.Call) []conv.Block {
	if len(c.Messages) == 0 {
		return nil
	}
	var out []conv.Block
	for _, b := range c.Messages[len(c.Messages)-1].Blocks {
		if b.Type == conv.TypeToolResult {
			out = append(out, b)
		}
	}
	return out
}

var (
	clearedRE = regexp.MustCompile(`\[cleared: [^\]]*recall (b\d+)\]`)
	recallRE  = regexp.MustCompile(`recall (b\d+)`)
)

// recallIDs returns the recall ids visible in a request: those of cleared
// placeholders first, then any other.
func recallIDs(c *llmtest.Call) (cleared, any []string) {
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			text := b.ResultText()
			if b.Type != conv.TypeToolResult {
				text = b.Text
			}
			for _, g := range clearedRE.FindAllStringSubmatch(text, -1) {
				cleared = append(cleared, g[1])
			}
			for _, g := range recallRE.FindAllStringSubmatch(text, -1) {
				any = append(any, g[1])
			}
		}
	}
	return cleared, any
}

// setup is one agent session against a test server.
type setup struct {
	srv   *llmtest.Server
	model *model
	ws    string
	dir   string
	store *transcript.Store
	tools *tools.Set
	agent *agent.Agent

	mu     sync.Mutex
	events []agent.Event
}

type options struct {
	api    llmtest.API
	window int
	server llmtest.Config
	cfg    func(*agent.Config)
}

func newProvider(t *testing.T, api llmtest.API, srv *llmtest.Server) (agent.Provider, pricing.Table) {
	t.Helper()
	retry := llm.Retry{Attempts: 2, Base: 1, Max: 1}
	switch api {
	case llmtest.OpenAI:
		t.Setenv(openai.KeyEnv, "test-key")
		p, err := openai.New("gpt-4.1", openai.WithBaseURL(srv.BaseURL(llmtest.OpenAI)), openai.WithRetry(retry))
		if err != nil {
			t.Fatal(err)
		}
		return p, pricing.OpenAI()
	default:
		t.Setenv(anthropic.KeyEnv, "test-key")
		p, err := anthropic.New(testModel, anthropic.WithBaseURL(srv.BaseURL(llmtest.Anthropic)), anthropic.WithRetry(retry))
		if err != nil {
			t.Fatal(err)
		}
		return p, pricing.Anthropic()
	}
}

func start(t *testing.T, o options, steps ...step) *setup {
	t.Helper()
	s := &setup{ws: newRepo(t), dir: filepath.Join(t.TempDir(), "session")}
	s.srv = llmtest.NewServer(t, o.server)
	s.model = newModel(t, steps...)
	s.srv.Handle(s.model.handle)
	st, err := transcript.Create(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.store = st
	t.Cleanup(func() { s.store.Close() })
	s.open(t, o)
	return s
}

// open starts the agent on s.store.
func (s *setup) open(t *testing.T, o options) {
	t.Helper()
	ts, err := tools.New(s.ws, tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	s.tools = ts
	p, table := newProvider(t, o.api, s.srv)
	model := testModel
	if o.api == llmtest.OpenAI {
		model = "gpt-4.1"
	}
	cfg := agent.Config{
		Provider: p, Model: model, Window: o.window, Pricing: table,
		Tools: ts, Store: s.store, Workspace: s.ws,
		OnEvent: func(e agent.Event) {
			s.mu.Lock()
			s.events = append(s.events, e)
			if os.Getenv("H9TRACE") != "" {
				t.Logf("%s %v %s %s", time.Now().Format("05.000"), e.Kind, e.Tool, clip(e.Text))
				if e.Compact != nil {
					t.Logf("   compact %+v err=%v", *e.Compact, e.Err)
				}
				if e.Micro != nil {
					t.Logf("   micro %+v", *e.Micro)
				}
			}
			s.mu.Unlock()
		},
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	a, err := agent.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.agent = a
}

// reopen closes the transcript and opens it again, as a resumed session.
func (s *setup) reopen(t *testing.T, o options) {
	t.Helper()
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := transcript.Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.store = st
	s.open(t, o)
}

func (s *setup) eventsOf(k agent.EventKind) []agent.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agent.Event
	for _, e := range s.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// check fails t when the agent's conversation or the transcript's breaks
// an invariant or when the two differ.
func (s *setup) check(t *testing.T) {
	t.Helper()
	c := s.agent.Conversation()
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("conversation invariants: %v", vs)
	}
	ro, err := transcript.OpenReadOnly(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rc := ro.Conversation()
	if vs := conv.Check(rc); len(vs) > 0 {
		t.Fatalf("transcript invariants: %v", vs)
	}
	if len(rc.Messages) != len(c.Messages) || rc.Seq != c.Seq {
		t.Fatalf("transcript has %d messages (seq %d), the agent %d (seq %d)", len(rc.Messages), rc.Seq, len(c.Messages), c.Seq)
	}
	for i := range c.Messages {
		a, b := c.Messages[i], rc.Messages[i]
		if len(a.Blocks) != len(b.Blocks) || a.Role != b.Role || a.Turn != b.Turn {
			t.Fatalf("message %d differs: agent %s/%d blocks turn %d, transcript %s/%d blocks turn %d", i, a.Role, len(a.Blocks), a.Turn, b.Role, len(b.Blocks), b.Turn)
		}
		for j := range a.Blocks {
			if a.Blocks[j].ID != b.Blocks[j].ID || a.Blocks[j].PlainText() != b.Blocks[j].PlainText() || a.Blocks[j].Meta.Rung != b.Blocks[j].Meta.Rung {
				t.Fatalf("message %d block %d differs: agent %s rung %d %q, transcript %s rung %d %q", i, j,
					a.Blocks[j].ID, a.Blocks[j].Meta.Rung, clip(a.Blocks[j].PlainText()), b.Blocks[j].ID, b.Blocks[j].Meta.Rung, clip(b.Blocks[j].PlainText()))
			}
		}
	}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
