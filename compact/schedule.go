package compact

import (
	"math"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/horizon"
	"github.com/ctxkit/ctxkit/pricing"
)

// When to compact: the cost model.
//
// A compaction at context size T that leaves S tokens costs, once, A: the
// summary call (it reads the prompt, at the cache-read price r when the
// provider caches, else the input price p; it adds an instruction of I
// tokens and writes a summary of O tokens at the output price o) and, with
// a cache, the rewrite of what it kept (S tokens written at w instead of
// read at r):
//
//	A = (w−r)·S + r·S + w·I + o·O     (with a cache; r·S: the read of what stays)
//	A = p·S + p·I + o·O               (without)
//
// Between compactions the context grows by g tokens a request from S to T
// and every request reads it, at c = r (cache) or p (none) a token. Per
// request, over a cycle of D = T − S tokens (D/g requests),
//
//	cost(D) = c·(S + D/2) + g·A/D + (terms that do not depend on D)
//
// which is least at D* = √(2·g·A/c): where the rent the growing context
// pays over a cycle equals the price of the compaction that ends it (the
// square-root rule of the economic order quantity, and of micro's batch
// interval). cost grows with S too, so a compaction keeps as little as
// the floor below allows, and the next one is due at S + D*, never later
// than the hard threshold (with prices; the soft threshold without).
//
// Any automatic compaction before the hard threshold is a bet that the
// session goes on: it pays back after A / (c·(T − S)) requests. The
// horizon it trusts is the one micro's clearing trusts (package horizon: a
// session that has made n requests makes n/9 more nine times in ten under
// the Lindy prior). Below the hard threshold the ladder compacts only when
// the payback fits that horizon; a short session goes on whole up to the
// hard threshold. And it stakes only what the session has saved: when the
// engine keeps the session's account (SetSaved), a compaction below the
// hard threshold is taken only when what it costs at once (Cost: the
// summary call and the rewrite of what it keeps) is covered by what the
// session has saved so far against sending everything, so that a session
// that ends right after it still costs no more than sending everything
// would have (do no harm, by construction rather than by the odds).

// What a compaction keeps: the floor.
//
// The floor S a compaction leaves (the system prompt and tools, the
// summary, the last step — all it must keep — and, beyond them, the pinned
// tail, the user's words and the recall index) is paid for three times:
// every request reads it (c·S), the compaction writes it again (a·S of A,
// a = w with a cache, p without), and it shortens the cycle to the soft
// threshold T, so compactions come more often. With the cycle ending at T
// (D = T − S) and A = a·S + K (K: the instruction and the summary's
// output), the cost per request of a cycle is
//
//	f(S) = c·(S + T)/2 + g·(a·S + K)/(T − S)
//
// and one more kept token costs f'(S) = c/2 + g·(a·T + K)/D² a request:
// every request of the cycle reads it, but the cycle, ending at T, is a
// token of growth shorter, so the context a request reads grows by half a
// token on average. What a token in view is worth is the knob,
// Config.KeepValue: v·c a request (v = 1, the default: a token in view is
// worth what reading it costs). What the kept token adds to what is in
// view is the same half token on average, so it is worth v·c/2 a request,
// and what it adds beyond its cost is (v − 1)·c/2. The floor is where
// that meets the compaction's share:
//
//	D = √(2·g·(a·T + K) / ((v − 1)·c)),   S = T − D
//
// At v ≤ 1 a kept token is worth no more than it costs to read, and the
// rewrite premium and the shorter cycle come on top: a compaction keeps
// only what it must. Above 1 the floor rises with v and with the window,
// and falls as the session grows faster or a compaction costs more.
// Nothing here is fitted: prices, the window and the growth decide it,
// and the knob moves the result along its cost–recall curve.

// DefaultKeepValue is Config.KeepValue's default: a token kept in view is
// worth what reading it costs.
const DefaultKeepValue = 1.0

