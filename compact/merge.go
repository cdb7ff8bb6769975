package compact

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/summarize"
)

// summaryBudget is what all summaries together may take before they are
// merged into one: as the cost model sized it at the last request
// (sizeFloor), else the configured share of the target.
func (c *Ladder) summaryBudget() int {
	if c.keep.sized {
		return c.keep.summary
	}
	return c.configuredSummaryBudget()
}

// configuredSummaryBudget is Config.SummaryBudget's share of the target,
// never under two of the smallest summaries.
func (c *Ladder) configuredSummaryBudget() int {
	return max(int(float64(c.budget.Target)*c.cfg.SummaryBudget), 2*c.cfg.SummaryMin)
}

// merge folds summary blocks into one merged summary that covers the union
// of their turns (the hierarchical merge, seed 002 §27.6): through the
// summarizer when it is a Merger, else (or when that fails or does not
// shrink) by MergeText. models false keeps it to MergeText.
func (c *Ladder) merge(ctx context.Context, cv *conv.Conversation, blocks []conv.Block, trig Trigger, focus string, models bool) (conv.Block, []Fallback, llm.Usage) {
	var fbs []Fallback
	var usage llm.Usage
	parts, span, entries, total := c.partsOf(blocks)
	in := summarize.MergeInput{
		TargetTokens: max(min(total, c.summaryBudget()), c.cfg.SummaryMin),
		Template:     c.cfg.Template,
		Counter:      c.cfg.Counter,
	}
	text, kind := "", "merged"
	if m, ok := c.s.(summarize.Merger); ok && models && c.SummarizerName() != "extractive" {
		sctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		out, err := m.Merge(sctx, parts, in)
		cancel()
		usage = usage.Add(out.Usage)
		if err == nil && c.cfg.Counter.Count(out.Text) >= total {
			err = fmt.Errorf("%w (%d tokens for %d)", errInflated, c.cfg.Counter.Count(out.Text), total)
		}
		if err == nil {
			text, kind = out.Text, "merged by llm"
		} else {
			fbs = append(fbs, Fallback{From: "llm merge", To: "extractive merge", Reason: c.fail("%v", err)})
		}
	}
	if text == "" {
		text = summarize.MergeText(parts, in)
	}
	header := summaryHeader(span, fmt.Sprintf("%s from %d summaries", kind, len(blocks)), trig, focus)
	b := conv.NewSummary(c.appendIndex(header+"\n\n"+text, dedupe(entries), c.indexBudget()), span)
	b.Merged = true
	b.ID = cv.NewID()
	return b, fbs, usage
}

// partsOf reads summary blocks as parts of a merge: their texts without
// header and recall index, the turns they cover together, the entries of
// their recall indexes (oldest first) and their tokens.
func (c *Ladder) partsOf(blocks []conv.Block) (parts []summarize.Part, span conv.Span, entries []indexEntry, total int) {
	parts = make([]summarize.Part, 0, len(blocks))
	span = conv.Span{First: -1}
	for i := range blocks {
		b := &blocks[i]
		s := conv.Span{}
		if b.Span != nil {
			s = *b.Span
		}
		entries = append(entries, parseIndex(b.Text)...)
		parts = append(parts, summarize.Part{Text: stripHeader(WithoutIndex(b.Text)), Span: s})
		if span.First < 0 || s.First < span.First {
			span.First = s.First
		}
		span.Last = max(span.Last, s.Last)
		total += conv.BlockTokens(b, c.cfg.Counter)
	}
	return parts, span, entries, total
}

// consolidate merges every summary in the conversation into one when
// together they exceed the summary budget. The merged summary takes the
// place of the first; messages left with nothing get a one-line pointer.
func (c *Ladder) consolidate(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, models bool) (Result, error) {
	res := Result{Trigger: trig}
	var blocks []conv.Block
	first, last, total := -1, -1, 0
	for i := range cv.Messages {
		for j := range cv.Messages[i].Blocks {
			b := &cv.Messages[i].Blocks[j]
			if b.Type != conv.TypeSummary {
				continue
			}
			if first < 0 {
				first = i
			}
			last = i
			blocks = append(blocks, *b)
			total += conv.BlockTokens(b, c.cfg.Counter)
		}
	}
	if len(blocks) < 2 || total <= c.summaryBudget() {
		return res, nil
	}
	merged, fbs, usage := c.merge(ctx, cv, blocks, trig, "", models)
	res.Fallbacks, res.Usage = fbs, usage
	msgs := make([]conv.Message, 0, last-first+1)
	placed := false
	for i := first; i <= last; i++ {
		m := cv.Messages[i]
		var out []conv.Block
		for _, b := range m.Blocks {
			if b.Type != conv.TypeSummary {
				out = append(out, b)
				continue
			}
			if !placed {
				out = append(out, merged)
				placed = true
			}
		}
		if len(out) == 0 {
			note := conv.NewText(conv.SourceCompactor, fmt.Sprintf("[The summary that was here is now part of summary %s above.]", merged.ID))
			note.ID = cv.NewID()
			out = []conv.Block{note}
		}
		m.Blocks = out
		msgs = append(msgs, m)
	}
	e := conv.Edit{Kind: conv.EditReplace, Reason: "compact:" + string(trig) + ":merge", From: first, To: last + 1, Messages: msgs}
	if err := c.commit(ctx, cv, k, e); err != nil {
		return res, err
	}
	res.Compactions++
	res.Edits = append(res.Edits, e)
	res.Summaries = append(res.Summaries, Summary{ID: merged.ID, Turns: *merged.Span, Tokens: conv.BlockTokens(&merged, c.cfg.Counter), Replaced: total, Kind: KindMerged, Merged: true})
	return res, nil
}
