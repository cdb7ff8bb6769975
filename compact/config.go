package compact

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

// Mode says how the compactor picks what to summarize.
type Mode string

const (
	// ModeRegion (seed 001 §3.2–3.3): the largest compactable region first,
	// one round at a time, until the target is reached. The user's words
	// stay in place verbatim; the round's final assistant reply stays too.
	ModeRegion Mode = "region"
	// ModeRound (seeds 000, 002, 003): the oldest turns up to the pinned
	// recent tail, in one summary; the user's own words stay verbatim
	// within UserBudget, newest first.
	ModeRound Mode = "round"
)

// ParseMode returns the mode named s ("" is ModeRound).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeRegion:
		return ModeRegion, nil
	case "", ModeRound:
		return ModeRound, nil
	}
	return "", fmt.Errorf("unknown mode %q (want region or round)", s)
}

// Keeper makes the originals of an edit durable before it takes effect;
// transcript.Store implements it.
type Keeper interface {
	Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error
}

// Config configures a Ladder. Zero fields take the defaults named in
// their comments; a negative MaxFailures or ThrashRepeats turns that guard
// off.
type Config struct {
	// RecallTool names the tool the model recalls an original with, when
	// it is not just "recall" (toolresult.Recall): cut notes and recall
	// indexes name it.
	RecallTool string
	// Window is the model's context window (default llm.DefaultWindow, 128,000) and MaxOutput
	// its largest response (default 8,192).
	Window    int
	MaxOutput int
	// OutputReserve caps what is reserved for the response (default
	// 20,000, Claude Code's MAX_OUTPUT_TOKENS_FOR_SUMMARY) and Buffer is the
	// safety margin on top (default 13,000, AUTOCOMPACT_BUFFER_TOKENS).
	// The effective window is Window − min(MaxOutput, OutputReserve) −
	// Buffer; when that would be under half the window (small local
	// models), reserve and buffer shrink in proportion so it is half.
	OutputReserve int
	Buffer        int
	// CountError is the largest share by which Counter may count fewer
	// tokens than the provider's tokenizer (default 0.10). The hard limit,
	// Budget.Limit, is the window less the output reserve, divided by
	// 1 + CountError: a request the counter finds at the limit is then
	// within the window even when the count is that far low. The default
	// is the estimator's worst measured under-count, not a fitted figure:
	// its accuracy test bounds it at 5% on the short sessions, and the long
	// sessions showed up to 9% on JSON-heavy text (issue 12); 0.10 covers
	// both. A Counter exact for the provider can set it lower; a negative
	// value means 0.
	CountError float64
	// UserBudget bounds the user's own words that region mode keeps
	// verbatim in one summary message (default min(20,000, Target/4):
	// Codex keeps 20,000 tokens of user messages, and on a small window a
	// quarter of the target leaves the rest of it to the summaries and
	// the recent turns). Older words beyond it are summarized; the newest
	// stay in the pinned tail.
	UserBudget int

	// Soft (default 0.70) and Hard (default 0.90) are the thresholds, as
	// fractions of the effective window; SoftTarget (default 0.50) is what
	// a compaction aims to get down to.
	Soft, Hard, SoftTarget float64
	// MinMessages: no automatic compaction below this many messages
	// (default 3, seed 000's A6 rule).
	MinMessages int

	// Mode picks the planner (default ModeRound: one summary of
	// everything before the pinned tail, the cheapest per the cost model
	// of schedule.go; ModeRegion summarizes region by region).
	Mode Mode
	// KeepRecentTurns (default 4) and KeepRecentTokens (default 2% of the
	// window: seed 001's 20,000 of a 1,000,000-token window) pin the
	// recent tail: at least that many assistant turns and that many
	// tokens, but never more than half the target, and always the last
	// step.
	KeepRecentTurns  int
	KeepRecentTokens int
	// KeepRounds is how many recent rounds round mode keeps (default 10).
	KeepRounds int

	// SummaryMin and SummaryMax bound a summary's target (defaults 256 and
	// 8,000 tokens; the target is a fifth of the region, and with prices
	// at most what the floor lets the summaries a compaction carries take).
	SummaryMin, SummaryMax int
	// SummaryBudget is the share of the target that all summaries together
	// may take before they are merged into one (default 0.25).
	SummaryBudget float64
	// Template is the summary template (default summarize.Coding).
	Template summarize.Template

	// Timeout bounds one summarizer call (default 120 s, seed 000).
	Timeout time.Duration
	// MaxFailures is how many consecutive failed compactions stop
	// automatic compaction (default 3).
	MaxFailures int
	// ThrashTurns and ThrashRepeats (defaults 3 and 3): when the context is
	// back at the threshold within ThrashTurns requests of an automatic
	// compaction that left it over the soft threshold, ThrashRepeats times
	// in a row, automatic compaction stops.
	ThrashTurns, ThrashRepeats int

	// Pricing is the provider's price list. With it the ladder also
	// compacts below the soft threshold where the cost model says a
	// compaction is due, and sizes what a compaction keeps by what it
	// costs (see schedule.go); zero: only at the thresholds, with the
	// keep counts as configured.
	Pricing pricing.Table
	// KeepValue is the knob between cost and recall: what keeping one
	// token in view for one more request is worth, as a multiple of the
	// price of reading it (default 1: worth what it costs). With Pricing
	// it sizes the floor a compaction leaves — the summaries it carries
	// (their budget before a merge), the user's words, and the most the
	// pinned tail may hold (KeepRecentTurns and KeepRecentTokens are what
	// it holds) — by the cost model (Floor in schedule.go): higher keeps
	// more and compacts more often. At or below 1, the default (and for
	// any negative value), a kept token is worth no more than reading it
	// costs, so a compaction keeps only what it must: the last step, the
	// recall index, two of the smallest summaries and the system prompt
	// and tools. The engine hands the same value to clearing and rung 1
	// (micro.CacheAware.KeepValue).
	KeepValue float64

	// Counter counts tokens (default tokens.NewEstimator()).
	Counter conv.Counter
	// Prefix, when set, builds the request the agent would send for a
	// conversation; an LLM summarizer then reuses it so the compaction
	// request reads the agent's cached prefix.
	Prefix func(*conv.Conversation) (*llm.Request, error)
	// Logger receives one line per compaction and fallback (default:
	// discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	deff := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Window, llm.DefaultWindow)
	def(&c.MaxOutput, 8_192)
	def(&c.OutputReserve, 20_000)
	if c.CountError == 0 {
		c.CountError = 0.10
	} else if c.CountError < 0 {
		c.CountError = 0
	}
	def(&c.Buffer, 13_000)
	deff(&c.Soft, 0.70)
	deff(&c.Hard, 0.90)
	deff(&c.SoftTarget, 0.50)
	def(&c.MinMessages, 3)
	if c.Mode == "" {
		c.Mode = ModeRound
	}
	def(&c.KeepRecentTurns, 4)
	def(&c.KeepRecentTokens, c.Window/50)
	def(&c.KeepRounds, 10)
	def(&c.SummaryMin, summarize.MinTarget)
	def(&c.SummaryMax, summarize.MaxTarget)
	deff(&c.SummaryBudget, 0.25)
	if c.Template == "" {
		c.Template = summarize.Coding
	}
	if c.Timeout == 0 {
		c.Timeout = 120 * time.Second
	}
	if c.KeepValue == 0 {
		c.KeepValue = DefaultKeepValue
	} else if c.KeepValue < 0 {
		c.KeepValue = 0
	}
	def(&c.MaxFailures, 3)
	def(&c.ThrashTurns, 3)
	def(&c.ThrashRepeats, 3)
	if c.Counter == nil {
		c.Counter = tokens.NewEstimator()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Budget is the token arithmetic of one configuration.
type Budget struct {
	Window int `json:"window"`
	// Effective is what the thresholds are fractions of: the window less
	// the output reserve and the buffer.
	Effective int `json:"effective"`
	// Limit is the hard limit (DESIGN.md, invariant 6): no request the
	// compactor lets through counts more (conv.CheckWindow). It is the
	// window less the output reserve, divided by 1 + CountError, and never
	// under Hard.
	Limit  int `json:"limit"`
	Soft   int `json:"soft"`
	Hard   int `json:"hard"`
	Target int `json:"target"`
}

// Budget computes the thresholds in tokens.
func (c Config) Budget() Budget {
	c = c.withDefaults()
	reserve := min(c.MaxOutput, c.OutputReserve)
	// The limit reserves the whole response, but never more than half
	// the window (small local models).
	limitReserve := min(reserve, c.Window/2)
	buffer := c.Buffer
	if c.Window-reserve-buffer < c.Window/2 && reserve+buffer > 0 {
		half := c.Window / 2
		reserve = reserve * half / (reserve + buffer)
		buffer = half - reserve
	}
	e := c.Window - reserve - buffer
	b := Budget{
		Window:    c.Window,
		Effective: e,
		Soft:      int(math.Round(float64(e) * c.Soft)),
		Hard:      int(math.Round(float64(e) * c.Hard)),
		Target:    int(math.Round(float64(e) * c.SoftTarget)),
	}
	b.Limit = int(float64(c.Window-limitReserve) / (1 + c.CountError))
	// The thresholds must sit under the limit, whatever fractions were
	// configured.
	b.Hard = min(b.Hard, b.Limit)
	b.Soft = min(b.Soft, b.Hard)
	b.Target = min(b.Target, b.Soft)
	return b
}

// Level is how urgently a conversation needs compacting.
type Level int

const (
	LevelNone Level = iota // under the soft threshold
	LevelSoft              // over the soft threshold: compact toward the target
	LevelHard              // over the hard threshold: compact so the request fits
)

func (l Level) String() string {
	return [...]string{"none", "soft", "hard"}[l]
}

// MarshalText writes the level by name (none, soft, hard), as JSON shows it.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Level classifies a usage figure against the budget.
func (b Budget) Level(usage int) Level {
	switch {
	case usage >= b.Hard:
		return LevelHard
	case usage >= b.Soft:
		return LevelSoft
	}
	return LevelNone
}
