package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// chain is a hand-made session: a task, then n steps each calling a tool
// whose result is size words long, with distinct content.
func chain(n, size int) *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, strings.Repeat("system ", 40))},
		Tools:  []conv.Tool{{Name: "Bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	}
	c.Stamp(c.System)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Fix the bug.")}})
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewToolUse(id, "Bash", json.RawMessage(fmt.Sprintf(`{"command":"step %d"}`, i))),
		}})
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
			conv.NewToolResult(id, "Bash", strings.Repeat(fmt.Sprintf("line%d ", i), size), false),
		}})
	}
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Done.")}})
	return c
}

// clearOldest is a minimal clearing strategy: before every request it
// clears every tool result but the newest keep, one more each step once
// there are more than keep.
type clearOldest struct {
	base
	keep int
}

func (s *clearOldest) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	rs := toolResults(s.c, nil)
	for k := 0; k < len(rs)-s.keep; k++ {
		if rs[k].Meta.Rung < conv.RungPlaceholder {
			placeholder(rs[k], "[cleared]")
		}
	}
	return s.request(), StepInfo{}, nil
}

// TestFrontierAnchorMakesClearingCheaper replays a session in which a
// strategy clears one more result every turn, once with the common anchor
// machinery and once with the tail anchors alone: with the frontier
// anchor each clearing reads the prefix up to the previous clearing from
// the cache, so the run costs less and reads more; for the peers that
// clear (anthropic-clear, mask-10) the same holds.
func TestFrontierAnchorMakesClearingCheaper(t *testing.T) {
	rec := chain(12, 300) // each result ≈ 450 tokens; anthropic-clear triggers at half the window
	env := Env{System: rec.System, Tools: rec.Tools, Window: 2000, Counter: words{}, Pricing: pricing.Anthropic(), MinCacheTokens: 1, Recording: rec}
	factories := map[string]func() Strategy{
		"clear-oldest":    func() Strategy { return &clearOldest{base: newBase(env), keep: 2} },
		"anthropic-clear": func() Strategy { return &anthropicClear{base: newBase(env), keep: 3} },
		"mask-10":         func() Strategy { return &mask{base: newBase(env), keep: 3, polling: 1} },
	}
	for name, mk := range factories {
		t.Run(name, func(t *testing.T) {
			with, without := billRun(t, mk(), rec, newAnchorer(env)), billRun(t, mk(), rec, nil)
			if with.USD >= without.USD {
				t.Errorf("with the frontier anchor $%.6f, without $%.6f: want cheaper", with.USD, without.USD)
			}
			if with.CacheRead <= without.CacheRead {
				t.Errorf("with the frontier anchor read %d tokens, without %d: want more", with.CacheRead, without.CacheRead)
			}
		})
	}
}

// billRun steps st through rec and bills every request, anchored by a
// (or with the tail anchors when a is nil).
func billRun(t *testing.T, st Strategy, rec *conv.Conversation, a *anchorer) Bill {
	t.Helper()
	cache := NewCache(pricing.Anthropic(), 1)
	var total Bill
	prev := 0
	for k := range rec.Messages {
		if rec.Messages[k].Role != conv.RoleAssistant {
			continue
		}
		req, _, err := st.Step(context.Background(), rec.Messages[prev:k])
		if err != nil {
			t.Fatal(err)
		}
		prev = k
		if a != nil {
			req = a.place(req)
		} else {
			req = anchoredRequest(req)
		}
		total = total.Add(cache.Bill(Segments(req, words{}), 0))
	}
	return total
}

// TestFrontierFollowsEdits checks where the frontier goes: nowhere before
// an edit, after the last unchanged block when a block changes, and it
// stays when a later request only appends.
func TestFrontierFollowsEdits(t *testing.T) {
	rec := chain(3, 10)
	a := &anchorer{}
	req := &llm.Request{Messages: rec.Messages[:4]}
	a.observe(req)
	if a.frontier != "" {
		t.Fatalf("frontier %q before any edit", a.frontier)
	}
	c := rec.Clone()
	c.Messages[2].Blocks[0].SetText("[cleared]", conv.RungPlaceholder)
	a.observe(&llm.Request{Messages: c.Messages[:6]})
	if want := c.Messages[1].Blocks[0].ID; a.frontier != want {
		t.Errorf("frontier %q after clearing message 2, want %q (the block before it)", a.frontier, want)
	}
	a.observe(&llm.Request{Messages: c.Messages[:8]})
	if want := c.Messages[1].Blocks[0].ID; a.frontier != want {
		t.Errorf("frontier moved to %q on a request that only appended, want %q", a.frontier, want)
	}
}

// TestTruncateSendsValidRequests: truncation keeps the first user
// message, drops whole exchanges and every request it sends is valid.
func TestTruncateSendsValidRequests(t *testing.T) {
	rec := chain(20, 100)
	env := Env{System: rec.System, Tools: rec.Tools, Window: 1200, Counter: words{}, Pricing: pricing.Anthropic(), Recording: rec}
	s := &truncate{base: newBase(env)}
	prev := 0
	for k := range rec.Messages {
		if rec.Messages[k].Role != conv.RoleAssistant {
			continue
		}
		req, _, err := s.Step(context.Background(), rec.Messages[prev:k])
		if err != nil {
			t.Fatal(err)
		}
		prev = k
		if vs := conv.CheckRequest(requestConv(req)); len(vs) > 0 {
			t.Fatalf("request before message %d invalid: %v", k, vs)
		}
		if got := req.Messages[0].Blocks[0].Text; got != "Fix the bug." {
			t.Fatalf("request before message %d starts with %q, want the task", k, got)
		}
		if k > 20 && s.tokens() > env.Window {
			t.Errorf("request before message %d is %d tokens, over the window %d", k, s.tokens(), env.Window)
		}
	}
}
