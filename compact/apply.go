package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
)

// TruncationMarker replaces a region when no summary could be made (seed
// 001 §7.3).
const TruncationMarker = "[Earlier turns truncated due to compactor error]"

// errInflated rejects a summary that is not smaller than what it replaces.
var errInflated = errors.New("summary is not smaller than the turns it replaces")

// apply summarizes plan p and replaces its region: the configured
// summarizer first; on error, timeout or inflation the extractive one; if
// that fails too, the oldest compactable region is truncated with a
// marker. The edit is verified against the invariants on a copy, kept,
// then applied. primaryFailed reports that the configured summarizer did
// not deliver.
func (c *Ladder) apply(ctx context.Context, cv *conv.Conversation, k Keeper, p plan, trig Trigger, focus string, ps pass) (res Result, primaryFailed bool, err error) {
	res.Trigger = trig
	in := summarize.Input{
		Messages:     p.region,
		Span:         p.span,
		Template:     c.cfg.Template,
		Focus:        focus,
		TargetTokens: c.target(p.tokens),
		Counter:      c.cfg.Counter,
	}
	if c.cfg.Prefix != nil && ps.models {
		if req, perr := c.cfg.Prefix(cv); perr == nil {
			in.Prefix = req
			in.KeepFrom = excerpt(&cv.Messages[p.to])
		} else {
			c.cfg.Logger.Warn("compact: no prefix for the cache-reusing summary", "err", perr)
		}
	}
	var carried []conv.Block
	var overlap []conv.Block
	for _, b := range p.carried {
		if b.Type == conv.TypeSummary && b.Span != nil && b.Span.First <= p.span.Last && p.span.First <= b.Span.Last {
			overlap = append(overlap, b)
			continue
		}
		carried = append(carried, b)
	}
	// The new summary covers turns an earlier one covers (a round cut
	// twice): the two must become one (invariant 3). A summarizer that
	// folds the earlier one into its summary saves the merge.
	var was conv.Span
	var earlier []indexEntry
	if len(overlap) > 0 {
		in.Earlier, was, earlier, _ = c.partsOf(overlap)
	}
	crit := critical(p.region)

	out, kind, fbs, perr := c.summarize(ctx, ps.s, in, p.tokens, crit)
	res.Fallbacks = append(res.Fallbacks, fbs...)
	res.Usage = res.Usage.Add(out.Usage)
	if perr != nil { // the caller's context ended: nothing changes
		return res, len(fbs) > 0, perr
	}
	primaryFailed = len(fbs) > 0
	if kind == "truncated" {
		// Truncate the oldest compactable region instead (seed 001 §7.3).
		if ps.mode == ModeRegion {
			if q, ok := c.planRound(cv, c.estimate(cv)-p.tokens+c.summaryEstimate(p.tokens), false); ok {
				p = q
			}
		}
		r, err := c.truncate(ctx, cv, k, p, trig)
		r.Fallbacks, r.Usage = res.Fallbacks, res.Usage
		return r, true, err
	}

	entries := slices.DeleteFunc(regionEntries(p.region, nil), func(e indexEntry) bool { return p.files[e.id] })
	span, kind := p.span, out.Kind
	folded := len(overlap) > 0 && out.Folded
	if folded {
		// One summary of both, written in one call: it takes the earlier
		// one's turns and recall index, as a merge would.
		span = conv.Span{First: min(was.First, p.span.First), Last: max(was.Last, p.span.Last)}
		kind = fmt.Sprintf("%s, folding in the earlier summary of turns %d–%d", out.Kind, was.First, was.Last)
		entries = dedupe(append(earlier, entries...))
	}
	sum := conv.NewSummary(c.appendIndex(summaryHeader(span, kind, trig, focus)+"\n\n"+out.Text, entries, c.indexBudget()), span)
	sum.Merged = folded
	sum.ID = cv.NewID()
	if len(overlap) > 0 && !folded {
		m, mfbs, mu := c.merge(ctx, cv, append(overlap, sum), trig, focus, ps.models)
		res.Fallbacks = append(res.Fallbacks, mfbs...)
		res.Usage = res.Usage.Add(mu)
		sum = m
	}
	carried = append(carried, sum)
	info := Summary{ID: sum.ID, Turns: *sum.Span, Tokens: conv.BlockTokens(&sum, c.cfg.Counter), Replaced: p.tokens, Kind: out.Kind, Merged: sum.Merged, CacheReuse: out.CacheReuse}
	for i := range carried {
		if path, _, _, ok := carriedOf(&carried[i]); ok {
			info.Files = append(info.Files, path)
		}
	}
	reason := "compact:" + string(trig)
	if primaryFailed {
		reason += ":fallback-extractive"
	}
	e := c.edit(cv, p, carried, reason)
	if err := c.commit(ctx, cv, k, e); err != nil {
		return res, primaryFailed, err
	}
	res.Compactions++
	res.Summaries = append(res.Summaries, info)
	res.Edits = append(res.Edits, e)
	c.cfg.Logger.Info("compact: summarized", "trigger", trig, "turns", fmt.Sprintf("%d-%d", p.span.First, p.span.Last), "replaced", p.tokens, "summary", info.Tokens, "kind", out.Kind)
	return res, primaryFailed, nil
}

