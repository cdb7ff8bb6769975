package anthropic_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
)

// TestLive is a smoke test against the real API. It runs only when
// ANTHROPIC_API_KEY is set; CTXKIT_ANTHROPIC_MODEL picks the model
// (default claude-haiku-4-5, the cheapest). It makes two small calls: a
// tool call and the answer after its result.
func TestLive(t *testing.T) {
	if os.Getenv(anthropic.KeyEnv) == "" {
		t.Skip("ANTHROPIC_API_KEY is not set; skipping the live smoke test")
	}
	model := os.Getenv("CTXKIT_ANTHROPIC_MODEL")
	if model == "" {
		model = "claude-haiku-4-5"
	}
	p, err := anthropic.New(model, anthropic.WithBadRequestDir(t.TempDir()), anthropic.WithRetry(llm.Retry{Attempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	liveRoundTrip(ctx, t, p, model)
}

func liveRoundTrip(ctx context.Context, t *testing.T, p llm.Provider, model string) {
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
		req := &llm.Request{Model: model, MaxTokens: 512, System: r.System, Tools: r.Tools, Messages: r.Messages}
		req.System[0].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
		var text strings.Builder
		resp, err := p.Stream(ctx, req, func(e llm.Event) {
			if e.Kind == llm.EventText {
				text.WriteString(e.Text)
			}
		})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		t.Logf("stop %s, usage %+v, streamed %q", resp.StopReason, resp.Usage, text.String())
		if resp.Usage.Prompt() == 0 || resp.Usage.Output == 0 {
			t.Errorf("usage %+v", resp.Usage)
		}
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
