package microtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/tokens"
)

// Seeds is how many generated conversations TestPolicy replays.
const Seeds = 64

// TestPolicy checks that micro-compaction under p keeps, after every step:
//
//   - the conversation's invariants (conv.Check: pairing, alternation,
//     summaries);
//   - every edit kept before it took effect: the keeper holds each edit
//     Step reports, and the recall id of every lowered block gives back
//     the original as first appended;
//   - rungs only moving down, and only for tool results: user and
//     assistant text, tool calls, pinned and non-compactable blocks are
//     byte-for-byte as appended;
//   - a result the model has not yet answered (the newest round's last
//     step) whole;
//   - the conversation never growing.
//
// It also checks that p has a name.
func TestPolicy(t *testing.T, p micro.Policy) {
	t.Helper()
	if p.Name() == "" {
		t.Error("the policy has no name")
	}
	lowered := 0
	for seed := range Seeds {
		t.Run(fmt.Sprintf("seed%02d", seed), func(t *testing.T) {
			lowered += run(t, p, seed)
		})
	}
	t.Logf("%s: %d blocks lowered over %d conversations", p.Name(), lowered, Seeds)
}

func run(t *testing.T, p micro.Policy, seed int) (lowered int) {
	data := make([]byte, 512)
	for i := range data {
		data[i] = byte((seed*131 + i*37 + i*i*seed) % 251)
	}
	rec := convtest.Valid(convtest.NewChoices(data), convtest.Options{MaxRounds: 8, Request: true})
	counter := tokens.NewEstimator()
	m := micro.New(micro.Config{Policy: p, Counter: counter, Keep: 1, SkipChars: 10, Window: 200_000})
	k := micro.NewMemoryKeeper()
	ctx := context.Background()

	c := &conv.Conversation{System: rec.System, Tools: rec.Tools, Seq: rec.Seq}
	orig := make(map[string]conv.Block)
	rung := make(map[string]conv.Rung)
	kept := 0
	for i := range rec.Messages {
		m0 := rec.Messages[i]
		m0.Blocks = clone(m0.Blocks)
		c.Messages = append(c.Messages, m0)
		for _, b := range m0.Blocks {
			orig[b.ID] = b.Clone()
		}
		if m0.Role != conv.RoleUser {
			continue
		}
		before := c.Tokens(counter).Total()
		r, err := m.Step(ctx, c, k)
		if err != nil {
			t.Fatalf("message %d: step: %v", i, err)
		}
		where := fmt.Sprintf("after the step at message %d", i)
		if vs := conv.Check(c); len(vs) > 0 {
			t.Fatalf("%s: invariants: %v", where, vs)
		}
		kept += len(r.Edits)
		if got := len(k.Edits()); got != kept {
			t.Fatalf("%s: %d edits reported, %d kept", where, kept, got)
		}
		if after := c.Tokens(counter).Total(); after > before {
			t.Fatalf("%s: the conversation grew from %d to %d tokens", where, before, after)
		}
		last := len(c.Messages) - 1
		for mi := range c.Messages {
			for _, b := range c.Messages[mi].Blocks {
				o, ok := orig[b.ID]
				if !ok {
					t.Fatalf("%s: block %s appeared from nowhere", where, b.ID)
				}
				if b.Meta.Rung < rung[b.ID] {
					t.Fatalf("%s: block %s went up from rung %d to %d", where, b.ID, rung[b.ID], b.Meta.Rung)
				}
				if b.Meta.Rung > rung[b.ID] {
					lowered++
				}
				rung[b.ID] = b.Meta.Rung
				if b.Meta.Rung == o.Meta.Rung {
					continue
				}
				switch {
				case b.Type != conv.TypeToolResult:
					t.Fatalf("%s: a %s block (%s) was lowered", where, b.Type, b.ID)
				case o.Meta.Pinned || !o.Meta.Compactable:
					t.Fatalf("%s: pinned or non-compactable result %s was lowered", where, b.ID)
				case mi == last:
					t.Fatalf("%s: result %s, not yet answered, was lowered", where, b.ID)
				case b.ToolUseID != o.ToolUseID:
					t.Fatalf("%s: result %s changed its tool_use_id", where, b.ID)
				}
				got, err := k.Recall(b.ID)
				if err != nil {
					t.Fatalf("%s: recall %s: %v", where, b.ID, err)
				}
				if got.ResultText() != o.ResultText() || got.IsError != o.IsError {
					t.Fatalf("%s: recall %s does not give back the original", where, b.ID)
				}
			}
		}
	}
	return lowered
}

func clone(bs []conv.Block) []conv.Block {
	out := make([]conv.Block, len(bs))
	for i := range bs {
		out[i] = bs[i].Clone()
	}
	return out
}
