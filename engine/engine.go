package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/tokens"
)

// Engine owns the context of one session: it decides, before every
// request, what moves down the fidelity ladder and assembles the request.
// It holds incremental state about the conversation it is given, so one
// Engine serves one conversation. It is not safe for concurrent use: the
// caller serialises its calls (one turn at a time).
type Engine struct {
	cfg   Config
	given Config // as New was given it: shrink derives from it again
	// configured is the window New was configured with, which a window a
	// provider stated (shrink) is smaller than.
	configured int
	info       llm.ModelInfo
	builder    *assemble.Builder
	micro      *micro.Clearer
	compact    *compact.Ladder
	keeper     keeper
	mk         micro.Keeper // &keeper, with the Spiller when there is one

	measure measure
	// incompressible are results whose rung-1 form would not be smaller;
	// RoundEnded skips them.
	incompressible map[string]bool
	rulesTokens    int
	// requests counts Prepare calls: the requests the session has made,
	// which predict how many more it makes (package horizon).
	requests int
	// acct is what the session has saved against sending everything
	// (account.go).
	acct account
}

// New returns an engine for cfg, its zero fields set to their defaults.
// An invalid cfg is an error wrapping ErrConfig.
func New(cfg Config) (*Engine, error) {
	given := cfg
	cfg, info, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, given: given, configured: cfg.Window, info: info}
	e.keeper.k = cfg.Keeper
	e.mk = &e.keeper
	if cfg.Spiller != nil {
		e.mk = spillKeeper{&e.keeper, cfg.Spiller}
	}
	e.measure.cal = tokens.NewCalibrator(tokens.CalibratorConfig{})

	anchors := 0
	if !cfg.Pricing.Caches() || cfg.Pricing.Automatic {
		anchors = -1 // no explicit anchors to place
	}
	var spill assemble.Spiller
	if cfg.Spiller != nil {
		spill = cfg.Spiller
	}
	e.builder, err = assemble.New(assemble.Config{
		Model:          cfg.Model,
		MaxTokens:      cfg.MaxTokens,
		Workspace:      cfg.Workspace,
		Dir:            cfg.Dir,
		RuleFiles:      cfg.RuleFiles,
		Spiller:        spill,
		MinCacheTokens: cfg.MinCacheTokens,
		MaxAnchors:     anchors,
		Counter:        cfg.Counter,
		Logger:         cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	e.rules()

	cc := cfg.Compact
	cc.Window, cc.MaxOutput = cfg.Window, cfg.MaxTokens
	cc.Counter = cfg.Counter
	cc.RecallTool = cfg.RecallTool
	cc.Pricing = cfg.Pricing
	cc.KeepValue = cfg.KeepValue
	if cc.Logger == nil {
		cc.Logger = cfg.Logger
	}
	cc.Prefix = func(c *conv.Conversation) (*llm.Request, error) {
		n := len(c.Messages)
		if n > 1 && c.Messages[n-1].Role == conv.RoleAssistant {
			// A finished turn (a manual /compact between turns): the
			// request last sent, which the provider holds in its cache,
			// then the answer to it; the summarizer adds its instruction
			// in a user message after that.
			view := &conv.Conversation{System: c.System, Tools: c.Tools, Messages: c.Messages[:n-1], Seq: c.Seq}
			a, err := e.builder.Build(view, e.todos())
			if err != nil {
				return nil, err
			}
			req := *a.Request
			req.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)], c.Messages[n-1])
			e.leaveRoom(&req, e.count(c))
			return &req, nil
		}
		a, err := e.builder.Build(c, e.todos())
		if err != nil {
			return nil, err
		}
		e.leaveRoom(a.Request, e.count(c))
		return a.Request, nil
	}
	e.compact = compact.New(cfg.Summarizer, cc)

	mc := cfg.Micro
	mc.Window = cfg.Window
	mc.Counter = cfg.Counter
	mc.RecallTool = cfg.RecallTool
	mc.Policy = cfg.Policy
	mc.Clock = cfg.Clock
	mc.MinCacheTokens = cfg.MinCacheTokens
	if !cfg.NoCompaction {
		// Clearing pays only for the requests before compaction rewrites
		// the prompt anyway (micro's package doc).
		mc.CompactAt = e.compact.Budget().Soft
	}
	e.micro = micro.New(mc)
	return e, nil
}

