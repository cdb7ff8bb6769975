package compact

import (
	"context"
	"fmt"
	"math"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/summarize"
)

// Ladder decides when and what to compact and carries it out, climbing the
// escalation ladder (region, round, all, drop, shrink) until the request
// fits the window. It holds
// the guards' state (consecutive failures, thrash count, the last reported
// usage), so an agent keeps one per session. It is not safe for concurrent
// use.
type Ladder struct {
	given    Config // as New was given it: Shrink derives from it again
	cfg      Config
	budget   Budget
	s        summarize.Summarizer
	fallback summarize.Summarizer // the extractive summarizer

	// A6 measurement: the last response's prompt+output and how many
	// messages the conversation had then.
	lastUsage int
	lastN     int
	haveUsage bool

	failures  int    // consecutive failed compactions
	lastFail  string // why the last one failed
	sinceAuto int    // requests since the last automatic compaction; -1: none
	requests  int    // requests so far (calls of Before)
	keptAfter int    // tokens the last automatic compaction left; 0: none yet
	wrote     int    // summary tokens the last automatic compaction wrote (recall indexes aside); 0: none yet
	next      int    // where the last request's schedule expects the next compaction (NextAt); 0: not worked out
	thrash    int    // consecutive refills within ThrashTurns
	missed    bool   // the last automatic compaction left the context over the soft threshold
	stopped   *StoppedError
	reactive  bool // a reactive compaction ran and no response came since
	// keep is what the next compaction may keep beyond what it must, as
	// the cost model sized it at the last request (sizeFloor); zero
	// fields with sized unset: the configured keep counts.
	keep keepSizes
	// saved is what the session has saved against sending everything, in
	// price × tokens, as the engine last gave it (SetSaved); accounted
	// says it was given.
	saved     float64
	accounted bool
}

// New returns a compactor that summarizes with s; nil s means the
// extractive summarizer.
func New(s summarize.Summarizer, cfg Config) *Ladder {
	ext := summarize.NewExtractive()
	if s == nil {
		s = ext
	}
	c := &Ladder{given: cfg, s: s, fallback: ext, sinceAuto: -1}
	c.cfg, c.budget = derive(cfg)
	return c
}

// derive fills in cfg's defaults and the thresholds they give, the
// window-dependent ones (the pinned tail's tokens, the user's words)
// among them.
func derive(cfg Config) (Config, Budget) {
	cfg = cfg.withDefaults()
	b := cfg.Budget()
	cfg.UserBudget = b.UserWords(cfg.UserBudget)
	return cfg, b
}

// Config returns the configuration in effect, defaults filled in.
func (c *Ladder) Config() Config { return c.cfg }

// Budget returns the thresholds in tokens.
func (c *Ladder) Budget() Budget { return c.budget }

// SummarizerName is "extractive" or "llm".
func (c *Ladder) SummarizerName() string {
	if _, ok := c.s.(*summarize.Extractive); ok {
		return "extractive"
	}
	return "llm"
}

// Observe records the usage the provider reported for the last response;
// messages is the length of the conversation once that response was
// appended. The next Before measures the context as that usage plus an
// estimate of what was appended since (seed 000's A6 rule).
func (c *Ladder) Observe(u llm.Usage, messages int) {
	c.lastUsage, c.lastN, c.haveUsage = u.Prompt()+u.Output, messages, true
	c.reactive = false
}

// State is the guards' state, for the CLI to show.
type State struct {
	Failures int `json:"failures"`
	Thrash   int `json:"thrash"`
	// Stopped is non-nil when automatic compaction is off; its message
	// tells the user what to do.
	Stopped error `json:"-"`
}

// State returns the guards' state.
func (c *Ladder) State() State {
	s := State{Failures: c.failures, Thrash: c.thrash}
	if c.stopped != nil {
		s.Stopped = c.stopped
	}
	return s
}

// Reset clears the guards, for a new session or after the user acted.
func (c *Ladder) Reset() {
	c.failures, c.thrash, c.stopped, c.sinceAuto, c.reactive, c.lastFail, c.missed = 0, 0, nil, -1, false, "", false
}

// Answer is the most max_tokens a request whose prompt the counter finds
// prompt tokens long may ask: the window less that prompt, counted as far
// low as CountError allows. The API refuses a request whose prompt and
// max_tokens together exceed the window ("input length and `max_tokens`
// exceed context limit"). Budget.Limit reserves at most OutputReserve for
// the answer, less than a request may ask, so near the limit the room is
// the smaller; well under it, the room exceeds any max_tokens.
func (c *Ladder) Answer(prompt int) int {
	return c.cfg.Window - int(math.Ceil(float64(prompt)*(1+max(c.cfg.CountError, 0))))
}

