package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const png = `{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`

// richConversation has every kind of block the adapter maps, anchors on
// system, tools and messages, and is valid for the API.
func richConversation() *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent."), conv.NewText(conv.SourceSystem, "Project rules: keep it simple.")},
		Tools: []conv.Tool{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`)},
			{Name: "Bash", Description: "Run a command <safely> & quickly.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		},
	}
	c.Stamp(c.System)
	img := conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(png), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceUser)}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Why does this fail?"), img}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewThinking("The screenshot shows a test failure.", llmtest.Signature("The screenshot shows a test failure.")),
		conv.NewText(conv.SourceAssistant, "Let me look."),
		conv.NewToolUse("toolu_01", "Read", json.RawMessage(`{"path":"main_test.go","limit":50}`)),
		conv.NewToolUse("toolu_02", "Bash", json.RawMessage(`{"command":"go test ./... 2>&1 | tail -5"}`)),
	}})
	list := conv.NewToolResult("toolu_02", "Bash", "", true)
	list.Content = []conv.Block{conv.NewText(conv.SourceTool, "FAIL main_test.go:12"), img}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewToolResult("toolu_01", "Read", "package main\n\nfunc TestX(t *testing.T) {}\n", false),
		list,
		conv.NewText(conv.SourceReminder, "<system-reminder>main.go changed</system-reminder>"),
	}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		{Type: conv.TypeRedactedThinking, Data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)},
		conv.NewText(conv.SourceAssistant, "The test expects a newline."),
	}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewSummary("Turns 1-2: the user asked why a test fails; it expects a newline.", conv.Span{First: 1, Last: 2}),
		conv.NewText(conv.SourceUser, "Fix it."),
	}})
	return c
}

// anchoredRequest is the request for c with anchors as assembly would set
// them: end of tools and end of system (1h: tools come first, and a 1h
// anchor may not follow a 5m one), the last tool result, the last user
// block.
func anchoredRequest(c *conv.Conversation) *llm.Request {
	c = c.Clone()
	req := &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 2048, System: c.System, Tools: c.Tools, Messages: c.Messages}
	req.System[1].CacheControl = json.RawMessage(`{"type":"ephemeral","ttl":"1h"}`)
	req.Tools[1].CacheControl = json.RawMessage(`{"type":"ephemeral","ttl":"1h"}`)
	req.Messages[2].Blocks[1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
	last := &req.Messages[len(req.Messages)-1]
	last.Blocks[len(last.Blocks)-1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
	return req
}

func provider(t *testing.T, srv *llmtest.Server, opts ...anthropic.Option) *anthropic.Provider {
	t.Helper()
	t.Setenv(anthropic.KeyEnv, "sk-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	opts = append([]anthropic.Option{anthropic.WithBaseURL(srv.URL),
		anthropic.WithRetry(llm.Retry{Attempts: 2, Base: time.Millisecond}), anthropic.WithTimeout(5 * time.Second)}, opts...)
	p, err := anthropic.New("claude-sonnet-4-5", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRequestGolden pins the request body for a conversation with every
// block kind, and checks that the same request always gives the same
// bytes (the prompt cache depends on it).
func TestRequestGolden(t *testing.T) {
	c := richConversation()
	if vs := conv.CheckRequest(c); len(vs) > 0 {
		t.Fatal(vs)
	}
	srv := llmtest.NewServer(t, llmtest.Config{MinCacheable: 1})
	var bodies [][]byte
	for i := range 3 {
		p := provider(t, srv) // a new provider each time: no state may leak in
		if _, err := p.Stream(context.Background(), anchoredRequest(c), nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		bodies = append(bodies, srv.Last().Body)
	}
	for i := 1; i < len(bodies); i++ {
		if !bytes.Equal(bodies[0], bodies[i]) {
			t.Fatalf("request %d differs from the first:\n%s\n%s", i, bodies[0], bodies[i])
		}
	}
	var pretty bytes.Buffer
	json.Indent(&pretty, bodies[0], "", "  ")
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", "request.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("request body differs from %s (run with -update to accept):\n%s", path, pretty.Bytes())
	}
	// The conversation itself is never touched by sending it.
	if c2 := richConversation(); !sameJSON(t, c, c2) {
		t.Errorf("sending changed the conversation")
	}
	// The second and third requests read what the first wrote.
	calls := srv.Calls()
	if calls[0].Usage.CacheWrite == 0 || calls[1].Usage.CacheRead != calls[0].Usage.CacheWrite {
		t.Errorf("cache usage: first %+v, second %+v", calls[0].Usage, calls[1].Usage)
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestMaxTokensDefault(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	req := func() *llm.Request {
		r := anchoredRequest(richConversation())
		r.MaxTokens, r.Model = 0, ""
		return r
	}
	if _, err := provider(t, srv).Stream(context.Background(), req(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(srv.Last().Body), `"max_tokens":64000`) || srv.Last().Model != "claude-sonnet-4-5" {
		t.Errorf("defaults not applied: %s", srv.Last().Body)
	}
	p := provider(t, srv, anthropic.WithModelInfo(llm.ModelInfo{Name: "claude-sonnet-4-5", Window: 100_000, MaxOutput: 1234}))
	if _, err := p.Stream(context.Background(), req(), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(srv.Last().Body), `"max_tokens":1234`) {
		t.Errorf("model info override not applied: %s", srv.Last().Body)
	}
}

func TestBadCacheControl(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	req := anchoredRequest(richConversation())
	req.Messages[0].Blocks[0].CacheControl = json.RawMessage(`{"type":"persistent"}`)
	_, err := provider(t, srv).Stream(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown type "persistent"`) {
		t.Errorf("err = %v", err)
	}
	if len(srv.Calls()) != 0 {
		t.Errorf("a request that cannot be built was sent")
	}
}

