package compact

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// fit brings the conversation under limit tokens (estimate units) without
// any model call, the last two rungs of the ladder: drop replaces the
// oldest whole rounds with a truncation marker (the last step always
// stays), aiming at goal; when what is left is still over the limit — the
// last step alone is too large: a huge paste, result or tool input —
// shrink cuts the largest blocks of what is left to head and tail with
// recall ids. Originals are kept by k first, as always. The only case it
// cannot fix is a system prompt and tool schemas over the limit by
// themselves: an *OverflowError.
func (c *Ladder) fit(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, goal, limit int) (Result, error) {
	res := Result{Trigger: trig}
	if c.estimate(cv) <= limit {
		return res, nil
	}
	b := cv.Tokens(c.cfg.Counter)
	if fixed := b.System + b.Tools + b.Pending; fixed+minTail > limit {
		return res, &OverflowError{Tokens: fixed, Limit: limit}
	}
	r, err := c.drop(ctx, cv, k, trig, goal)
	res.add(r)
	if err != nil {
		return res, err
	}
	for i := 0; i < 6 && c.estimate(cv) > limit; i++ {
		aim := goal
		if i >= 2 {
			// Cutting to the goal was not enough (markers have a size):
			// the limit is what must hold.
			aim = limit - (i-1)*minTail
		}
		r, ok, err := c.shrink(ctx, cv, k, trig, aim)
		res.add(r)
		if err != nil {
			return res, err
		}
		if !ok {
			break
		}
	}
	return res, nil
}

// minTail is the least a conversation's messages can be cut to: a few
// blocks at their floor.
const minTail = 256

// drop replaces the oldest messages, up to a cut before the last step,
// with one user message: the summaries there (merged into one when they
// exceed the summary budget), a truncation marker naming the turns dropped,
// the files they changed, the critical content and the recall ids of the
// dropped blocks, and the newest of the user's words there (UserBudget).
// It takes the earliest round boundary that gets the conversation down to
// goal, else the earliest step boundary, else the latest cut.
func (c *Ladder) drop(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, goal int) (Result, error) {
	res := Result{Trigger: trig}
	n := len(cv.Messages)
	last := n - 1
	if last > 0 && cv.Messages[last].Role == conv.RoleUser && hasResults(&cv.Messages[last]) {
		last--
	}
	if last <= 0 {
		return res, nil
	}
	pre := make([]int, n+1)
	for i := range cv.Messages {
		pre[i+1] = pre[i] + conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
	}
	total := c.estimate(cv)
	sums := 0
	carriedAt := make([]int, n+1) // summary tokens in [0, j), capped as merged
	for i := range cv.Messages {
		for j := range cv.Messages[i].Blocks {
			if b := &cv.Messages[i].Blocks[j]; b.Type == conv.TypeSummary {
				sums += conv.BlockTokens(b, c.cfg.Counter)
			}
		}
		carriedAt[i+1] = min(sums, c.summaryBudget())
	}
	reaches := func(j int) bool {
		return total-pre[j]+carriedAt[j]+c.cfg.UserBudget+2*markerTokens <= goal
	}
	to := -1
	for j := 1; j <= last && to < 0; j++ {
		if isStart(cv, j) && reaches(j) {
			to = j
		}
	}
	for j := 1; j <= last && to < 0; j++ {
		if isCut(cv, j) && reaches(j) {
			to = j
		}
	}
	for j := last; j >= 1 && to < 0; j-- {
		if isCut(cv, j) {
			to = j
		}
	}
	if to < 0 {
		return res, nil
	}

	words, _ := c.carriedWords(cv, 0, to)
	var summaries, kept []conv.Block
	var region []conv.Message
	var ids []string
	replaced := 0
	for i := 0; i < to; i++ {
		m := cv.Messages[i]
		var rest []conv.Block
		for _, b := range m.Blocks {
			switch {
			case b.Type == conv.TypeSummary:
				summaries = append(summaries, b)
			case words[b.ID]:
				kept = append(kept, b)
			default:
				rest = append(rest, b)
				replaced += conv.BlockTokens(&b, c.cfg.Counter)
				ids = append(ids, b.ID)
			}
		}
		if len(rest) > 0 {
			m.Blocks = rest
			region = append(region, m)
		}
	}
	if len(region) == 0 {
		return res, nil // only summaries and kept words: nothing to drop
	}
	if len(summaries) > 1 || sumTokens(summaries, c.cfg.Counter) > c.summaryBudget() {
		merged, fbs, usage := c.merge(ctx, cv, summaries, trig, "", false)
		res.Fallbacks, res.Usage = append(res.Fallbacks, fbs...), res.Usage.Add(usage)
		summaries = []conv.Block{merged}
	}
	span := conv.Span{First: cv.Messages[0].Turn, Last: cv.Messages[to-1].Turn}
	text := c.markerText(region, span, ids)
	marker := conv.NewText(conv.SourceCompactor, text)
	marker.ID = cv.NewID()

	m := conv.Message{Role: conv.RoleUser, Turn: cv.Messages[0].Turn}
	m.Blocks = append(append(append(m.Blocks, summaries...), marker), kept...)
	end := to
	if isStart(cv, to) {
		m.Blocks = append(m.Blocks, cv.Messages[to].Blocks...)
		m.Turn = cv.Messages[to].Turn
		end++
	}
	e := conv.Edit{Kind: conv.EditReplace, Reason: "compact:" + string(trig) + ":drop", From: 0, To: end, Messages: []conv.Message{m}}
	if err := c.commit(ctx, cv, k, e); err != nil {
		return res, err
	}
	res.Compactions++
	res.Edits = append(res.Edits, e)
	res.Ladder = append(res.Ladder, "drop")
	res.Summaries = append(res.Summaries, Summary{ID: marker.ID, Turns: span, Tokens: conv.BlockTokens(&marker, c.cfg.Counter), Replaced: replaced, Kind: "truncated"})
	c.cfg.Logger.Info("compact: dropped the oldest turns to fit the window", "trigger", trig, "turns", fmt.Sprintf("%d-%d", span.First, span.Last), "replaced", replaced)
	return res, nil
}