// Config returns the configuration in effect, every default filled in.
func (e *Engine) Config() Config { return e.cfg }

// Prepare runs before every request: the oversize guard and rungs 1–2
// (micro-compaction), then rung 3 (compaction) when the context is over
// the soft threshold, then assembly. c is the conversation as it stands,
// ending with the user message the request answers; the engine applies
// its edits to c (each kept through Config.Keeper first) and returns the
// request to send.
//
// An error that leaves the request sendable is a warning in Ready. When
// the context does not fit and nothing compactable is left, the error is
// a *compact.OverflowError and Ready still holds the request as it stands
// (a replay counts it as over the window; an agent stops).
func (e *Engine) Prepare(ctx context.Context, c *conv.Conversation) (Ready, error) {
	e.requests++
	r := e.ready()
	e.keeper.r = &r
	defer func() { e.keeper.r = nil }()
	e.arrive(c)
	e.micro.SetSaved(e.acct.saved)
	e.compact.SetSaved(e.acct.saved)
	if !e.cfg.NoMicro {
		if !e.cfg.NoCompaction {
			e.micro.SetCompactAt(e.compact.NextAt())
		}
		mr, err := e.micro.Step(ctx, c, e.mk)
		r.Micro = mr
		r.microDecisions(mr, e.cfg.Policy.Name())
		e.freed(mr.Freed)
		e.charge(float64(mr.Rewrite) * e.cfg.Pricing.RewritePrice())
		e.compact.SetSaved(e.acct.saved)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			// The edits not kept stay for the next request.
			r.Warnings = append(r.Warnings, fmt.Errorf("engine: micro-compaction: %w", err))
		}
	}
	var cerr error
	if !e.cfg.NoCompaction {
		if e.cfg.OnCompact != nil {
			if t := trigger(e.compact.Status(c)); t != "" {
				e.cfg.OnCompact(t)
			}
		}
		cr, err := e.compact.Before(ctx, c, &e.keeper)
		if err := e.compacted(ctx, c, &r, cr); err != nil {
			return r, err
		}
		var stopped *compact.StoppedError
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return r, ctx.Err()
		case errors.As(err, &stopped):
			// Automatic compaction is off; the request goes out anyway
			// and the provider decides.
			r.decide(Decision{Kind: KindStopped, Reason: stopped.Error()})
			r.Warnings = append(r.Warnings, err)
		default:
			cerr = err
		}
	}
	if err := e.assemble(c, &r); err != nil {
		return r, err
	}
	e.settle(c, r.Tokens)
	return r, cerr
}

// Retry runs after the provider answered llm.ErrPromptTooLong (cause) to
// the request Prepare built: it compacts down to the target and returns
// the request to send instead. A window the refusal states that is smaller
// than the configured one is the window from then on; one that states no
// size bounds the window by what it refused, the prompt and the room the
// request asked for its answer (by the engine's count), unless it refused
// the request's bytes (a 413). When the prompt fitted and only the
// max_tokens asked did not (llm.Limit.AnswerOnly), nothing is compacted:
// the same prompt asks for the room left. Call it once per request: a
// second prompt-too-long before any response is an overflow, not a loop.
func (e *Engine) Retry(ctx context.Context, c *conv.Conversation, cause error) (Ready, error) {
	r := e.ready()
	e.keeper.r = &r
	defer func() { e.keeper.r = nil }()
	l, stated := llm.ParseLimit(cause)
	was := e.compact.Budget().Window
	switch {
	case stated:
		if e.shrink(l.Window) {
			r.decide(Decision{Kind: KindWindow, Tokens: l.Window,
				Reason: fmt.Sprintf("the provider's window is %d tokens, not the %d configured: the thresholds and the room left for answers follow it", l.Window, was)})
		}
	case !refusedBytes(cause):
		// The refused request did not fit: the window is at most its
		// prompt and the room it asked for the answer.
		prompt := e.count(c)
		asked := e.asks(prompt, e.cfg.MaxTokens)
		if w := prompt + asked; e.shrink(w) {
			r.decide(Decision{Kind: KindWindow, Tokens: w,
				Reason: fmt.Sprintf("the provider refused a %d-token prompt asking %d for its answer without stating its window: the window is taken to be at most %d tokens, not %d", prompt, asked, w, was)})
		}
	}
	if stated && l.AnswerOnly() && l.Prompt <= e.compact.Budget().Limit {
		// The prompt fits; the answer the request asked room for did
		// not. The same prompt goes out asking for the room the window
		// leaves it, by the provider's own count.
		if err := e.assemble(c, &r); err != nil {
			return r, err
		}
		room := l.Window - l.Prompt
		r.Request.MaxTokens = min(r.Request.MaxTokens, room)
		r.decide(Decision{Kind: KindWindow, Tokens: r.Request.MaxTokens,
			Reason: fmt.Sprintf("the %d-token prompt fits the window, max_tokens %d did not: the request asks for %d of the %d tokens left", l.Prompt, l.MaxTokens, r.Request.MaxTokens, room)})
		return r, nil
	}
	if e.cfg.OnCompact != nil {
		e.cfg.OnCompact(compact.TriggerReactive)
	}
	cr, err := e.compact.Reactive(ctx, c, &e.keeper, cause)
	if cr.Trigger == "" {
		cr.Trigger = compact.TriggerReactive
	}
	if err2 := e.compacted(ctx, c, &r, cr); err2 != nil {
		return r, err2
	}
	if err != nil {
		return r, err
	}
	return r, e.assemble(c, &r)
}

