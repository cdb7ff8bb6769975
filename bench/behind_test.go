package bench

import (
	"context"
	"math"
	"testing"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// TestBehind: a term is behind a recall id wherever the request names the
// id of an original that holds it — a placeholder, or a summary's recall
// index — and nowhere else.
func TestBehind(t *testing.T) {
	rec := recording()
	ev := NewEvidence(rec)
	terms := ev.Terms[3]
	result := rec.Messages[2].Blocks[0].ID
	summaryOf := func(text string) *llm.Request {
		s := conv.NewSummary(text, conv.Span{First: 1, Last: 2})
		s.ID = "b900"
		return &llm.Request{System: rec.System, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{s}}}}
	}
	// textOf is a request whose one message is plain user text, as a
	// proxy's summary message comes back off the wire.
	textOf := func(text string) *llm.Request {
		return &llm.Request{System: rec.System, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, text)}}}}
	}
	placeholder := rec.Clone()
	placeholder.Messages[2].Blocks[0].SetText("[cleared: Read \"src/app.py\" 2 lines — recall "+result+"]", conv.RungPlaceholder)
	both := summaryOf("recall " + result + ": Read \"src/app.py\"")
	both.Messages = append(placeholder.Messages[:3:3], both.Messages...)
	tests := []struct {
		name               string
		req                *llm.Request
		covered, compacted int
	}{
		{"placeholder", &llm.Request{System: rec.System, Messages: placeholder.Messages[:3]}, 3, 0},
		{"summary index", summaryOf("[Summary of turns 1–2]\n\nfixed it\n\n[Recall index: …]\nrecall " + result + ": Read \"src/app.py\""), 3, 3},
		{"placeholder and index: cleared", both, 3, 0},
		{"summary without the id", summaryOf("[Summary of turns 1–2]\n\nfixed it"), 0, 0},
		{"a proxy's summary message, plain text", textOf("[Summary of turns 1–2 (llm). The original messages are kept in the session transcript.]\n\nfixed it\n\n" + compact.IndexHeader + "\nrecall " + result + ": Read \"src/app.py\""), 3, 3},
		{"a carried file, plain text", textOf("[File src/app.py, as read before the summary — recall " + result + "]\n…"), 3, 3},
		{"user text naming the id is no compaction", textOf("see recall " + result + " again"), 3, 0},
		{"an id that is no original", summaryOf("recall b12345: Read \"src/app.py\""), 0, 0},
		{"a longer id is another id", summaryOf("recall " + result + "0: Read"), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			missing := ev.Missing(tt.req, terms)
			ids, covered := ev.Behind(tt.req, missing)
			if covered != tt.covered {
				t.Errorf("covered %d of %d missing terms, want %d (ids %v)", covered, len(missing), tt.covered, ids)
			}
			if _, _, compacted := ev.behind(tt.req, missing, nil); compacted != tt.compacted {
				t.Errorf("%d covered terms only a compaction names, want %d", compacted, tt.compacted)
			}
		})
	}
}