// Shrink takes window, a window the provider stated in a refusal
// (llm.ParseLimit), as the window from now on when it is smaller than the
// one in force, and maxOutput as the largest answer a request asks in it
// (the engine derives it again for the window too): every setting derived
// from them (the thresholds, the room left for answers, the pinned tail's
// tokens, the user's words) is derived again, as New derives it. It
// reports whether the window changed.
func (c *Ladder) Shrink(window, maxOutput int) bool {
	if window <= 0 || window >= c.cfg.Window {
		return false
	}
	given := c.given
	given.Window, given.MaxOutput = window, maxOutput
	c.cfg, c.budget = derive(given)
	return true
}

// Usage is the context size the compactor works with: the last reported
// usage plus an estimate of the messages appended since, or an estimate of
// the whole conversation when there is no usable report.
func (c *Ladder) Usage(cv *conv.Conversation) int {
	if c.haveUsage && c.lastN <= len(cv.Messages) {
		n := c.lastUsage
		for i := c.lastN; i < len(cv.Messages); i++ {
			n += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
		}
		for i := range cv.Pending {
			n += conv.BlockTokens(&cv.Pending[i], c.cfg.Counter)
		}
		return n
	}
	return c.estimate(cv)
}

func (c *Ladder) estimate(cv *conv.Conversation) int {
	return cv.Tokens(c.cfg.Counter).Total()
}

// Before runs before each request: when the context is over the soft
// threshold it compacts toward the target, escalating down the ladder
// (package doc) when the configured mode cannot get under the threshold;
// and whatever happened before, a request over Budget.Limit is brought
// under it (the window is a hard limit, DESIGN.md invariant 6). When the
// circuit breaker or thrash detection has turned model calls off, the
// compactor still keeps the limit, with the extractive summarizer and the
// truncation marker, and returns the *StoppedError over the hard
// threshold so the caller can tell the user (the request fits and may go
// out). The only overflow it returns is one nothing can fix: the system
// prompt and tool schemas alone over the limit.
func (c *Ladder) Before(ctx context.Context, cv *conv.Conversation, k Keeper) (Result, error) {
	if c.sinceAuto >= 0 {
		c.sinceAuto++
	}
	c.requests++
	usage := c.Usage(cv)
	c.sizeFloor(cv, usage)
	lvl := c.budget.Level(usage)
	res := Result{Level: lvl.String(), TokensBefore: usage, TokensAfter: usage}
	over := usage > c.budget.Limit
	due := lvl != LevelHard && c.stopped == nil && c.early(cv, usage)
	if !over && ((lvl != LevelHard && !due && (c.stopped == nil || lvl == LevelNone)) || len(cv.Messages) < c.cfg.MinMessages) {
		return res, nil
	}
	if k == nil {
		return res, ErrNoKeeper
	}
	if c.stopped == nil {
		// A refill counts when it comes within ThrashTurns requests of a
		// compaction that left the context at or over the soft threshold:
		// on a small window a session with big outputs refills quickly
		// after every compaction that made room, and that is not a loop;
		// compactions that cannot get under the threshold (something
		// large pinned or re-read every turn) are.
		if c.sinceAuto >= 0 && c.sinceAuto <= c.cfg.ThrashTurns && c.missed {
			c.thrash++
		} else {
			c.thrash = 0
		}
		if c.cfg.ThrashRepeats > 0 && c.thrash >= c.cfg.ThrashRepeats {
			c.stopped = &StoppedError{Reason: ErrThrashing, Count: c.thrash}
			c.cfg.Logger.Warn("compact: thrashing, model calls for automatic compaction stopped", "refills", c.thrash)
		}
	}
	if c.stopped != nil {
		res.Note = c.stopped.Error()
		if !over && lvl != LevelHard {
			return res, nil
		}
		r, err := c.auto(ctx, cv, k, TriggerHard, LevelHard, usage, c.budget.Target, false)
		r.Note = res.Note
		if err != nil {
			return r, err
		}
		return r, c.stopped
	}
	trig := TriggerSoft
	switch {
	case lvl == LevelHard:
		trig = TriggerHard
	case due && lvl == LevelNone:
		trig = TriggerScheduled
	}
	return c.auto(ctx, cv, k, trig, lvl, usage, c.budget.Target, true)
}