// refusedBytes reports whether cause refuses a request for its bytes (a
// 413, Anthropic's request_too_large), which says nothing of the window.
func refusedBytes(cause error) bool {
	var ae *llm.APIError
	return errors.As(cause, &ae) && llm.RefusedBytes(ae.Status, ae.Type)
}

// Compact is the manual compaction behind "/compact [focus]": earlier
// turns become a summary whatever the thresholds say, and automatic
// compaction, if it had stopped, is back on. Ready has no request.
func (e *Engine) Compact(ctx context.Context, c *conv.Conversation, focus string) (Ready, error) {
	r := e.ready()
	e.keeper.r = &r
	defer func() { e.keeper.r = nil }()
	cr, err := e.compact.Compact(ctx, c, &e.keeper, focus)
	if cr.Trigger == "" {
		cr.Trigger = compact.TriggerManual
	}
	if err2 := e.compacted(ctx, c, &r, cr); err2 != nil {
		return r, err2
	}
	return r, err
}

// CompactTool carries out the model's compact tool call (compact.Tool):
// call it once the turn's tool results, the compact call's
// (compact.ToolResult) among them, are appended; the next Prepare goes on
// from the summary. Ready has no request.
func (e *Engine) CompactTool(ctx context.Context, c *conv.Conversation, input json.RawMessage) (Ready, error) {
	r := e.ready()
	e.keeper.r = &r
	defer func() { e.keeper.r = nil }()
	cr, err := e.compact.RunTool(ctx, c, &e.keeper, input)
	if cr.Trigger == "" {
		cr.Trigger = compact.TriggerTool
	}
	if err2 := e.compacted(ctx, c, &r, cr); err2 != nil {
		return r, err2
	}
	return r, err
}

// compacted accounts for a compaction: after one, the request rewrites
// the cache from the summary on, so micro clears now what it may at no
// extra rewrite, the project rules are read again (the cached prefix is
// lost anyway), the context is measured afresh, and the session's account
// is charged.
func (e *Engine) compacted(ctx context.Context, c *conv.Conversation, r *Ready, cr compact.Result) error {
	r.Compaction = cr
	r.compactDecisions(cr)
	if cr.Compactions == 0 {
		return nil
	}
	defer e.chargeCompaction(c, cr)
	e.measure.have = false
	if !e.cfg.NoMicro {
		mr, err := e.micro.Compacted(ctx, c, e.mk)
		r.Micro = addMicro(r.Micro, mr)
		r.microDecisions(mr, e.cfg.Policy.Name())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Warnings = append(r.Warnings, fmt.Errorf("engine: clearing after compaction: %w", err))
		}
	} else {
		e.micro.Reset()
	}
	if err := e.builder.Reload(); err != nil {
		r.Warnings = append(r.Warnings, fmt.Errorf("engine: re-reading the project rules: %w", err))
	}
	e.rules()
	return nil
}

