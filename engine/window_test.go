package engine_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestAnswerFitsWindow: the window holds a request's prompt and its
// answer — the API refuses one whose prompt and max_tokens exceed it — so
// a request near the limit asks only for the room its prompt leaves,
// counting the prompt as far low as the estimator may (CountError, 10%);
// far from it, the configured max_tokens.
func TestAnswerFitsWindow(t *testing.T) {
	for _, tt := range []struct {
		name  string
		words int
	}{
		{"far from the limit", 500},
		{"near the limit", 62_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counter := tokens.NewEstimator()
			e, err := engine.New(engine.Config{Window: 100_000, MaxTokens: 32_000, Counter: counter, Keeper: engine.NewMemoryKeeper()})
			if err != nil {
				t.Fatal(err)
			}
			c := &conv.Conversation{System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")}}
			c.Stamp(c.System)
			c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, strings.Repeat("paste ", tt.words))}})
			r, err := e.Prepare(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			room := 100_000 - int(math.Ceil(float64(r.Tokens)*1.1))
			want := min(32_000, room)
			if r.Request.MaxTokens != want {
				t.Errorf("prompt %d tokens: max_tokens %d, want %d", r.Tokens, r.Request.MaxTokens, want)
			}
			if tt.words > 1000 && want == 32_000 {
				t.Fatalf("prompt %d tokens is not near the limit: the case tests nothing", r.Tokens)
			}
		})
	}
}