// TestVisibleRecall: visible recall counts what the request shows as
// sent; evidence recall also counts what one recall round trip brings
// back, and bills the trip.
func TestVisibleRecall(t *testing.T) {
	rec := recording()
	ev := NewEvidence(rec)
	if len(ev.Terms[3]) == 0 {
		t.Fatal("the recording has no evidence at message 3")
	}
	opts := Options{
		Window: 100_000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1,
		Strategies: []Factory{
			{Name: "none", New: func(e Env) Strategy { return &none{base: newBase(e)} }},
			{Name: "cleared", New: func(e Env) Strategy { return &clearing{none: none{base: newBase(e)}} }},
		},
	}
	runs, err := Replay(context.Background(), []Session{{Name: "tiny", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := runs[0]; r.VisibleRecall != 1 || r.Recall != 1 || r.Recalls != 0 || r.RecallCost != 0 {
		t.Errorf("none: visible %v, recall %v, %d recalls for $%v; want 1, 1, 0, 0", r.VisibleRecall, r.Recall, r.Recalls, r.RecallCost)
	}
	if r := runs[1]; !(r.VisibleRecall < r.Recall) || r.Recalls == 0 {
		t.Errorf("cleared: visible %v, recall %v, %d recalls; want visible below recall, with a billed recall", r.VisibleRecall, r.Recall, r.Recalls)
	}
	// What visible recall misses is told apart by where it is: here all
	// behind a cleared result's recall id.
	for i, r := range runs {
		lost := r.Lost.Cleared + r.Lost.Compacted + r.Lost.Gone
		if math.Abs(lost-(1-r.VisibleRecall)) > 1e-9 || (i == 1) != (r.Lost.Cleared > 0) || r.Lost.Compacted != 0 || r.Lost.Gone != 0 {
			t.Errorf("%s: not visible %+v, want it to add up to 1 − visible recall (%v), all cleared", r.Strategy, r.Lost, 1-r.VisibleRecall)
		}
	}
	// What the round trips cost is in the total, and told apart.
	if r := runs[1]; !(r.RecallCost > 0 && r.RecallCost < r.Total.USD) {
		t.Errorf("cleared: round trips cost $%v of $%v; want a part of the total", r.RecallCost, r.Total.USD)
	}
	rep := NewReport(runs, []Session{{Name: "tiny", Conv: rec}}, opts)
	if got, want := rep.Strategies[1].RecallCostUSD, runs[1].RecallCost; got != want {
		t.Errorf("the report says the round trips cost $%v, the run $%v", got, want)
	}
	if got, want := rep.Strategies[1].VisibleLost, runs[1].Lost; got != want {
		t.Errorf("the report says %+v is not visible, the run %+v", got, want)
	}
}

// clearing sends everything but every tool result as a placeholder that
// names its recall id; with keepRecalled, what the recall tool returned
// stays whole.
type clearing struct {
	none
	keepRecalled bool
}

func (s *clearing) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	req, info, err := s.none.Step(ctx, arrived)
	if err != nil {
		return req, info, err
	}
	for i := range req.Messages {
		m := req.Messages[i]
		m.Blocks = conv.CloneBlocks(m.Blocks)
		for j := range m.Blocks {
			if b := &m.Blocks[j]; b.Type == conv.TypeToolResult && !(s.keepRecalled && b.Name == "recall") {
				placeholder(b, "[cleared — recall "+b.ID+"]")
			}
		}
		req.Messages[i] = m
	}
	return req, info, nil
}

// TestRecallPersists: what a recall round trip brings back stays in the
// conversation, as it does in the agent's, so a later turn that needs the
// same original reads it there: one round trip, not one a turn. A
// strategy that clears the recalled result again pays a second trip,
// which the run counts as a result recalled again.
func TestRecallPersists(t *testing.T) {
	rec := recording()
	rec.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Why did it fail before?")}})
	rec.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "compute_total raised ValueError('empty basket') on an empty list.")}})
	ev := NewEvidence(rec)
	if len(ev.Terms[3]) == 0 || len(ev.Terms[7]) == 0 {
		t.Fatalf("the recording needs evidence at messages 3 and 7: %v, %v", ev.Terms[3], ev.Terms[7])
	}
	tests := []struct {
		name         string
		keepRecalled bool
		recalls      int
		again        int
	}{
		{"recalled result kept", true, 1, 0},
		{"recalled result cleared again", false, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{
				Window: 100_000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1,
				Strategies: []Factory{{Name: "cleared", New: func(e Env) Strategy {
					return &clearing{none: none{base: newBase(e)}, keepRecalled: tt.keepRecalled}
				}}},
			}
			sessions := []Session{{Name: "tiny", Conv: rec}}
			runs, err := Replay(context.Background(), sessions, opts)
			if err != nil {
				t.Fatal(err)
			}
			r := runs[0]
			if r.Recalls != tt.recalls || r.RecalledAgain != tt.again || r.Recall != 1 || r.Invalid != 0 {
				t.Errorf("%d recalls (%d again), recall %v, %d invalid requests; want %d (%d again), 1, 0", r.Recalls, r.RecalledAgain, r.Recall, r.Invalid, tt.recalls, tt.again)
			}
			if got := NewReport(runs, sessions, opts).Strategies[0].RecalledAgain; got != tt.again {
				t.Errorf("the report says %d recalled again, the run %d", got, tt.again)
			}
		})
	}
}
