package compact

import (
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
)

// plan is one region to replace: the messages [from, to) become a single
// user message holding the carried blocks and the summary. When mergeNext
// is set, message to (a round opener) is folded into that message too, so
// the replacement covers [from, to+1) and roles still alternate; otherwise
// message to is an assistant message and the summary message precedes it.
type plan struct {
	from, to  int
	mergeNext bool
	// carried are blocks kept verbatim in the summary message, in order:
	// earlier summaries, and in region mode the user's own words, then
	// the files carried (files.go).
	carried []conv.Block
	// files are the recall ids of the reads carried as files: their
	// blocks name them, so the recall index does not.
	files map[string]bool
	// region is what the summarizer sees: the messages with the carried
	// blocks taken out (messages left empty are dropped).
	region []conv.Message
	tokens int // tokens of the region's blocks
	span   conv.Span
}

// hasResults reports whether m carries tool results.
func hasResults(m *conv.Message) bool {
	for i := range m.Blocks {
		if m.Blocks[i].Type == conv.TypeToolResult {
			return true
		}
	}
	return false
}

// isStart reports whether a region may begin at message i: a user message
// that answers no tool call, so nothing before it is left unpaired.
func isStart(cv *conv.Conversation, i int) bool {
	m := &cv.Messages[i]
	return m.Role == conv.RoleUser && !hasResults(m)
}

// isCut reports whether a region may end just before message j: an
// assistant message (the summary message goes before it) or a round
// opener (the summary joins it).
func isCut(cv *conv.Conversation, j int) bool {
	if j <= 0 || j >= len(cv.Messages) {
		return false
	}
	return cv.Messages[j].Role == conv.RoleAssistant || isStart(cv, j)
}

// pinStart returns the index of the first pinned message: the recent tail
// that is never compacted. It always holds the last step (the newest user
// message, or the last assistant turn with its results), then grows one
// step at a time until it has KeepRecentTurns assistant turns and
// KeepRecentTokens tokens, but never past limit tokens. The index is
// always a cut point, so tool pairs stay whole.
func (c *Ladder) pinStart(cv *conv.Conversation, limit int, manual bool) int {
	n := len(cv.Messages)
	if n == 0 {
		return 0
	}
	p := n - 1
	if cv.Messages[p].Role == conv.RoleUser && hasResults(&cv.Messages[p]) && p > 0 {
		p--
	}
	turns, toks := 0, 0
	for i := p; i < n; i++ {
		toks += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
		if cv.Messages[i].Role == conv.RoleAssistant {
			turns++
		}
	}
	keepTok := min(c.cfg.KeepRecentTokens, limit)
	if manual {
		keepTok = 0
	}
	for p > 0 && (turns < c.cfg.KeepRecentTurns || toks < keepTok) {
		q := p - 1
		for q > 0 && !isCut(cv, q) {
			q--
		}
		add, t := 0, 0
		for i := q; i < p; i++ {
			add += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
			if cv.Messages[i].Role == conv.RoleAssistant {
				t++
			}
		}
		if toks+add > limit {
			break
		}
		p, toks, turns = q, toks+add, turns+t
	}
	return p
}

// userWords reports whether b is the user's own text.
func userWords(b *conv.Block) bool {
	return b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser
}

// clientText reports whether b is text a client wrote itself (a hook or a
// reminder). In the conversation's first message it is the context the
// client opens its session with — Claude Code's CLAUDE.md reminder,
// Codex's environment context and AGENTS.md, Gemini CLI's session context
// — which each client sends again after compacting its own history; a
// compaction carries it as it is, and the next one finds it in the first
// message again.
func clientText(b *conv.Block) bool {
	return b.Type == conv.TypeText && (b.Meta.Source == conv.SourceHook || b.Meta.Source == conv.SourceReminder)
}

