package micro

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/tokens"
)

// benchOutput is a tool result of about 500 tokens.
var benchOutput = strings.Repeat("ok  \tgithub.com/example/project/internal/pkg\t0.123s\n", 50)

// benchTurn appends one agent turn: a call and its result.
func benchTurn(c *conv.Conversation, n int) {
	id := fmt.Sprintf("toolu_%d", n)
	cmd := fmt.Sprintf(`{"command":"go test ./pkg%d/..."}`, n)
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewText(conv.SourceAssistant, "Running the tests of the next package."),
		conv.NewToolUse(id, "Bash", json.RawMessage(cmd)),
	}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "Bash", benchOutput, false)}})
}

// benchHistory returns a conversation of about size tokens.
func benchHistory(size int) *conv.Conversation {
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "make the tests pass")}})
	est := tokens.NewEstimator()
	for n := 0; c.Tokens(est).Total() < size; n++ {
		benchTurn(c, n)
	}
	return c
}

// BenchmarkStep measures one Step after one new turn on histories of
// 10k, 100k and 1M tokens: the time per turn must not grow with the
// history.
func BenchmarkStep(b *testing.B) {
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		for _, policy := range []Policy{Eager{}, CacheAware{}} {
			b.Run(fmt.Sprintf("%s/%dk", policy.Name(), size/1000), func(b *testing.B) {
				base := benchHistory(size)
				ctx := context.Background()
				var c *conv.Conversation
				var m *Clearer
				var k *MemoryKeeper
				next := 0
				reset := func() {
					c, m, k = base.Clone(), New(Config{Policy: policy}), NewMemoryKeeper()
					next = len(c.Messages)
					if _, err := m.Step(ctx, c, k); err != nil {
						b.Fatal(err)
					}
				}
				reset()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if i > 0 && i%500 == 0 { // keep the history near its size
						b.StopTimer()
						reset()
						b.StartTimer()
					}
					benchTurn(c, next+i)
					if _, err := m.Step(ctx, c, k); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
