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

// BenchmarkCtxkitStep measures the engine's per-turn overhead (clearing,
// compaction check, assembly) with 10k, 100k and 1M tokens of history
// already in the conversation: each iteration adds one turn and steps.
func BenchmarkCtxkitStep(b *testing.B) {
	counter := tokens.NewEstimator()
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("history=%d", size), func(b *testing.B) {
			rec := &conv.Conversation{
				System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")},
				Tools:  []conv.Tool{{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			}
			rec.Stamp(rec.System)
			rec.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Find the handlers.")}})
			for i := 0; rec.Tokens(counter).Total() < size; i++ {
				for _, m := range syntheticTurn(i) {
					rec.Append(m)
				}
			}
			env := Env{System: rec.System, Tools: rec.Tools, Window: 4 * size, Counter: counter,
				Pricing: pricing.Anthropic(), Recording: rec, MinCacheTokens: 1024}
			s := newCtxkit(env)
			ctx := context.Background()
			if _, _, err := s.Step(ctx, rec.Messages); err != nil {
				b.Fatal(err)
			}
			next := len(rec.Messages)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				turn := syntheticTurn(next + i)
				arrived := make([]conv.Message, len(turn))
				for j, m := range turn {
					rec.Append(m)
					arrived[j] = rec.Messages[len(rec.Messages)-1]
				}
				b.StartTimer()
				if _, _, err := s.Step(ctx, arrived); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