// carriedWords picks what a plan over messages [from, to) keeps verbatim
// of what the client and the user said: the context the session opened
// with (clientText in the first message), as the client would send it
// again, up to UserBudget as
// configured; then the user's words, the newest first, while they fit the
// budget the cost model left them (userBudget); older words beyond it go
// to the summarizer (constraints verbatim). It also returns their tokens.
func (c *Ladder) carriedWords(cv *conv.Conversation, from, to int) (map[string]bool, int) {
	keep := map[string]bool{}
	opened := 0
	if from == 0 && to > 0 && cv.Messages[0].Role == conv.RoleUser {
		for j := range cv.Messages[0].Blocks {
			b := &cv.Messages[0].Blocks[j]
			if !clientText(b) {
				continue
			}
			t := conv.BlockTokens(b, c.cfg.Counter)
			if opened+t > c.cfg.UserBudget {
				break
			}
			opened += t
			keep[b.ID] = true
		}
	}
	used := 0
words:
	for i := to - 1; i >= from; i-- {
		m := &cv.Messages[i]
		if m.Role != conv.RoleUser {
			continue
		}
		for j := len(m.Blocks) - 1; j >= 0; j-- {
			b := &m.Blocks[j]
			if !userWords(b) {
				continue
			}
			t := conv.BlockTokens(b, c.cfg.Counter)
			if used+t > c.userBudget() {
				break words
			}
			used += t
			keep[b.ID] = true
		}
	}
	return keep, opened + used
}

// build fills in the plan for messages [from, to) in mode.
func (c *Ladder) build(cv *conv.Conversation, from, to int, mode Mode, files []carriedFile) plan {
	p := plan{from: from, to: to, mergeNext: to < len(cv.Messages) && isStart(cv, to)}
	words, _ := c.carriedWords(cv, from, to)
	fb, ids, own := fileBlocks(files, from, to)
	p.files = ids
	first, last := 0, 0
	for i := from; i < to; i++ {
		m := cv.Messages[i]
		var keep []conv.Block
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Type == conv.TypeSummary || words[b.ID] || own[b.ID] {
				p.carried = append(p.carried, *b)
				continue
			}
			if b.Type == conv.TypeThinking || b.Type == conv.TypeRedactedThinking {
				// Thinking is the model's scratch work: it is dropped,
				// not summarized, but still counts as freed.
				p.tokens += conv.BlockTokens(b, c.cfg.Counter)
				continue
			}
			keep = append(keep, *b)
			p.tokens += conv.BlockTokens(b, c.cfg.Counter)
		}
		if len(keep) == 0 {
			continue
		}
		if first == 0 {
			first = m.Turn
		}
		last = m.Turn
		m.Blocks = keep
		p.region = append(p.region, m)
	}
	if first == 0 && to > from {
		first, last = cv.Messages[from].Turn, cv.Messages[to-1].Turn
	}
	p.span = conv.Span{First: first, Last: last}
	p.carried = append(p.carried, fb...)
	return p
}

// minRegion is the smallest region worth a summary.
func (c *Ladder) minRegion() int { return 2 * c.cfg.SummaryMin }

// summaryEstimate is the size a region's summary is expected to have.
func (c *Ladder) summaryEstimate(regionTokens int) int {
	return c.target(regionTokens) + 40
}

// target is the summary target for a region: a fifth, bounded, never
// more than half the region, and, with prices, never more than the cost
// model lets all the summaries a compaction carries take (sizeFloor). A
// summary is kept as any kept token is: every request until the next
// compaction reads it. Before, a new summary could take up to SummaryMax
// whatever the budget, and the next compaction merged it down.
func (c *Ladder) target(regionTokens int) int {
	hi := c.cfg.SummaryMax
	if c.keep.sized {
		hi = min(hi, c.keep.sizedSummary)
	}
	return min(summarize.Target(regionTokens, c.cfg.SummaryMin, hi), max(regionTokens/2, 1))
}

// plan picks the next region to compact, or reports there is none.
// goal is the token count to get down to (≤ 0: as far as the pin allows).
func (c *Ladder) plan(cv *conv.Conversation, goal int, manual bool, mode Mode) (plan, bool) {
	if mode == ModeRound {
		return c.planRound(cv, goal, manual)
	}
	return c.planRegion(cv, goal, manual)
}