// Reactive runs after the provider answered llm.ErrPromptTooLong (cause):
// it compacts down to the target, and the agent retries the request once.
// A second prompt-too-long before any response gives an *OverflowError
// rather than a loop. When cause states the sizes ("205000 tokens >
// 200000 maximum"), the goal is scaled by how far the estimate was off.
func (c *Ladder) Reactive(ctx context.Context, cv *conv.Conversation, k Keeper, cause error) (Result, error) {
	usage := max(c.Usage(cv), c.budget.Window)
	if l, ok := llm.ParseLimit(cause); ok && l.Prompt > usage {
		usage = l.Prompt
	}
	res := Result{Trigger: TriggerReactive, Level: LevelHard.String(), TokensBefore: usage, TokensAfter: usage}
	if c.reactive {
		return res, &OverflowError{Tokens: usage, Limit: c.budget.Effective}
	}
	if k == nil {
		return res, ErrNoKeeper
	}
	c.reactive = true
	// The plan takes the provider at its word (the prompt is at least the
	// window); the sizes reported are the ones the compactor holds, as
	// /context shows them, before and after.
	held := c.Usage(cv)
	r, err := c.auto(ctx, cv, k, TriggerReactive, LevelHard, usage, c.budget.Target, c.stopped == nil)
	r.TokensBefore = held
	if r.Compactions > 0 {
		r.TokensAfter = c.Usage(cv)
	} else {
		r.TokensAfter = held
	}
	return r, err
}

// auto is an automatic compaction (soft, hard, reactive) from usage down
// to goal tokens, with the guards' bookkeeping. It walks the ladder: the
// configured mode first; when that leaves the context at or over the soft
// threshold, round mode; then one summary of everything before the last
// KeepRecentTurns turns; and when the context is still over the limit,
// fit (the truncation marker, then shrinking the tail). models says
// whether the configured summarizer may be called; without it every
// summary is extractive.
func (c *Ladder) auto(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, lvl Level, usage, goal int, models bool) (Result, error) {
	est := c.estimate(cv)
	// Usage and the estimate may disagree (layers the conversation does not
	// hold, the estimator's margin): plan in estimate units, scaled.
	ratio := max(float64(usage)/float64(max(est, 1)), 0.01)
	units := func(n int) int { return int(float64(n) / ratio) }
	goalEst, softEst, limitEst := units(goal), units(c.budget.Soft), units(c.budget.Limit)
	s := c.s
	if !models {
		s = c.fallback
	}
	passes := []pass{{mode: c.cfg.Mode, s: s, models: models, name: string(c.cfg.Mode)}}
	if c.cfg.Mode != ModeRound {
		passes = append(passes, pass{mode: ModeRound, s: s, models: models, name: "round"})
	}
	passes = append(passes, pass{mode: ModeRound, manual: true, s: s, models: models, name: "all"})
	res := Result{Trigger: trig}
	failed := false
	for i, p := range passes {
		if i > 0 && c.estimate(cv) < softEst && c.estimate(cv) <= limitEst {
			break
		}
		// Round mode keeps as little as the pin allows: what a compaction
		// keeps is read by every request until the next one, and the
		// next one comes later the less it keeps (schedule.go). Region
		// mode goes region by region to the goal, a summary call each.
		passGoal := goalEst
		if p.mode == ModeRound {
			passGoal = 0
		}
		r, f, err := c.run(ctx, cv, k, trig, "", passGoal, p)
		if r.Compactions > 0 {
			r.Ladder = append(r.Ladder, p.name)
		}
		res.add(r)
		failed = failed || f
		if err != nil {
			return c.finish(res, lvl, usage, ratio, cv), err
		}
	}
	if c.estimate(cv) > limitEst {
		r, err := c.fit(ctx, cv, k, trig, goalEst, limitEst)
		res.add(r)
		if err != nil {
			return c.finish(res, lvl, usage, ratio, cv), err
		}
	}
	res = c.finish(res, lvl, usage, ratio, cv)
	if res.Compactions > 0 {
		c.keptAfter = res.TokensAfter
		c.wrote = c.written(cv, res)
		c.sinceAuto = 0
		c.haveUsage = false
		c.missed = res.TokensAfter >= c.budget.Soft
	}
	if failed {
		c.failures++
		if c.stopped == nil && c.cfg.MaxFailures > 0 && c.failures >= c.cfg.MaxFailures {
			c.stopped = &StoppedError{Reason: ErrCircuitOpen, Count: c.failures, Last: c.lastFail}
			c.cfg.Logger.Warn("compact: circuit breaker open, model calls for automatic compaction stopped", "failures", c.failures, "last", c.lastFail)
		}
	} else if res.Compactions > 0 && models {
		c.failures = 0
	}
	if res.TokensAfter > c.budget.Limit {
		return res, &OverflowError{Tokens: res.TokensAfter, Limit: c.budget.Limit}
	}
	return res, nil
}

