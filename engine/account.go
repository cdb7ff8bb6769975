package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// What the session has saved: do no harm by construction.
//
// Every lossy step below the hard limit is a bet that the session goes on:
// its cost comes at once (the rewrite of the provider's cached prefix, a
// compaction's summary call), its saving one request at a time. The
// horizon rule takes a bet only when it pays back nine times in ten; the
// account makes sure the tenth time costs the user nothing either. The
// engine keeps, per session, what it has saved so far against sending
// everything — every message whole in every request, the strategy "none"
// of ctxkit bench — and a step's certain cost is staked only out of that
// (horizon.Covered): a clearing or a round end's compression whose rewrite
// (micro.Stake), or an early compaction whose Cost, less what the request
// carrying it reads less, the savings do not cover waits. Steps the
// window forces (near the high-water mark, at the hard threshold) are
// taken whatever they cost, and charged like any other.
//
// The account is the engine's own arithmetic, the same in every caller
// and on every replay of the same history (a proxy's mirror rebuilt after
// a restart comes to the same figure): at each request it credits what
// the request does not read that sending everything would (the tokens the
// session has held back, at the price of reading them: the cache-read
// price with a cache, the input price without) and charges the steps
// taken — a rewrite at the write premium, a compaction's Cost — and any
// recall round trip, a request sending everything would not have made
// (its whole prompt, the originals it writes, the call's output). The
// write savings of results compressed as they arrived are not credited,
// nor the rewrite a cold cache forces on sending everything: the account
// errs on the side of saving less than the session did.

// account is what a session has saved against sending everything, in
// price × tokens (pricing.Table's prices times tokens, as micro.Decision
// and compact.Cost count).
type account struct {
	saved float64
	// full is what sending everything would send, besides the project
	// rules: the system prompt, the tools and every message as it
	// arrived, recall round trips aside.
	full    int
	started bool
	seen    int // messages of the conversation already counted
	// Since the last request: the tokens arrived whole (recall round
	// trips aside), those of recall calls and results, and whether
	// anything but a recall round trip arrived.
	arrived, trip, tripOutput int
	other                     bool
	recalls                   map[string]bool // tool_use ids of recall calls
}

// arrive counts the messages of c not counted yet, as they arrived,
// before the engine changes any: it runs first in every call that takes
// new messages (Admit, RoundEnded, Prepare).
func (e *Engine) arrive(c *conv.Conversation) {
	a := &e.acct
	counter := e.cfg.Counter
	if !a.started {
		a.started = true
		for i := range c.System {
			a.full += conv.BlockTokens(&c.System[i], counter)
		}
		for i := range c.Tools {
			a.full += conv.ToolTokens(&c.Tools[i], counter)
		}
	}
	a.seen = min(a.seen, len(c.Messages))
	for i := a.seen; i < len(c.Messages); i++ {
		m := &c.Messages[i]
		whole := conv.MessageTokens(m, counter) // with the message's framing
		for j := range m.Blocks {
			b := &m.Blocks[j]
			switch {
			case b.Type == conv.TypeToolUse && toolresult.IsRecall(b.Name, e.cfg.RecallTool):
				if a.recalls == nil {
					a.recalls = make(map[string]bool)
				}
				a.recalls[b.ToolUseID] = true
				n := conv.BlockTokens(b, counter)
				a.trip, a.tripOutput, whole = a.trip+n, a.tripOutput+n, whole-n
			case b.Type == conv.TypeToolResult && a.recalls[b.ToolUseID]:
				delete(a.recalls, b.ToolUseID)
				n := conv.BlockTokens(b, counter)
				a.trip, whole = a.trip+n, whole-n
			case m.Role == conv.RoleUser:
				a.other = true
			}
		}
		a.arrived += max(whole, 0)
	}
	a.seen = len(c.Messages)
}

// settle closes the account of the request Prepare built, of tokens
// tokens: sending everything would have read the whole history; a recall
// round trip (nothing but recall calls and their results arrived) is a
// request it would not have made at all.
func (e *Engine) settle(c *conv.Conversation, tokens int) {
	a := &e.acct
	p := e.cfg.Pricing
	read, premium := p.ReadPrice(), p.RewritePrice()
	// What recall calls and their results cost that sending everything
	// would not have: the originals written, the calls' output.
	extra := premium*float64(a.trip-a.tripOutput) + p.Output*float64(a.tripOutput)
	if a.trip > 0 && !a.other {
		// A round trip of its own: the whole prompt read once more.
		a.saved -= read*float64(tokens) + extra
	} else {
		a.full += a.arrived
		a.saved += read*float64(a.full+e.rulesTokens-tokens) - extra
	}
	a.arrived, a.trip, a.tripOutput, a.other = 0, 0, 0, false
	a.seen = len(c.Messages)
}

