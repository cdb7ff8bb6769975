package openai_test

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
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/llm/openai"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func richConversation() *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent."), conv.NewText(conv.SourceSystem, "Project rules: keep it simple.")},
		Tools: []conv.Tool{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`)},
			{Name: "Bash", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		},
	}
	c.Stamp(c.System)
	img := conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceUser)}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Why does this fail?"), img}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewThinking("Look at the test.", "sig"),
		conv.NewText(conv.SourceAssistant, "Let me look."),
		conv.NewToolUse("call_01", "Read", json.RawMessage(`{"path":"main_test.go","limit":50}`)),
		conv.NewToolUse("call_02", "Bash", json.RawMessage(`{"command":"go test ./..."}`)),
	}})
	list := conv.NewToolResult("call_02", "Bash", "", true)
	list.Content = []conv.Block{conv.NewText(conv.SourceTool, "FAIL main_test.go:12"), img}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewToolResult("call_01", "Read", "package main\n", false),
		list,
		conv.NewText(conv.SourceReminder, "<system-reminder>main.go changed</system-reminder>"),
	}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "The test expects a newline.")}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewSummary("Turns 1-2: a test fails for want of a newline.", conv.Span{First: 1, Last: 2}),
		conv.NewText(conv.SourceUser, "Fix it."),
	}})
	return c
}

func request(c *conv.Conversation) *llm.Request {
	c = c.Clone()
	req := &llm.Request{Model: "gpt-4o", MaxTokens: 2048, System: c.System, Tools: c.Tools, Messages: c.Messages}
	// Anchors mean nothing to chat completions and must not leak into it.
	req.System[1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
	req.Tools[1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
	last := &req.Messages[len(req.Messages)-1]
	last.Blocks[len(last.Blocks)-1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
	return req
}

func provider(t *testing.T, srv *llmtest.Server, opts ...openai.Option) *openai.Provider {
	t.Helper()
	t.Setenv(openai.KeyEnv, "sk-test")
	t.Setenv(openai.BaseURLEnv, "")
	opts = append([]openai.Option{openai.WithBaseURL(srv.BaseURL(llmtest.OpenAI)),
		openai.WithRetry(llm.Retry{Attempts: 2, Base: time.Millisecond}), openai.WithTimeout(5 * time.Second)}, opts...)
	p, err := openai.New("gpt-4o", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRequestGolden(t *testing.T) {
	c := richConversation()
	if vs := conv.CheckRequest(c); len(vs) > 0 {
		t.Fatal(vs)
	}
	srv := llmtest.NewServer(t, llmtest.Config{MinCached: 16, CacheStep: 1})
	var bodies [][]byte
	for i := range 3 {
		if _, err := provider(t, srv).Stream(context.Background(), request(c), nil); err != nil {
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
	if bytes.Contains(bodies[0], []byte("cache_control")) || bytes.Contains(bodies[0], []byte("Look at the test")) {
		t.Errorf("anchors or thinking leaked into the request")
	}
	calls := srv.Calls()
	if calls[1].Usage.CacheRead == 0 || calls[1].Usage.CacheRead != calls[1].Prompt {
		t.Errorf("an identical second request read %+v of %d", calls[1].Usage, calls[1].Prompt)
	}
}

func TestArguments(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Enqueue(llmtest.Calls("", llmtest.Use("Read", `{"path":`), llmtest.Use("Grep", ``), llmtest.Use("Bash", `{"command":"ls"}`)))
	resp, err := provider(t, srv).Stream(context.Background(), request(richConversation()), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"invalid_arguments":"{\"path\":"}`, `{}`, `{"command":"ls"}`}
	if len(resp.Message.Blocks) != 3 {
		t.Fatalf("blocks = %+v", resp.Message.Blocks)
	}
	for i, w := range want {
		if got := string(resp.Message.Blocks[i].Input); got != w {
			t.Errorf("call %d input = %s, want %s", i, got, w)
		}
	}
}

func TestToolCallsFinishedWithStop(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Enqueue(llmtest.Reply{Calls: []llmtest.ToolCall{llmtest.Use("Read", `{"path":"a"}`)}, StopReason: "end_turn"})
	resp, err := provider(t, srv).Stream(context.Background(), request(richConversation()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != "tool_use" {
		t.Errorf("stop reason = %q, want tool_use", resp.StopReason)
	}
}

func TestMissingKeyOfficial(t *testing.T) {
	t.Setenv(openai.KeyEnv, "")
	t.Setenv(openai.BaseURLEnv, "")
	_, err := openai.New("gpt-4o", openai.WithBaseURL("https://api.openai.com/v1"))
	if !errors.Is(err, llm.ErrMissingKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("err = %v", err)
	}
}

func TestNoAmbientOpenAIEnvironment(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	p := provider(t, srv)
	t.Setenv("OPENAI_ORG_ID", "org-secret")
	t.Setenv("OPENAI_PROJECT_ID", "proj-secret")
	if _, err := p.Stream(context.Background(), request(richConversation()), nil); err != nil {
		t.Fatal(err)
	}
	h := srv.Last().Header
	if h.Get("OpenAI-Organization") != "" || h.Get("OpenAI-Project") != "" {
		t.Errorf("ambient OpenAI settings were sent to %s: %v", srv.URL, h)
	}
	if h.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("authorization = %q", h.Get("Authorization"))
	}
}

func TestMaxTokensDefault(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	req := request(richConversation())
	req.MaxTokens = 0
	if _, err := provider(t, srv).Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(srv.Last().Body), `"max_tokens":16384`) {
		t.Errorf("default output limit not sent as max_tokens: %s", srv.Last().Body)
	}
}