// planRegion: per round, the region from its opener up to its last
// assistant message (the round's final reply stays); the largest by
// compactable tokens wins.
func (c *Ladder) planRegion(cv *conv.Conversation, _ int, manual bool) (plan, bool) {
	pin, files := c.pinWithFiles(cv, manual)
	var best plan
	found := false
	for _, r := range cv.Rounds() {
		s := r.Start
		if s >= pin {
			break
		}
		if !isStart(cv, s) {
			continue
		}
		to := -1
		for j := min(r.End-1, pin); j > s; j-- {
			if cv.Messages[j].Role == conv.RoleAssistant {
				to = j
				break
			}
		}
		if to < 0 {
			continue
		}
		p := c.build(cv, s, to, ModeRegion, files)
		if p.tokens < c.minRegion() {
			continue
		}
		if !found || p.tokens > best.tokens {
			best, found = p, true
		}
	}
	return best, found
}

// planRound: from the first message up to a cut. It prefers a round
// boundary that keeps KeepRounds rounds, then any later round boundary,
// then a step boundary inside a round, taking the earliest cut that
// reaches the goal, or the latest allowed when none does.
func (c *Ladder) planRound(cv *conv.Conversation, goal int, manual bool) (plan, bool) {
	pin, files := c.pinWithFiles(cv, manual)
	if pin <= 0 {
		return plan{}, false
	}
	total := cv.Tokens(c.cfg.Counter).Total()
	rounds := cv.Rounds()
	base := pin
	if len(rounds) > c.cfg.KeepRounds {
		base = min(base, rounds[len(rounds)-c.cfg.KeepRounds].Start)
	}
	type cand struct {
		to    int
		round bool
	}
	var cands []cand
	for j := 1; j <= pin; j++ {
		if isCut(cv, j) {
			cands = append(cands, cand{j, isStart(cv, j)})
		}
	}
	reaches := func(p plan) bool {
		if goal <= 0 {
			return false
		}
		freed := 0
		for i := p.from; i < p.to; i++ {
			freed += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
		}
		for i := range p.carried {
			freed -= conv.BlockTokens(&p.carried[i], c.cfg.Counter)
		}
		return total-freed+c.summaryEstimate(p.tokens) <= goal
	}
	try := func(ok func(cand) bool) (plan, bool) {
		for _, k := range cands {
			if !ok(k) {
				continue
			}
			p := c.build(cv, 0, k.to, ModeRound, files)
			if p.tokens >= c.minRegion() && reaches(p) {
				return p, true
			}
		}
		return plan{}, false
	}
	if goal > 0 {
		if p, ok := try(func(k cand) bool { return k.round && k.to <= base }); ok {
			return p, true
		}
		if p, ok := try(func(k cand) bool { return k.round }); ok {
			return p, true
		}
		if p, ok := try(func(cand) bool { return true }); ok {
			return p, true
		}
	}
	// Nothing reaches the goal (or there is none): cut as late as allowed.
	for i := len(cands) - 1; i >= 0; i-- {
		p := c.build(cv, 0, cands[i].to, ModeRound, files)
		if p.tokens >= c.minRegion() {
			return p, true
		}
	}
	return plan{}, false
}

// pinLimit is the most the pinned tail may hold: half the target, so the
// summaries and older turns that remain have room, and with prices what
// the cost model leaves it (sizeFloor).
func (c *Ladder) pinLimit() int {
	if c.keep.sized {
		return min(c.keep.pin, c.budget.Target/2)
	}
	return c.budget.Target / 2
}

// userBudget is the most of the user's words a summary message carries
// verbatim: Config.UserBudget, and with prices what the cost model leaves
// them (sizeFloor).
func (c *Ladder) userBudget() int {
	if c.keep.sized {
		return min(c.keep.words, c.cfg.UserBudget)
	}
	return c.cfg.UserBudget
}