// Floor returns the most a compaction should leave, in tokens, for a
// context growing by growth tokens a request against the soft threshold
// soft at prices p, when keeping a token in view for a request is worth
// value times the price of reading it; soft when nothing limits it (no
// prices, no growth), 0 when the cost model wants no more than the least.
func Floor(p pricing.Table, soft int, growth, value float64) int {
	if growth <= 0 || p == (pricing.Table{}) || (p.Input <= 0 && p.CacheRead <= 0) {
		return soft
	}
	if value <= 1 {
		return 0
	}
	a := p.WritePrice()
	k := a*summaryInstrTokens + p.Output*summaryOutputTokens
	d := math.Sqrt(2 * growth * (a*float64(soft) + k) / ((value - 1) * p.ReadPrice()))
	return max(soft-int(d), 0)
}

// Schedule is the arithmetic of one automatic compaction decision, for
// tests and reports.
type Schedule struct {
	Kept     int     // S: tokens a compaction leaves (the last one's, else an estimate)
	Growth   float64 // g: tokens the context grows per request
	Once     float64 // A: what one compaction costs, in price × tokens
	Cycle    int     // D*: the cheapest growth between compactions
	Due      int     // T = min(S + D*, the threshold Plan was given)
	Payback  float64 // requests for an early compaction to pay back
	Horizon  float64 // n/9: requests the session goes on nine times in ten (package horizon)
	Requests int     // n
	Summary  int     // the summary tokens priced (at least summaryOutputTokens)
}

// The summary instruction the cost counts (about the size of summarize's
// prompt) and the least a model summary writes.
const (
	summaryInstrTokens  = 1_000
	summaryOutputTokens = 2_000 // at least this much is written by a model summary
)

// Plan works out the schedule from what a compaction would keep (kept),
// the requests so far, the growth per request and the summary a
// compaction would write (summary tokens, at least summaryOutputTokens),
// against the soft threshold soft, at prices p. It is pure: the proxy,
// which keeps no per-session counters, calls it with what it reads off the
// client's history. Without prices or growth the next compaction is due at
// the soft threshold.
func Plan(p pricing.Table, soft, kept, requests int, growth float64, summary int) Schedule {
	s := Schedule{Requests: requests, Kept: kept, Growth: growth, Due: soft}
	if growth <= 0 || p == (pricing.Table{}) || (p.Input <= 0 && p.CacheRead <= 0) {
		return s
	}
	carry := p.ReadPrice()
	s.Summary = max(summaryOutputTokens, summary)
	s.Once = Cost(p, kept, kept, summary)
	s.Cycle = int(math.Sqrt(2 * growth * s.Once / carry))
	s.Due = min(kept+s.Cycle, soft)
	s.Horizon = horizon.Requests(requests, horizon.DefaultConfidence)
	if s.Due > kept {
		// The summary call reads the whole context once more besides
		// (what it costs beyond Once does not depend on the cycle, so
		// the cycle above is unchanged): one more request to pay back.
		s.Payback = Cost(p, s.Due, kept, summary) / (carry * float64(s.Due-kept))
		// A session that reaches the threshold within the horizon pays
		// for a compaction there anyway: taken at Due instead, the same
		// compaction comes earlier and each request until then reads
		// D* fewer tokens. What it costs is the shift of every later
		// compaction, a share D*/(soft−kept) of one, which the square
		// root rule has already priced. It pays back at once.
		if reach := float64(soft-s.Due) / growth; soft > s.Due && reach <= s.Horizon {
			s.Payback = min(s.Payback, reach)
		}
	}
	return s
}

// Cost is what one compaction costs at once, in price × tokens: the
// summary call reads the context of before tokens (at the cache-read
// price r when the provider caches, else the input price p), adds the
// instruction (I tokens, written) and writes a summary of at least
// summaryOutputTokens at the output price o; with a cache, the next
// request then writes the kept tokens again where it would have read
// them (the premium w − r):
//
//	r·before + (w−r)·kept + w·I + o·O     (with a cache)
//	p·before + p·I + o·O                  (without)
//
// Schedule.Once is Cost with before = kept (A in the package doc); the
// engine charges a session's account with it after each compaction.
func Cost(p pricing.Table, before, kept, summary int) float64 {
	out := max(summaryOutputTokens, summary)
	return p.ReadPrice()*float64(before) + p.RewritePrice()*float64(kept) + p.WritePrice()*summaryInstrTokens + p.Output*float64(out)
}

