package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
)

// syntheticTurn is one agent step: a Bash call and ~1,000 tokens of
// output, the shape most of a coding agent's history has.
func syntheticTurn(i int) []conv.Message {
	id := fmt.Sprintf("call_%d", i)
	var out strings.Builder
	for l := range 60 {
		fmt.Fprintf(&out, "pkg/module%d/file_%d.go:%d: func handler%d(ctx context.Context) error { return nil }\n", i%17, l, i*7+l, l)
	}
	return []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewText(conv.SourceAssistant, fmt.Sprintf("Step %d: looking for the handler.", i)),
			conv.NewToolUse(id, "Bash", json.RawMessage(fmt.Sprintf(`{"command":"grep -rn handler%d pkg/"}`, i))),
		}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "Bash", out.String(), false)}},
	}
}

// heldTurn is one step of a long session whose bulk stays in the context:
// the model's reasoning (about 1,000 tokens: assistant text is never
// cleared) and a short result (under micro's skip size, never cleared).
func heldTurn(i int) []conv.Message {
	id := fmt.Sprintf("held_%d", i)
	var why strings.Builder
	for l := range 24 {
		fmt.Fprintf(&why, "Step %d.%d: the handler in pkg/module%d reads the request id, checks the session and calls the store; the test expects a 404 when the id is unknown. ", i, l, i%17)
	}
	return []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewText(conv.SourceAssistant, why.String()),
			conv.NewToolUse(id, "Bash", json.RawMessage(fmt.Sprintf(`{"command":"test -f pkg/module%d/h.go"}`, i%17))),
		}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "Bash", "exit 0", false)}},
	}
}

// newTurn is the turn being measured: a Bash call whose output is about
// tokens tokens (syntheticTurn's lines).
func newTurn(i, tokens int) []conv.Message {
	id := fmt.Sprintf("new_%d", i)
	var out strings.Builder
	for l := range max(tokens*60/1000, 1) {
		fmt.Fprintf(&out, "pkg/module%d/file_%d.go:%d: func handler%d(ctx context.Context) error { return nil }\n", i%17, l, i*7+l, l)
	}
	return []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewText(conv.SourceAssistant, fmt.Sprintf("Step %d: looking for the handler.", i)),
			conv.NewToolUse(id, "Bash", json.RawMessage(fmt.Sprintf(`{"command":"grep -rn handler%d pkg/"}`, i))),
		}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "Bash", out.String(), false)}},
	}
}

// BenchmarkCtxkitStep measures the engine's time per turn — the ctxkit
// strategy's Step: observe, round end, micro-compaction, the compaction
// check, assembly — with the context held at 10k, 100k and 1M tokens for
// every iteration, and how it grows with the turn's new content (a tool
// result of 1k, 8k or 32k tokens; 32k passes the oversize guard, which
// spills it). Each iteration starts, untimed, from a fresh engine that has
// already stepped once over the whole history (its incremental state
// built, as in a long-running session), appends one new turn and times the
// step that follows. The window is 4× the history (at least 200k), so
// nothing but the new content is a candidate for compaction or clearing, and the history's
// bulk (the model's reasoning) is never cleared: the context really is the
// stated size. ctx-tokens reports the request's size.
func BenchmarkCtxkitStep(b *testing.B) {
	counter := tokens.NewEstimator()
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		rec := &conv.Conversation{
			System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")},
			Tools:  []conv.Tool{{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		}
		rec.Stamp(rec.System)
		rec.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Find the handlers.")}})
		for i := 0; rec.Tokens(counter).Total() < size; i++ {
			for _, m := range heldTurn(i) {
				rec.Append(m)
			}
		}
		for _, added := range []int{1_000, 8_000, 32_000} {
			b.Run(fmt.Sprintf("history=%d/new=%d", size, added), func(b *testing.B) {
				env := Env{System: rec.System, Tools: rec.Tools, Window: max(4*size, 200_000), Counter: counter,
					Pricing: pricing.Anthropic(), Recording: rec, MinCacheTokens: 1024}
				ctx := context.Background()
				prompt := 0
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					s := newCtxkit(env)
					history := make([]conv.Message, len(rec.Messages))
					for j, m := range rec.Messages {
						m.Blocks = conv.CloneBlocks(m.Blocks)
						history[j] = m
					}
					if _, _, err := s.Step(ctx, history); err != nil {
						b.Fatal(err)
					}
					turn := newTurn(i, added)
					c := s.(*ctxkitStrategy).c
					arrived := make([]conv.Message, len(turn))
					for j, m := range turn {
						c.Append(m)
						arrived[j] = c.Messages[len(c.Messages)-1]
					}
					c.Messages = c.Messages[:len(c.Messages)-len(turn)]
					b.StartTimer()
					req, _, err := s.Step(ctx, arrived)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					prompt = 0
					for _, sg := range Segments(req, counter) {
						prompt += sg.Tokens
					}
				}
				b.ReportMetric(float64(prompt), "ctx-tokens")
			})
		}
	}
}
