package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
)

// Clearing one result per request in the middle of a long round (eager
// micro-compaction) billed by the simulated Anthropic cache: with the
// anchors micro holds, each request reads up to the frontier the previous
// clear left and writes exactly what follows it; with the assembler's own
// anchors alone it reads the system prompt and writes everything again.
func TestHeldAnchorsBoundTheRewrite(t *testing.T) {
	counter := tokens.NewEstimator()
	output := strings.Repeat("pkg/handlers/user.go:42: func handleUser(w http.ResponseWriter, r *http.Request)\n", 25)
	// The model's reasoning stays: it is most of what follows a cleared
	// result, as in the recorded sessions.
	reasoning := strings.Repeat("The handler reads the user id from the path and the test expects a 404. ", 15)
	run := func(held bool) (total Bill, writes, tail, all []int) {
		c := &conv.Conversation{
			System: []conv.Block{conv.NewText(conv.SourceSystem, strings.Repeat("You are a careful coding agent. ", 200))},
			Tools:  []conv.Tool{{Name: "bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		}
		c.Stamp(c.System)
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Find every handler and fix the failing test.")}})
		m := micro.New(micro.Config{Policy: micro.Eager{}, Counter: counter})
		k := micro.NewMemoryKeeper()
		b, err := assemble.New(assemble.Config{Counter: counter})
		if err != nil {
			t.Fatal(err)
		}
		cache := NewCache(pricing.Anthropic(), 1024)
		ctx := context.Background()
		for i := range 40 {
			if i > 0 {
				id := fmt.Sprintf("toolu_%02d", i)
				c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
					conv.NewText(conv.SourceAssistant, reasoning),
					conv.NewToolUse(id, "bash", json.RawMessage(fmt.Sprintf(`{"command":"grep -rn handle pkg/%d"}`, i))),
				}})
				c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "bash", output, false)}})
			}
			if _, err := m.Step(ctx, c, k); err != nil {
				t.Fatal(err)
			}
			if vs := conv.CheckRequest(c); len(vs) > 0 {
				t.Fatalf("request %d: %v", i, vs)
			}
			var a *assemble.Assembly
			if held {
				a, err = b.BuildHeld(c, nil, m.Hold())
			} else {
				a, err = b.Build(c, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			bill := cache.Bill(Segments(a.Request, counter), 0)
			total = total.Add(bill)
			writes = append(writes, bill.CacheWrite)
			// What follows the frontier: the result the previous request
			// cleared (now its placeholder) and the eight messages after
			// it (the results kept whole since, their steps, the new step).
			n := len(c.Messages)
			after := 0
			for j := max(n-9, 0); j < n; j++ {
				after += conv.MessageTokens(&c.Messages[j], counter)
			}
			tail = append(tail, after)
			all = append(all, c.Tokens(counter).Messages)
		}
		return total, writes, tail, all
	}
	heldBill, heldWrites, tail, _ := run(true)
	plainBill, plainWrites, _, all := run(false)
	for i := 10; i < len(heldWrites); i++ {
		if heldWrites[i] != tail[i] {
			t.Errorf("request %d wrote %d tokens with held anchors, not the %d after the frontier", i, heldWrites[i], tail[i])
		}
		if plainWrites[i] < all[i]*9/10 {
			t.Errorf("request %d wrote only %d of %d tokens without held anchors: the test no longer shows the rewrite", i, plainWrites[i], all[i])
		}
	}
	if heldBill.USD > plainBill.USD/2 {
		t.Errorf("held anchors cost $%.4f, the assembler's own $%.4f: want less than half", heldBill.USD, plainBill.USD)
	}
	t.Logf("eager clearing, 40 requests: $%.4f with held anchors (write %d), $%.4f without (write %d)",
		heldBill.USD, heldBill.CacheWrite, plainBill.USD, plainBill.CacheWrite)
}

// TestTripReportIsNotTheEngines: when the engine compacts the request
// that carries a recall round trip's originals, the replay has already
// billed that round trip as the request before it with the originals
// added, and its report describes a request the engine did not send. The
// engine must not take it for its context: told it, it compacted again at
// the next request, throwing away what the compaction had just kept
// (openprintkit-c61729d4 at 64k).
func TestTripReportIsNotTheEngines(t *testing.T) {
	counter := tokens.NewEstimator()
	env := Env{
		Window:  20_000,
		Counter: counter,
		Pricing: pricing.Anthropic(),
		System:  []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")},
		Tools:   []conv.Tool{{Name: "bash", Description: "Run a command.", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	}
	s := newCtxkitAt(env, 1).(*ctxkitStrategy)
	if s.err != nil {
		t.Fatal(s.err)
	}
	ctx := context.Background()
	size := func(req *llm.Request) int {
		n := counter.Count(req.System[0].Text)
		for i := range req.Messages {
			n += conv.MessageTokens(&req.Messages[i], counter)
		}
		return n
	}
	report := func(req *llm.Request, extra int) { s.Observe(llm.Usage{Input: size(req) + extra, Output: 50}) }
	result := strings.Repeat("internal/store/user.go:88: func (s *Store) User(id string) (*User, error)\n", 12)
	arrived := []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Fix the store tests.")}}}
	var req *llm.Request
	for i := 0; ; i++ {
		r, info, err := s.Step(ctx, arrived)
		if err != nil {
			t.Fatal(err)
		}
		if info.Compactions > 0 {
			t.Fatalf("request %d compacted before the round trip", i)
		}
		req = r
		if size(req) > 7_500 {
			break
		}
		report(req, 0)
		id := fmt.Sprintf("toolu_%02d", i)
		arrived = []conv.Message{
			{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Looking."), conv.NewToolUse(id, "bash", json.RawMessage(`{"command":"grep -rn User internal"}`))}},
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "bash", result, false)}},
		}
	}
	// The model recalls an original large enough to take the request
	// past the limit: the engine compacts the round trip's request.
	report(req, 0)
	original := strings.Repeat("cmd/server/main.go:12: store.Open(cfg.DSN) returned an error\n", 220)
	calls := conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("recall-1", "recall", json.RawMessage(`{"id":"b1"}`))}}
	results := conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("recall-1", "recall", original, false)}}
	s.Recalled([]conv.Message{calls, results}, []string{"b1"})
	report(req, conv.MessageTokens(&calls, counter)+conv.MessageTokens(&results, counter))
	next := []conv.Message{
		{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Now I see."), conv.NewToolUse("toolu_x", "bash", json.RawMessage(`{"command":"go test ./..."}`))}},
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("toolu_x", "bash", "ok", false)}},
	}
	_, info, err := s.Step(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if info.Compactions != 1 {
		t.Errorf("%d compactions across the round trip's request and the next, want 1: the one the round trip forced", info.Compactions)
	}
}