// assemble builds the request with the anchors micro holds.
func (e *Engine) assemble(c *conv.Conversation, r *Ready) error {
	var hold []string
	if !e.cfg.NoMicro {
		hold = e.micro.Hold()
	}
	a, err := e.builder.BuildHeld(c, e.todos(), hold)
	if err != nil {
		return fmt.Errorf("engine: assembling the request: %w", err)
	}
	r.Request, r.Assembly = a.Request, a
	r.Tokens = e.count(c)
	e.measure.sent = r.Tokens
	e.leaveRoom(r.Request, r.Tokens)
	return nil
}

// shrink takes window, one a provider stated, as the window from now on
// when it is smaller than the one in force: everything New derives from
// the window is derived again, as New derives it for that one — the
// max_tokens requests ask (MaxTokensFor: one given at or over the window
// stands for a quarter of it), the compactor's thresholds and the room it
// leaves answers, micro's high-water mark, and the oversize guard's limit
// when it was the default. It reports whether the window changed.
func (e *Engine) shrink(window int) bool {
	if window <= 0 || window >= e.cfg.Window {
		return false
	}
	g := e.given
	g.Window = window
	if g.MaxTokens > 0 {
		g.MaxTokens = MaxTokensFor(g.MaxTokens, window)
	}
	cfg, _, err := g.withDefaults()
	if err != nil || !e.compact.Shrink(window, cfg.MaxTokens) {
		return false // a window too small for any request: the refusal goes to the caller
	}
	e.cfg.Window, e.cfg.MaxTokens, e.cfg.Micro.GuardTokens = cfg.Window, cfg.MaxTokens, cfg.Micro.GuardTokens
	e.micro.SetWindow(window, cfg.Micro.GuardTokens)
	e.builder.SetMaxTokens(cfg.MaxTokens)
	return true
}

// MaxTokensFor is the max_tokens a request asks in a window of window
// tokens when maxTokens was asked: maxTokens when it leaves room for a
// prompt, else a quarter of the window (256 at least), as the default is
// capped. The proxy takes a client's max_tokens so, and the engine a given
// one when a provider states a smaller window.
func MaxTokensFor(maxTokens, window int) int {
	if maxTokens >= window {
		return max(window/4, 256)
	}
	return maxTokens
}

// Room is the answer a request of prompt tokens (the engine's count) has
// room for in the window in force (compact.Ladder.Answer): what the engine
// lowers a request's max_tokens to when it asks more. The proxy asks it
// for the summary requests it sends on a client's prefix.
func (e *Engine) Room(prompt int) int { return e.compact.Answer(prompt) }

// leaveRoom lowers req's max_tokens to the room a prompt of prompt tokens
// (the engine's count) leaves in the window (compact.Ladder.Answer): the
// window holds the prompt and its answer. Every request the engine hands
// out goes through it — the agent's, and the prefix a cache-reusing
// summary request extends.
func (e *Engine) leaveRoom(req *llm.Request, prompt int) {
	req.MaxTokens = e.asks(prompt, req.MaxTokens)
}

// asks is the max_tokens a request of prompt tokens (the engine's count)
// asks when it would ask maxTokens: the room the window leaves it when
// that is less.
func (e *Engine) asks(prompt, maxTokens int) int {
	if room := e.compact.Answer(prompt); room > 0 && room < maxTokens {
		return room
	}
	return maxTokens
}

// count is the engine's own count of the request c makes: the
// conversation and the project rules.
func (e *Engine) count(c *conv.Conversation) int {
	return c.Tokens(e.cfg.Counter).Total() + e.rulesTokens
}

// Observe records the usage the provider reported for the response to the
// last request; c is the conversation once that response was appended.
// The next Prepare measures the context as that usage plus an estimate of
// what was appended since, and the estimate of what the engine frees is
// scaled by the provider's count per estimated token.
func (e *Engine) Observe(c *conv.Conversation, u llm.Usage) { e.observeAt(len(c.Messages), u) }

// Message builds the user message of a turn from in: the tool results
// first, then the conversation's pending injections and the reminders
// @file mentions produce (looked up in Config.Workspace), then the user's
// words (spilled through Config.Spiller when too large). It returns notes
// for the user on what preprocessing did; c is not changed.
func (e *Engine) Message(ctx context.Context, c *conv.Conversation, in assemble.Input) (conv.Message, []string, error) {
	return e.builder.Message(ctx, c, in)
}