// Early reports whether a compaction below the soft threshold soft is due
// at usage: the cycle the cost model wants is over, and the session has
// gone on long enough that the compaction pays back nine times in ten.
func (s Schedule) Early(soft, usage int) bool {
	return s.Due < soft && usage >= s.Due && s.Payback <= s.Horizon
}

// schedule works out when the next automatic compaction is due, from the
// requests seen so far.
func (c *Ladder) schedule(cv *conv.Conversation, usage int) Schedule {
	kept := c.keepEstimate(cv, usage)
	summary := c.summaryEstimate(max(usage-kept, 0))
	if c.keptAfter > 0 {
		// What the last compaction left and wrote, measured: it carries
		// the summaries (merged once over their budget) and the recall
		// index, which the estimate of a single new summary misses, and
		// the next compaction carries them again.
		kept = max(kept, min(c.keptAfter, usage))
		summary = max(summary, c.wrote)
	}
	return Plan(c.cfg.Pricing, c.reach(), kept, c.requests, c.growth(usage), summary)
}

// written is what the summaries res produced hold, recall indexes aside:
// the tokens a summarizer wrote.
func (c *Ladder) written(cv *conv.Conversation, res Result) int {
	ids := make(map[string]bool, len(res.Summaries))
	for _, s := range res.Summaries {
		ids[s.ID] = true
	}
	n := 0
	for i := range cv.Messages {
		for j := range cv.Messages[i].Blocks {
			if b := &cv.Messages[i].Blocks[j]; b.Type == conv.TypeSummary && ids[b.ID] {
				n += c.cfg.Counter.Count(WithoutIndex(b.Text))
			}
		}
	}
	return n
}

// reach is as far as a cycle may run: with prices, the hard threshold —
// between the soft threshold and it the cost model decides, as it does
// below the soft threshold — and without them the soft threshold.
func (c *Ladder) reach() int {
	if c.cfg.Pricing == (pricing.Table{}) {
		return c.budget.Soft
	}
	return c.budget.Hard
}

// early reports whether an automatic compaction under the hard threshold
// is due at usage: the cycle the cost model wants is over and the session
// has gone on long enough for the compaction to pay back nine times in
// ten. It keeps where the next one is expected for NextAt. A session too
// short for a compaction to pay back goes on whole up to the hard
// threshold (do no harm); without prices the soft threshold is the due
// point, as before the cost model.
func (c *Ladder) early(cv *conv.Conversation, usage int) bool {
	s := c.schedule(cv, usage)
	pays := s.Payback <= s.Horizon
	if pays && c.accounted && usage >= s.Due && !horizon.Covered(Cost(c.cfg.Pricing, usage, s.Kept, s.Summary)-c.cfg.Pricing.ReadPrice()*float64(usage-s.Kept), c.saved) {
		// Do no harm: the stake is more than the session has saved.
		pays = false
	}
	c.next = c.reach()
	if pays {
		c.next = s.Due
	}
	return pays && usage >= s.Due
}

// SetSaved gives the ladder what the session has saved so far against
// sending everything, in price × tokens (the engine's account): from then
// on a compaction below the hard threshold is taken only when its Cost is
// covered by it. A ladder never given it compacts by the schedule alone.
func (c *Ladder) SetSaved(saved float64) { c.saved, c.accounted = saved, true }

// ScheduleAt returns the compaction schedule of cv as it stands.
func (c *Ladder) ScheduleAt(cv *conv.Conversation) Schedule { return c.schedule(cv, c.Usage(cv)) }