func TestBlankTextDropped(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Enqueue(llmtest.Calls("  \n", llmtest.Use("Read", `{"path":"a"}`)))
	resp, err := provider(t, srv).Stream(context.Background(), anchoredRequest(richConversation()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.Blocks) != 1 || resp.Message.Blocks[0].Type != conv.TypeToolUse {
		t.Errorf("blocks = %+v, want only the tool call", resp.Message.Blocks)
	}
}

func TestRetryAfterTooLong(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Enqueue(llmtest.Fail(llmtest.Fault{Kind: llmtest.RateLimited, RetryAfter: time.Hour}))
	p := provider(t, srv, anthropic.WithRetry(llm.Retry{Attempts: 5, MaxWait: time.Minute}))
	_, err := p.Stream(context.Background(), anchoredRequest(richConversation()), nil)
	if !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "asked to retry after 1h0m0s") {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Calls()); n != 1 {
		t.Errorf("%d requests; a retry-after beyond the limit must end the call", n)
	}
}

func TestNoTelemetryHeaders(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{APIKey: "sk-test"})
	if _, err := provider(t, srv).Stream(context.Background(), anchoredRequest(richConversation()), nil); err != nil {
		t.Fatal(err)
	}
	h := srv.Last().Header
	if h.Get("Traceparent") != "" || h.Get("Tracestate") != "" {
		t.Errorf("trace headers sent: %v", h)
	}
	if h.Get("Anthropic-Version") == "" {
		t.Errorf("no anthropic-version header")
	}
}

func TestBaseURLFromEnvironment(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	t.Setenv(anthropic.KeyEnv, "sk-test")
	t.Setenv(anthropic.BaseURLEnv, srv.URL)
	p, err := anthropic.New("claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), anchoredRequest(richConversation()), nil); err != nil {
		t.Fatal(err)
	}
	if len(srv.Calls()) != 1 {
		t.Errorf("ANTHROPIC_BASE_URL was not used")
	}
}

func TestNoModel(t *testing.T) {
	t.Setenv(anthropic.KeyEnv, "sk-test")
	if _, err := anthropic.New(""); err == nil {
		t.Errorf("New without a model succeeded")
	}
}

// TestOpaqueSentAsRecorded: an opaque block of the Messages API (tool
// search's tool_reference in a tool result) goes to the API byte for byte
// and the validating stand-in accepts it; one from another API goes as its
// note (issue 24 row 2).
func TestOpaqueSentAsRecorded(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	const ref = `{"type":"tool_reference","tool_name":"ExitPlanMode"}`
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	req := &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Tools: []conv.Tool{{Name: "ToolSearch", InputSchema: schema}, {Name: "ExitPlanMode", InputSchema: schema}},
		Messages: []conv.Message{
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Find the plan tool.")}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("toolu_1", "ToolSearch", json.RawMessage(`{"query":"select:ExitPlanMode"}`))}},
			{Role: conv.RoleUser, Blocks: []conv.Block{
				{Type: conv.TypeToolResult, ToolUseID: "toolu_1", Content: []conv.Block{conv.NewOpaque(conv.ProviderAnthropic, json.RawMessage(ref), conv.SourceTool)}},
				conv.NewOpaque(conv.ProviderResponses, json.RawMessage(`{"type":"refusal","refusal":"no"}`), conv.SourceUser),
				conv.NewText(conv.SourceUser, "Now exit plan mode."),
			}},
		}}
	if _, err := provider(t, srv).Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Last().Body)
	for _, want := range []string{`"content":[` + ref + `]`, `"text":"[refusal block from openai-responses, not shown]"`} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s:\n%s", want, body)
		}
	}
}