// Build assembles the request for c as it stands, deciding nothing: what
// /context shows and what a summarizer reusing the cached prefix sends.
func (e *Engine) Build(c *conv.Conversation) (*assemble.Assembly, error) {
	return e.builder.Build(c, e.todos())
}

// Expire says the provider's prompt cache has gone cold (a resumed
// session, a long idle): the next Prepare clears as if nothing were
// cached, which costs no rewrite.
func (e *Engine) Expire() { e.micro.Expire() }

// Reset says c was changed other than by appending messages or through
// the engine (a message replaced): the next Prepare rebuilds the
// incremental state once.
func (e *Engine) Reset() { e.micro.Reset() }

// Status measures c against the compaction budget, for /context.
func (e *Engine) Status(c *conv.Conversation) compact.Status { return e.compact.Status(c) }

// State reports whether automatic compaction is stopped, and why.
func (e *Engine) State() compact.State { return e.compact.State() }

// Schedule is the cost model's view of when the next automatic compaction
// is due (compact.Schedule), for the conversation as it stands.
func (e *Engine) Schedule(c *conv.Conversation) compact.Schedule { return e.compact.ScheduleAt(c) }

// Budget returns the compaction thresholds in tokens.
func (e *Engine) Budget() compact.Budget { return e.compact.Budget() }

// Usage is the context size the engine works with: the last reported
// usage plus an estimate of what was appended since.
func (e *Engine) Usage(c *conv.Conversation) int { return e.compact.Usage(c) }

// Rules returns the project rules the engine sends (L2).
func (e *Engine) Rules() assemble.Rules { return e.builder.Rules() }

// TokenRatio is the provider's token count per estimated token, as
// calibrated by Observe.
func (e *Engine) TokenRatio() float64 { return e.measure.cal.Ratio() }

// Summarizer names the compaction summarizer: "extractive" or "llm".
func (e *Engine) Summarizer() string { return e.compact.SummarizerName() }

// Hold returns the ids after which the next request carries cache
// anchors (micro.Clearer.Hold), for tests and reports.
func (e *Engine) Hold() []string {
	if e.cfg.NoMicro {
		return nil
	}
	return e.micro.Hold()
}

// HighWater is the context size above which micro clears every clearable
// block whatever the policy says.
func (e *Engine) HighWater() int {
	hw := e.cfg.Micro.HighWater
	if hw == 0 {
		hw = micro.DefaultHighWater
	}
	return int(hw * float64(e.compact.Budget().Window)) // the provider's, when it stated a smaller one
}

// trigger is what an automatic compaction at st would be triggered by, ""
// when none would run.
func trigger(st compact.Status) compact.Trigger {
	switch {
	case st.State.Stopped != nil:
		return ""
	case st.Level == compact.LevelHard:
		return compact.TriggerHard
	case st.Level == compact.LevelSoft:
		return compact.TriggerSoft
	}
	return ""
}

func (e *Engine) rules() {
	e.rulesTokens = 0
	if r := e.builder.Rules(); r.File != "" {
		e.rulesTokens = e.cfg.Counter.Count(r.Text)
	}
}

func (e *Engine) todos() []Todo {
	if e.cfg.Todos == nil {
		return nil
	}
	return e.cfg.Todos()
}

// keeper passes every edit to the caller's Keeper and records, in the
// Ready of the call in progress, what it kept.
type keeper struct {
	k Keeper
	r *Ready
}

func (k *keeper) Keep(ctx context.Context, ed conv.Edit, c *conv.Conversation) error {
	if err := k.k.Keep(ctx, ed, c); err != nil {
		return err
	}
	if k.r != nil {
		k.r.Edits = append(k.r.Edits, ed)
		k.r.Originals = append(k.r.Originals, ed.Affected(c)...)
	}
	return nil
}

// spillKeeper is a keeper that also lets micro's oversize guard write
// through the caller's Spiller.
type spillKeeper struct {
	*keeper
	Spiller
}

func addMicro(a, b micro.Result) micro.Result {
	a.Edits = append(a.Edits, b.Edits...)
	a.Compressed += b.Compressed
	a.Cleared += b.Cleared
	a.Spilled += b.Spilled
	a.BytesSpilled += b.BytesSpilled
	a.Freed += b.Freed
	a.Rewrite += b.Rewrite
	a.Deferred, a.Uncovered = b.Deferred, b.Uncovered
	a.Tokens = b.Tokens
	return a
}