// NextAt is the context size at which the next automatic compaction is
// expected, as the schedule worked out at the last request (Before): where
// the cost model puts it when the session has gone on long enough for an
// early one to pay, else the soft threshold. Clearing pays only until then
// (micro.Config.CompactAt). It costs nothing: the schedule is worked out
// once a request, in Before.
func (c *Ladder) NextAt() int {
	if c.next == 0 || c.stopped != nil {
		return c.budget.Soft
	}
	return c.next
}

// keepEstimate is what a compaction of cv would keep, in usage's units:
// everything from the pinned tail on, the system prompt and tools, the
// user's words it carries and the summary it writes.
func (c *Ladder) keepEstimate(cv *conv.Conversation, usage int) int {
	// Only the pinned tail and the user's words are walked, not the
	// history before them: what the prompt holds besides (the system
	// prompt and tools, the region a summary would replace) is read off
	// usage, so the cost per request grows with the tail.
	pin := c.pinStart(cv, c.pinLimit(), false)
	tail := 0
	for i := pin; i < len(cv.Messages); i++ {
		tail += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
	}
	fixed := c.fixedTokens(cv)
	_, words := c.carriedWords(cv, 0, pin)
	region := max(usage-fixed-tail, 0)
	return min(fixed+tail+words+c.summaryEstimate(region), usage)
}

// growth is the tokens the context has grown by a request: since the last
// automatic compaction, else since the start.
func (c *Ladder) growth(usage int) float64 {
	switch {
	case c.sinceAuto > 0:
		return float64(usage-c.keptAfter) / float64(c.sinceAuto)
	case c.requests > 0:
		return float64(usage) / float64(c.requests)
	}
	return 0
}

// keepSizes is what a compaction may keep beyond what it must, in tokens.
type keepSizes struct {
	sized   bool
	pin     int // the pinned tail, the last step included (pinLimit)
	words   int // the user's words carried verbatim (userBudget)
	summary int // the summaries carried, before they are merged (summaryBudget)
	// sizedSummary is summary as sized, before the files a compaction
	// carries take their share of it (pinWithFiles).
	sizedSummary int
}

// sizeFloor sizes what the next compaction of cv may keep (Floor): what
// it must keep — the system prompt and tools and the last step — comes
// first; then the summaries it carries (merged once over their budget;
// a merged summary ends with a recall index of up to half that budget),
// up to the configured SummaryBudget, never under what the smallest
// summary takes; the rest of the floor goes to the user's words, then to
// the pinned tail (as the most it may hold: it holds KeepRecentTurns and
// KeepRecentTokens, within that). The summaries are kept, every request
// reads them and every merge writes them again, so they are priced as any
// kept token is. Without prices or growth the configured keep counts
// stand.
func (c *Ladder) sizeFloor(cv *conv.Conversation, usage int) {
	c.keep = keepSizes{}
	growth := c.growth(usage)
	if growth <= 0 || c.cfg.Pricing == (pricing.Table{}) {
		return
	}
	floor := Floor(c.cfg.Pricing, c.reach(), growth, c.cfg.KeepValue)
	last := 0
	for i := c.pinStart(cv, 0, false); i < len(cv.Messages); i++ {
		last += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
	}
	room := max(floor-c.fixedTokens(cv)-last-c.indexBudget(), 0)
	summary := min(max(room, 2*c.cfg.SummaryMin), c.configuredSummaryBudget())
	room = max(room-summary, 0)
	words := min(c.cfg.UserBudget, room)
	c.keep = keepSizes{sized: true, words: words, pin: last + room - words, summary: summary, sizedSummary: summary}
}

// fixedTokens are the system prompt's and the tool schemas' tokens.
func (c *Ladder) fixedTokens(cv *conv.Conversation) int {
	fixed := 0
	for i := range cv.System {
		fixed += conv.BlockTokens(&cv.System[i], c.cfg.Counter)
	}
	for i := range cv.Tools {
		fixed += conv.ToolTokens(&cv.Tools[i], c.cfg.Counter)
	}
	return fixed
}