// finish fills in the figures of an automatic compaction's result.
func (c *Ladder) finish(res Result, lvl Level, usage int, ratio float64, cv *conv.Conversation) Result {
	res.Level = lvl.String()
	res.TokensBefore = usage
	res.TokensAfter = int(float64(c.estimate(cv)) * ratio)
	return res
}

// pass is one rung of the ladder: how a run plans and who summarizes.
type pass struct {
	mode Mode
	// manual pins only the last KeepRecentTurns turns, with no token
	// floor, as /compact does.
	manual bool
	s      summarize.Summarizer
	// models: s is the configured summarizer and may call a model (merges
	// too); false keeps every summary and merge extractive.
	models bool
	name   string
}

// Fits checks cv against the hard limit with the compactor's counter:
// conv.CheckWindow(cv, Budget().Limit, Counter).
func (c *Ladder) Fits(cv *conv.Conversation) error {
	return conv.CheckWindow(cv, c.budget.Limit, c.cfg.Counter)
}

// Compact is the manual compaction behind "/compact [focus]": it
// summarizes everything before the pinned recent turns, whatever the
// thresholds, honouring focus. It works while automatic compaction is
// stopped, and a success clears the guards. Afterwards the agent goes on
// from the summary: the task is not over.
func (c *Ladder) Compact(ctx context.Context, cv *conv.Conversation, k Keeper, focus string) (Result, error) {
	return c.manual(ctx, cv, k, TriggerManual, focus)
}

func (c *Ladder) manual(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, focus string) (Result, error) {
	if k == nil {
		return Result{Trigger: trig}, ErrNoKeeper
	}
	before := c.estimate(cv)
	res, failed, err := c.run(ctx, cv, k, trig, focus, 0, pass{mode: c.cfg.Mode, manual: true, s: c.s, models: true, name: string(c.cfg.Mode)})
	res.TokensBefore, res.TokensAfter = before, c.estimate(cv)
	if err != nil {
		return res, err
	}
	if res.Compactions == 0 {
		res.Note = c.nothingNote(cv)
		return res, nil
	}
	c.haveUsage = false
	if !failed {
		c.Reset()
	}
	return res, nil
}

// nothingNote says why a manual compaction found nothing to summarize:
// the session is all recent turns, or what comes before them is only the
// user's words and summaries (kept as they are), or too small to be worth
// a summary.
func (c *Ladder) nothingNote(cv *conv.Conversation) string {
	pin := c.pinStart(cv, c.pinLimit(), true)
	for j := pin; j > 0; j-- {
		if !isCut(cv, j) {
			continue
		}
		n := c.build(cv, 0, j, ModeRound, nil).tokens
		if n == 0 {
			return "nothing to compact: before the most recent turns there are only your words and summaries, which are kept as they are"
		}
		return fmt.Sprintf("nothing to compact: the turns before the most recent ones hold about %d tokens, less than the %d worth summarizing", n, c.minRegion())
	}
	return "nothing to compact: the whole session is its most recent turns, which are kept as they are"
}

// run compacts region by region until the conversation is down to goal
// tokens (estimate units; ≤ 0: everything the pin allows), planning and
// summarizing as p says. failed reports that the configured summarizer
// failed on some region.
func (c *Ladder) run(ctx context.Context, cv *conv.Conversation, k Keeper, trig Trigger, focus string, goal int, p pass) (Result, bool, error) {
	res := Result{Trigger: trig}
	failed := false
	for step := 0; step < maxSteps; step++ {
		if goal > 0 && c.estimate(cv) <= goal {
			break
		}
		pl, ok := c.plan(cv, goal, p.manual, p.mode)
		if !ok {
			break
		}
		r, pf, err := c.apply(ctx, cv, k, pl, trig, focus, p)
		res.add(r)
		failed = failed || pf
		if err != nil {
			return res, failed, err
		}
	}
	r, err := c.consolidate(ctx, cv, k, trig, p.models)
	res.add(r)
	return res, failed, err
}

// maxSteps bounds the regions one call compacts.
const maxSteps = 64

// Status is the context's standing, for /context and the CLI.
type Status struct {
	Usage  int    `json:"usage"`
	Level  Level  `json:"level"`
	Budget Budget `json:"budget"`
	State  State  `json:"state"`
}

// Status measures cv against the budget.
func (c *Ladder) Status(cv *conv.Conversation) Status {
	u := c.Usage(cv)
	return Status{Usage: u, Level: c.budget.Level(u), Budget: c.budget, State: c.State()}
}

func (c *Ladder) fail(format string, args ...any) string {
	c.lastFail = fmt.Sprintf(format, args...)
	return c.lastFail
}
