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
// the pinned tail, the user's words and the summaries allow, and the
// next one is due at S + D*, never later than the soft threshold.
//
// Compacting before the soft threshold is a bet that the session goes on:
// it pays back after A / (c·(T − S)) requests. The horizon it trusts is
// the one micro's clearing trusts (package horizon: a session that has
// made n requests makes n/9 more nine times in ten under the Lindy prior).
// Below the soft threshold the ladder compacts only when the payback fits
// that horizon; short sessions never compact early.

// Schedule is the arithmetic of one automatic compaction decision, for
// tests and reports.
type Schedule struct {
	Kept     int     // S: tokens a compaction leaves (the last one's, else an estimate)
	Growth   float64 // g: tokens the context grows per request
	Once     float64 // A: what one compaction costs, in price × tokens
	Cycle    int     // D*: the cheapest growth between compactions
	Due      int     // T = min(S + D*, soft threshold)
	Payback  float64 // requests for an early compaction to pay back
	Horizon  float64 // n/9: requests the session goes on nine times in ten (package horizon)
	Requests int     // n
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
	carry, read, rewrite, write := p.Input, p.Input, 0.0, p.Input
	if p.Caches() {
		carry, read, rewrite, write = p.CacheRead, p.CacheRead, p.CacheWrite-p.CacheRead, p.CacheWrite
	}
	out := max(summaryOutputTokens, summary)
	s.Once = (rewrite+read)*float64(kept) + write*summaryInstrTokens + p.Output*float64(out)
	s.Cycle = int(math.Sqrt(2 * growth * s.Once / carry))
	s.Due = min(kept+s.Cycle, soft)
	s.Horizon = horizon.Requests(requests, horizon.DefaultConfidence)
	if s.Due > kept {
		s.Payback = s.Once / (carry * float64(s.Due-kept))
	}
	return s
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
	var growth float64
	switch {
	case c.sinceAuto > 0:
		growth = float64(usage-c.keptAfter) / float64(c.sinceAuto)
	case c.requests > 0:
		growth = float64(usage) / float64(c.requests)
	}
	return Plan(c.cfg.Pricing, c.budget.Soft, kept, c.requests, growth, c.summaryEstimate(max(usage-kept, 0)))
}

// early reports whether a compaction below the soft threshold is due at
// usage (Schedule.Early), and keeps where the next one is expected for
// NextAt.
func (c *Ladder) early(cv *conv.Conversation, usage int) bool {
	s := c.schedule(cv, usage)
	c.next = c.budget.Soft
	if s.Due < c.budget.Soft && s.Payback <= s.Horizon {
		c.next = s.Due
	}
	return s.Early(c.budget.Soft, usage)
}

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
	fixed := 0
	for i := range cv.System {
		fixed += conv.BlockTokens(&cv.System[i], c.cfg.Counter)
	}
	for i := range cv.Tools {
		fixed += conv.ToolTokens(&cv.Tools[i], c.cfg.Counter)
	}
	_, words := c.carriedWords(cv, 0, pin)
	region := max(usage-fixed-tail, 0)
	return min(fixed+tail+words+c.summaryEstimate(region), usage)
}