// summarize runs the fallback chain and returns the output and its kind
// ("llm", "extractive", or "truncated" when both failed). err is set only
// when the caller's context ended.
func (c *Ladder) summarize(ctx context.Context, s summarize.Summarizer, in summarize.Input, regionTokens int, crit []criticalItem) (summarize.Output, string, []Fallback, error) {
	var fbs []Fallback
	try := func(s summarize.Summarizer, name string) (summarize.Output, error) {
		sctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		out, err := s.Summarize(sctx, in)
		if err != nil {
			if ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
				return out, fmt.Errorf("%s summarizer timed out after %v", name, c.cfg.Timeout)
			}
			return out, err
		}
		out.Text = withCritical(out.Text, crit, c.cfg.Counter)
		replaced := regionTokens
		if out.Folded {
			// It replaces the earlier summaries too.
			for _, p := range in.Earlier {
				replaced += c.cfg.Counter.Count(p.Text)
			}
		}
		if n := conv.BlockTokens(&conv.Block{Type: conv.TypeSummary, Text: out.Text}, c.cfg.Counter); n >= replaced {
			return out, fmt.Errorf("%w (%d tokens for %d)", errInflated, n, replaced)
		}
		return out, nil
	}
	primary := "llm"
	if _, ok := s.(*summarize.Extractive); ok {
		primary = "extractive"
	}
	out, err := try(s, primary)
	if err == nil {
		return out, out.Kind, nil, nil
	}
	if ctx.Err() != nil {
		return out, "", fbs, ctx.Err()
	}
	usage := out.Usage
	if primary != "extractive" {
		fbs = append(fbs, Fallback{From: primary, To: "extractive", Reason: c.fail("%v", err)})
		c.cfg.Logger.Warn("compact: summarizer failed, using the extractive summary", "err", err)
		in.Prefix = nil
		out, err = try(c.fallback, "extractive")
		out.Usage = out.Usage.Add(usage)
		if err == nil {
			return out, out.Kind, fbs, nil
		}
		if ctx.Err() != nil {
			return out, "", fbs, ctx.Err()
		}
	}
	fbs = append(fbs, Fallback{From: "extractive", To: "truncate", Reason: c.fail("%v", err)})
	c.cfg.Logger.Warn("compact: extractive summary failed, truncating", "err", err)
	return summarize.Output{Usage: out.Usage}, "truncated", fbs, nil
}

// truncate replaces the region with the truncation marker, keeping the
// carried blocks and the critical content.
func (c *Ladder) truncate(ctx context.Context, cv *conv.Conversation, k Keeper, p plan, trig Trigger) (Result, error) {
	res := Result{Trigger: trig}
	var sb strings.Builder
	sb.WriteString(TruncationMarker)
	if files := changedFiles(p.region); len(files) > 0 {
		sb.WriteString("\nFiles changed in the truncated turns: " + strings.Join(files, ", "))
	}
	text := withCritical(sb.String(), critical(p.region), c.cfg.Counter)
	text = c.appendIndex(text, regionEntries(p.region, nil), c.indexBudget())
	marker := conv.NewText(conv.SourceCompactor, text)
	marker.ID = cv.NewID()
	carried := append(append([]conv.Block(nil), p.carried...), marker)
	e := c.edit(cv, p, carried, "compact:"+string(trig)+":fallback-truncate")
	if err := c.commit(ctx, cv, k, e); err != nil {
		return res, err
	}
	res.Compactions++
	res.Summaries = append(res.Summaries, Summary{ID: marker.ID, Turns: p.span, Tokens: conv.BlockTokens(&marker, c.cfg.Counter), Replaced: p.tokens, Kind: "truncated"})
	res.Edits = append(res.Edits, e)
	return res, nil
}