// markerTokens bounds the truncation marker's text, and again its recall
// index.
const markerTokens = 600

// DropMarker opens the marker that replaces turns dropped to fit the
// window.
const DropMarker = "[Earlier turns dropped to fit the context window"

// markerText is the truncation marker for the dropped region: which turns,
// the files they changed, the critical content (constraints, recent
// errors) within markerTokens, and the recall index of what went within
// markerTokens more.
func (c *Ladder) markerText(region []conv.Message, span conv.Span, ids []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: turns %d–%d (%d blocks). The originals are in the session transcript; recall any of them by id.]", DropMarker, span.First, span.Last, len(ids))
	if files := changedFiles(region); len(files) > 0 {
		sb.WriteString("\nFiles changed in the dropped turns: " + strings.Join(files, ", "))
	}
	if len(ids) > 0 {
		fmt.Fprintf(&sb, "\nRecall ids: %s to %s.", ids[0], ids[len(ids)-1])
	}
	text := withCritical(sb.String(), critical(region), c.cfg.Counter)
	if c.cfg.Counter.Count(text) > markerTokens {
		text = toolresult.ClipText(text, markerTokens*3, "[…]")
	}
	text = c.appendIndex(text, regionEntries(region, nil), min(c.indexBudget(), markerTokens))
	return text
}

func sumTokens(bs []conv.Block, counter conv.Counter) int {
	n := 0
	for i := range bs {
		n += conv.BlockTokens(&bs[i], counter)
	}
	return n
}

