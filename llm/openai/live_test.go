package openai_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/openai"
)

// TestLive is a smoke test against a real endpoint. It runs when
// OPENAI_API_KEY is set (the OpenAI API) or CTXKIT_OPENAI_BASE_URL names a
// compatible server (Ollama, vLLM, llama.cpp, DeepSeek; a key is then
// optional); CTXKIT_OPENAI_MODEL picks the model (default gpt-4o-mini).
func TestLive(t *testing.T) {
	base := os.Getenv("CTXKIT_OPENAI_BASE_URL")
	if os.Getenv(openai.KeyEnv) == "" && base == "" {
		t.Skip("neither OPENAI_API_KEY nor CTXKIT_OPENAI_BASE_URL is set; skipping the live smoke test")
	}
	model := os.Getenv("CTXKIT_OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	opts := []openai.Option{openai.WithBadRequestDir(t.TempDir()), openai.WithRetry(llm.Retry{Attempts: 3})}
	if base != "" {
		opts = append(opts, openai.WithBaseURL(base))
	}
	p, err := openai.New(model, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a terse assistant. Use the tools you are given.")},
		Tools: []conv.Tool{{Name: "get_time", Description: "Returns the current time as HH:MM.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string","description":"IANA time zone"}},"required":["zone"]}`)}},
	}
	c.Stamp(c.System)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "What time is it in Europe/Paris? Call get_time, then answer with the time it gives.")}})
	send := func() *llm.Response {
		t.Helper()
		if vs := conv.CheckRequest(c); len(vs) > 0 {
			t.Fatal(vs)
		}
		r := c.Clone()
		resp, err := p.Stream(ctx, &llm.Request{Model: model, MaxTokens: 512, System: r.System, Tools: r.Tools, Messages: r.Messages}, nil)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		t.Logf("stop %s, usage %+v", resp.StopReason, resp.Usage)
		c.Append(resp.Message)
		if vs := conv.Check(c); len(vs) > 0 {
			t.Fatalf("response breaks the invariants: %v", vs)
		}
		return resp
	}
	first := send()
	var call *conv.Block
	for i := range first.Message.Blocks {
		if b := &first.Message.Blocks[i]; b.Type == conv.TypeToolUse {
			call = b
		}
	}
	if call == nil || call.Name != "get_time" {
		t.Fatalf("the model did not call get_time: %+v", first.Message)
	}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(call.ToolUseID, call.Name, "14:37", false)}})
	second := send()
	var answer string
	for _, b := range second.Message.Blocks {
		answer += b.Text
	}
	if !strings.Contains(answer, "14:37") && !strings.Contains(answer, "2:37") {
		t.Errorf("the answer does not use the tool result: %q", answer)
	}
}