func changedFiles(msgs []conv.Message) []string {
	var out []string
	for _, a := range summarize.Artifacts(msgs) {
		if a.Changed() {
			out = append(out, a.Path)
		}
	}
	if len(out) > 50 {
		out = append(out[:50], fmt.Sprintf("(+%d more)", len(out)-50))
	}
	return out
}

// edit builds the replacement: one user message with the carried blocks,
// then (when the region ends at a round opener) that opener's blocks.
func (c *Ladder) edit(cv *conv.Conversation, p plan, blocks []conv.Block, reason string) conv.Edit {
	m := conv.Message{Role: conv.RoleUser, Turn: cv.Messages[p.from].Turn}
	m.Blocks = append(m.Blocks, blocks...)
	for i := range m.Blocks {
		if m.Blocks[i].ID == "" { // a file carried (files.go)
			m.Blocks[i].ID = cv.NewID()
		}
	}
	to := p.to
	if p.mergeNext {
		m.Blocks = append(m.Blocks, cv.Messages[p.to].Blocks...)
		m.Turn = cv.Messages[p.to].Turn
		to++
	}
	if p.span.First > 0 && !p.mergeNext {
		m.Turn = p.span.First
	}
	return conv.Edit{Kind: conv.EditReplace, Reason: reason, From: p.from, To: to, Messages: []conv.Message{m}}
}

// commit verifies e on a copy (it must not add an invariant violation),
// has the keeper make the originals durable, then applies it.
func (c *Ladder) commit(ctx context.Context, cv *conv.Conversation, k Keeper, e conv.Edit) error {
	trial := cv.Clone()
	if err := trial.Apply(e); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if before, after := conv.Check(cv), conv.Check(trial); len(after) > len(before) {
		return fmt.Errorf("compact: the edit would break the conversation (a bug): %w", after.Err())
	}
	if err := k.Keep(ctx, e, cv); err != nil {
		return fmt.Errorf("compact: keeping the originals: %w", err)
	}
	if err := cv.Apply(e); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// summaryOpening opens every summary's header.
const summaryOpening = "[Summary of turns "

// Wrote reports whether text is what a compaction writes into a
// conversation: a summary (as its header opens it), a text ending with a
// recall index (a summary, a truncation marker) or a carried file. It is
// for a reader that has the text without the block it came in — a request
// read back off a provider's wire, where a proxy's summary message is
// plain text.
func Wrote(text string) bool {
	if strings.HasPrefix(text, summaryOpening) || strings.HasPrefix(text, TruncationMarker) || strings.Contains(text, IndexHeader) {
		return true
	}
	_, _, _, ok := parseFile(text)
	return ok
}

// summaryHeader is the first line of a summary block: which turns it
// replaces, who wrote it, and for manual compactions that the work goes on.
func summaryHeader(span conv.Span, kind string, trig Trigger, focus string) string {
	h := fmt.Sprintf(summaryOpening+"%d–%d (%s). The original messages are kept in the session transcript.]", span.First, span.Last, kind)
	switch trig {
	case TriggerManual, TriggerTool:
		who := "the user (/compact)"
		if trig == TriggerTool {
			who = "the model (compact tool)"
		}
		h += "\n[Compacted at the request of " + who
		if focus != "" {
			h += fmt.Sprintf(", focus: %q", focus)
		}
		h += ". The task is not finished by this: continue from the next action below.]"
	}
	return h
}

// stripHeader removes the bracketed header lines of a summary block.
func stripHeader(text string) string {
	for strings.HasPrefix(text, "[") {
		i := strings.IndexByte(text, '\n')
		line := text
		if i >= 0 {
			line = text[:i]
		}
		if !strings.HasPrefix(line, "[Summary of turns") && !strings.HasPrefix(line, "[Compacted at") && !strings.HasPrefix(line, "[Merged summary") {
			break
		}
		if i < 0 {
			return ""
		}
		text = strings.TrimLeft(text[i+1:], "\n")
	}
	return text
}

// excerpt is the start of a message's visible text, for telling a
// summarizer where its region ends.
func excerpt(m *conv.Message) string {
	for i := range m.Blocks {
		if t := strings.TrimSpace(m.Blocks[i].PlainText()); t != "" {
			r := []rune(t)
			if len(r) > 120 {
				r = r[:120]
			}
			return string(r)
		}
	}
	return ""
}