// shrink cuts the largest blocks of the conversation, the recent tail
// included, to head and tail with a note and recall id, until it is down
// to goal: the water level L is the largest size such that cutting every
// block above it to L frees enough. Tool results, text (the user's too:
// its oldest part goes first by being the largest), summaries and tool
// inputs (string values cut, keys kept) are cut; images become a note;
// thinking and pinned blocks (but summaries) are left alone. ok is false
// when nothing could be cut.
func (c *Ladder) shrink(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, goal int) (Result, bool, error) {
	res := Result{Trigger: trig}
	excess := c.estimate(cv) - goal
	if excess <= 0 {
		return res, true, nil
	}
	type cand struct{ i, j, tok int }
	var cands []cand
	for i := range cv.Messages {
		for j := range cv.Messages[i].Blocks {
			b := &cv.Messages[i].Blocks[j]
			switch b.Type {
			case conv.TypeToolResult, conv.TypeText, conv.TypeSummary, conv.TypeToolUse, conv.TypeImage:
			default:
				continue
			}
			if b.Meta.Pinned && b.Type != conv.TypeSummary {
				continue // a block its caller must send as it is (a signed part)
			}
			if t := conv.BlockTokens(b, c.cfg.Counter); t > blockFloor {
				cands = append(cands, cand{i, j, t})
			}
		}
	}
	if len(cands) == 0 {
		return res, false, nil
	}
	sort.Slice(cands, func(a, b int) bool { return cands[a].tok > cands[b].tok })
	sizes := make([]int, len(cands))
	for i, cd := range cands {
		sizes[i] = cd.tok
	}
	level := ShrinkLevel(sizes, excess)
	var blocks []conv.Block
	for _, cd := range cands {
		if cd.tok <= level {
			break
		}
		b := &cv.Messages[cd.i].Blocks[cd.j]
		nb, ok := c.cut(b, level)
		if ok && conv.BlockTokens(&nb, c.cfg.Counter) < cd.tok {
			blocks = append(blocks, nb)
		}
	}
	if len(blocks) == 0 {
		return res, false, nil
	}
	e := conv.Edit{Kind: conv.EditRung, Reason: "compact:" + string(trig) + ":shrink", Blocks: blocks}
	if err := c.commit(ctx, cv, k, e); err != nil {
		return res, false, err
	}
	res.Compactions++
	res.Edits = append(res.Edits, e)
	res.Ladder = append(res.Ladder, "shrink")
	c.cfg.Logger.Info("compact: cut the largest blocks to fit the window", "trigger", trig, "blocks", len(blocks), "level", level)
	return res, true, nil
}

// blockFloor is the least a cut block keeps, and noteTokens what the
// note naming the cut costs.
const (
	blockFloor = 48
	noteTokens = 40
)

// cut returns b cut to about level tokens, same id and type (an image
// becomes a text note).
func (c *Ladder) cut(b *conv.Block, level int) (conv.Block, bool) {
	tok := conv.BlockTokens(b, c.cfg.Counter)
	chars := func(text string) int {
		// The block's own characters per token, so code and prose alike
		// land near the level.
		per := float64(len(text)) / float64(max(tok, 1))
		return int(float64(max(level-noteTokens, 8)) * per)
	}
	nb := b.Clone()
	switch b.Type {
	case conv.TypeImage:
		nb = conv.NewText(b.Meta.Source, fmt.Sprintf("[image removed to fit the context window; %s]", toolresult.Recall(b.ID, c.cfg.RecallTool)))
		nb.ID = b.ID
		nb.Meta.Rung = conv.RungPlaceholder
	case conv.TypeToolUse:
		in, ok := b.Input, false
		for n := chars(string(b.Input)); n >= 40; n /= 2 {
			in, ok = toolresult.ClipInput(b.Input, n, b.ID)
			if !ok {
				return nb, false
			}
			trial := b.Clone()
			trial.Input = in
			trial.Meta.Tokens = 0
			if conv.BlockTokens(&trial, c.cfg.Counter) <= level {
				break
			}
		}
		if !ok {
			return nb, false
		}
		nb.Input = in
		nb.Meta.Tokens = 0
		nb.Meta.Rung = max(nb.Meta.Rung, conv.RungCompressed)
	case conv.TypeToolResult:
		text := b.ResultText()
		what := "result"
		nb.SetText(toolresult.ClipText(text, chars(text), fmt.Sprintf("[… %d of %d lines cut to fit the context window; the whole %s: %s]", cutLines(text, chars(text)), lines(text), what, toolresult.Recall(b.ID, c.cfg.RecallTool))), max(b.Meta.Rung, conv.RungCompressed))
		nb.Structured = nil
	default: // text, summary
		text := b.Text
		rung := max(b.Meta.Rung, conv.RungCompressed)
		if b.Type == conv.TypeSummary {
			rung = b.Meta.Rung
		}
		nb.SetText(toolresult.ClipText(text, chars(text), fmt.Sprintf("[… %d of %d lines cut to fit the context window; the whole text: %s]", cutLines(text, chars(text)), lines(text), toolresult.Recall(b.ID, c.cfg.RecallTool))), rung)
	}
	return nb, true
}

func lines(s string) int { return strings.Count(s, "\n") + 1 }

// cutLines estimates the lines a cut to keep characters leaves out.
func cutLines(s string, keep int) int {
	if keep >= len(s) {
		return 0
	}
	return max(strings.Count(s[min(keep*2/3, len(s)):max(len(s)-keep/3, min(keep*2/3, len(s)))], "\n"), 1)
}