// charge takes what a step cost at once off the account (a negative cost,
// a step that saved at once, is credited).
func (e *Engine) charge(cost float64) { e.acct.saved -= cost }

// chargeCompaction charges what the compaction cr cost (compact.Cost: the
// summary call, which read the context as the ladder measured it before
// compacting, cr.TokensBefore, and the rewrite of what is left, by the
// engine's own count, clearings after it included), and moves the count
// past the messages it wrote.
func (e *Engine) chargeCompaction(c *conv.Conversation, cr compact.Result) {
	summary := 0
	for _, s := range cr.Summaries {
		summary += s.Tokens
	}
	e.charge(compact.Cost(e.cfg.Pricing, cr.TokensBefore, e.count(c), summary))
	e.acct.seen = len(c.Messages)
}

// Saved is what the session has saved so far against sending everything,
// in dollars, by the engine's account (see above).
func (e *Engine) Saved() float64 { return e.acct.saved / 1e6 }

// Account is what the engine's account (above) holds between calls, with
// the count of requests the horizon predicts from (package horizon): all
// a resumed session's engine needs to go on deciding as the session's
// engine would have. A caller that resumes sessions persists it after
// each call that changed it (the agent writes it to the transcript) and
// gives the last one persisted to Resume; without it, a resumed session
// starts its account at nothing saved and its horizon at no requests, and
// stakes nothing until it has saved again.
type Account struct {
	// Requests counts the requests the session has made.
	Requests int `json:"requests"`
	// Saved is what the session has saved against sending everything, in
	// price × tokens (Engine.Saved gives it in dollars).
	Saved float64 `json:"saved"`
	// Full is what sending everything would send, besides the project
	// rules and what arrived since the last request; Started says it
	// holds the system prompt and the tools.
	Full    int  `json:"full"`
	Started bool `json:"started"`
	// Messages is how many messages of the conversation the account has
	// counted: any after them count as arrived at the next call.
	Messages int `json:"messages"`
	// Since the last request: the tokens arrived whole, those of recall
	// calls and results and of the calls alone, and whether anything but
	// a recall round trip arrived.
	Arrived    int  `json:"arrived,omitempty"`
	Trip       int  `json:"trip,omitempty"`
	TripOutput int  `json:"trip_output,omitempty"`
	Other      bool `json:"other,omitempty"`
	// Window is the window a provider's refusal stated, when it is
	// smaller than the configured one (Retry); 0 when none was.
	Window int `json:"window,omitempty"`
}

// ErrAccount says an Account given to Resume cannot be the engine's.
var ErrAccount = errors.New("engine: not an account the engine kept")

// Account returns the account as it stands, for the caller to persist.
func (e *Engine) Account() Account {
	a := &e.acct
	acct := Account{Requests: e.requests, Saved: a.saved, Full: a.full, Started: a.started, Messages: a.seen,
		Arrived: a.arrived, Trip: a.trip, TripOutput: a.tripOutput, Other: a.other}
	if w := e.compact.Budget().Window; w < e.configured {
		acct.Window = w
	}
	return acct
}

// Resume restores a, the last Account persisted for a session, in a new
// engine for that session, before its first call, the window a provider
// stated included. A recall call whose
// result had not arrived when a was taken is counted as any other
// message. An account that cannot be one the engine kept (a negative
// count, a saving that is not a number) is an error wrapping ErrAccount,
// and the engine is left as it was.
func (e *Engine) Resume(a Account) error {
	if min(a.Requests, a.Full, a.Messages, a.Arrived, a.Trip, a.TripOutput, a.Window) < 0 || a.TripOutput > a.Trip ||
		math.IsNaN(a.Saved) || math.IsInf(a.Saved, 0) {
		return fmt.Errorf("%w: %+v", ErrAccount, a)
	}
	e.shrink(a.Window)
	e.requests = a.Requests
	e.acct = account{saved: a.Saved, full: a.Full, started: a.Started, seen: a.Messages,
		arrived: a.Arrived, trip: a.Trip, tripOutput: a.TripOutput, other: a.Other}
	return nil
}
