package bench

import (
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
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
	placeholder := rec.Clone()
	placeholder.Messages[2].Blocks[0].SetText("[cleared: Read \"src/app.py\" 2 lines — recall "+result+"]", conv.RungPlaceholder)
	tests := []struct {
		name    string
		req     *llm.Request
		covered int
	}{
		{"placeholder", &llm.Request{System: rec.System, Messages: placeholder.Messages[:3]}, 3},
		{"summary index", summaryOf("[Summary of turns 1–2]\n\nfixed it\n\n[Recall index: …]\nrecall " + result + ": Read \"src/app.py\""), 3},
		{"summary without the id", summaryOf("[Summary of turns 1–2]\n\nfixed it"), 0},
		{"an id that is no original", summaryOf("recall b12345: Read \"src/app.py\""), 0},
		{"a longer id is another id", summaryOf("recall " + result + "0: Read"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			missing := ev.Missing(tt.req, terms)
			ids, covered := ev.Behind(tt.req, missing)
			if covered != tt.covered {
				t.Errorf("covered %d of %d missing terms, want %d (ids %v)", covered, len(missing), tt.covered, ids)
			}
		})
	}
}
