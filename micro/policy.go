package micro

import (
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/horizon"
	"github.com/ctxkit/ctxkit/pricing"
)

// ErrUnknownPolicy is returned by ByName for a name it does not know.
var ErrUnknownPolicy = errors.New("micro: unknown policy")

// Batch is what a Policy decides on: the blocks that could move down a
// rung now, described by what clearing them frees and what it costs.
type Batch struct {
	// Freed (F) is the tokens the batch frees.
	Freed int
	// Suffix (T) is the tokens of the provider's cached prefix (the
	// previous request) that clearing makes it write again: from where
	// the provider can still read up to — the batch's first block with
	// automatic caching, the deepest anchored prefix before it with
	// explicit anchors (package doc) — to the end of the previous request.
	Suffix int
	// Waited is the rent already paid: the sum, over earlier requests, of
	// the batch's tokens that were clearable then and sent anyway
	// (token-requests).
	Waited int
	// Requests is how many requests the session has made so far, this one
	// included; it predicts how many are still to come.
	Requests int
	// Total is the request's tokens as it stands; Window the model's
	// context window; Near is set when Total is above the high-water mark.
	Total, Window int
	Near          bool
	// Compaction is how many requests, this one included, are expected
	// before compaction rewrites the whole prompt (Config.CompactAt); 0
	// when none is foreseen. Clearing saves nothing past it.
	Compaction int
	// Recalled counts the batch's results of recall calls: originals the
	// model asked to have back, which it has shown it needs.
	Recalled int
	// Saved is what the session has saved so far against sending
	// everything, in price × tokens, when Accounted (the engine keeps the
	// account; Clearer.SetSaved): the most a rewrite may stake.
	Saved     float64
	Accounted bool
}

// Policy decides when clearable blocks move down: clearing changes the
// request from the first changed block on, which a provider with a prompt
// cache bills as a rewrite of everything after it.
type Policy interface {
	// Name is the policy's name, as ByName takes it.
	Name() string
	// Clear reports whether to apply the batch now; otherwise the blocks
	// stay as they are and are offered again with the next request.
	Clear(b Batch) bool
}

// ByName returns the policy called name — eager, batched or cache-aware —
// with the defaults, cache-aware using prices t.
func ByName(name string, t pricing.Table) (Policy, error) {
	switch name {
	case "eager":
		return Eager{}, nil
	case "batched":
		return Batched{}, nil
	case "cache-aware", "":
		return CacheAware{Pricing: t}, nil
	}
	return nil, fmt.Errorf("%w %q (want eager, batched or cache-aware)", ErrUnknownPolicy, name)
}

// Eager clears every clearable block before every request: seed 003's
// micro_compact.
type Eager struct{}

func (Eager) Name() string { return "eager" }

func (Eager) Clear(b Batch) bool { return b.Freed > 0 }

// DefaultClearAtLeast is Batched's default minimum.
const DefaultClearAtLeast = 10_000

// Batched clears only when a batch frees at least AtLeast tokens
// (DefaultClearAtLeast when 0), like the Anthropic API's clear_at_least,
// or when the request is near the window.
type Batched struct {
	AtLeast int
}

func (Batched) Name() string { return "batched" }

func (p Batched) Clear(b Batch) bool {
	least := p.AtLeast
	if least <= 0 {
		least = DefaultClearAtLeast
	}
	return b.Freed > 0 && (b.Freed >= least || b.Near)
}

// Defaults of CacheAware.
const (
	DefaultMinHorizon = 10
	DefaultMaxHorizon = 200
	DefaultTrust      = 0.5
)

// CacheAware clears a batch when it pays for the cache rewrite it causes,
// by the rule in the package doc: the rent already paid for reading
// clearable tokens must reach λ·C when the predicted saving covers the
// rewrite cost C, and C/λ when it does not. A provider without a prompt
// cache pays no rewrite; there a batch is cleared when what it saves over
// the horizon covers reading the request once more — the recall round trip
// it costs should the model need a cleared result back (do no harm).
//
// A rewrite is paid at once, whatever follows; the saving comes only if
// the session goes on. So when the batch carries the session's account
// (Batch.Accounted), a batch is cleared only when its rewrite is covered
// by what the session has saved so far against sending everything
// (Batch.Saved): should the session end right after, it still costs no
// more than sending everything would have. Near the window a batch is
// cleared whatever it costs.
type CacheAware struct {
	Pricing pricing.Table
	// MinHorizon and MaxHorizon bound the predicted number of requests
	// still to come (DefaultMinHorizon, DefaultMaxHorizon when 0).
	MinHorizon, MaxHorizon int
	// Trust (λ in (0,1], DefaultTrust when 0) is how far the horizon
	// prediction is trusted: 1 ignores it (plain rent-or-buy).
	Trust float64
	// Confidence is the probability with which the session must reach
	// the horizon (horizon.DefaultConfidence, 0.9, when 0).
	Confidence float64
	// KeepValue is the knob between cost and recall (the engine's
	// Config.KeepValue): what keeping a token in view is worth. A cleared
	// result is not lost, it is behind its recall id; what the model
	// loses is the round trip that fetches it back, which reads the
	// request once more. A batch is cleared only when what it saves
	// covers, besides its rewrite, the round trips RecallTrips asks for
	// KeepValue (DefaultKeepValue when 0: main's rules; a negative value
	// asks none, dollars alone).
	KeepValue float64
}

func (CacheAware) Name() string { return "cache-aware" }

// Automatic reports whether the provider caches every prefix by itself
// (its prices say so): then a change rewrites from the changed block on,
// not from the deepest anchored prefix before it (package doc).
func (p CacheAware) Automatic() bool { return p.Pricing.Automatic }

func (p CacheAware) Clear(b Batch) bool {
	if b.Freed <= 0 {
		return false
	}
	if b.Near {
		return true
	}
	if b.Accounted && !horizon.Covered(Stake(p.Pricing, b.Suffix, b.Freed), b.Saved) {
		// Do no harm: the stake is more than the session has saved.
		return false
	}
	if !p.Pricing.Caches() {
		// No rewrite to pay, but a cleared result the model needs again
		// costs a recall round trip: the request read once more. Do no
		// harm: clear only what saves that many (RecallTrips) within
		// the horizon.
		return float64(p.horizon(b))*float64(b.Freed) >= RecallTrips(p.keep(), b.Total, b.Recalled)
	}
	return p.Decide(b).Clear
}

// Stake is what a change costs at once that makes the provider write
// again suffix tokens of the previous request, freeing freed of them,
// beyond what the request carrying it reads less: (T−F)·(w−r) − F·r, in
// price × tokens; nothing without a cache, where there is no rewrite.
// Micro's batches and the engine's rung 1 at a round's end are taken only
// when the session's savings cover it (horizon.Covered).
func Stake(p pricing.Table, suffix, freed int) float64 {
	if !p.Caches() {
		return 0
	}
	return float64(suffix-freed)*p.RewritePrice() - float64(freed)*p.CacheRead
}

// DefaultKeepValue is CacheAware.KeepValue's default, the engine's (and
// compact.DefaultKeepValue): one recall round trip.
const DefaultKeepValue = 1.0

// keep is the keep value in effect.
func (p CacheAware) keep() float64 {
	if p.KeepValue == 0 {
		return DefaultKeepValue
	}
	return p.KeepValue
}

// RecallTrips is what the knob keep asks a step that takes tokens out of
// view to save besides its rewrite, in tokens read: keep recall round
// trips, each the request read once more (at the default, 1: one — the
// round trip that fetches a result back should the model need it), or
// that many for each recalled result the step takes out, when it takes
// out more than one: that round trip stands for the one result of the
// step the model may need back, and a result the model recalled is one it
// has shown it needs, so taking it out of view again costs the round trip
// that fetched it. Never negative. The same with or without a prompt
// cache: the rewrite a change causes is paid whatever follows, so it
// stands for no round trip. Micro's clearing and the engine's rung 1 at
// the end of a round both count it.
func RecallTrips(keep float64, request, recalled int) float64 {
	return max(keep, 0) * float64(request) * float64(max(recalled, 1))
}

// horizon is H, the requests still to come that a clearing may count on
// (package horizon), this one included, and never past the compaction
// foreseen.
func (p CacheAware) horizon(b Batch) int {
	minH, maxH := p.MinHorizon, p.MaxHorizon
	if minH <= 0 {
		minH = DefaultMinHorizon
	}
	if maxH <= 0 {
		maxH = DefaultMaxHorizon
	}
	if maxH < minH {
		maxH = minH
	}
	h := max(1, int(horizon.Requests(min(max(b.Requests, minH), maxH), p.Confidence)+1e-9))
	if b.Compaction > 0 {
		h = min(h, b.Compaction)
	}
	return h
}

// Decision is CacheAware's arithmetic for one batch, in dollars per
// million tokens times tokens (the units cancel), for tests and reports.
type Decision struct {
	Horizon   int     // H: predicted requests still to come, this one included
	Rewrite   float64 // C = (T−F)·(w−r) + RecallTrips·r: the rewrite clearing now causes, and the recall round trips the knob asks for
	PerTurn   float64 // F·r: what keeping the batch costs each request
	Predicted float64 // H·F·r: what clearing saves over the horizon
	Rent      float64 // (Waited+F)·r: what keeping it has cost, this request included
	Threshold float64 // λ·C
	Clear     bool    // Predicted ≥ C and Rent ≥ Threshold
}

// Decide works out the rule for b (ignoring Near and a provider without a
// cache, which Clear handles first).
func (p CacheAware) Decide(b Batch) Decision {
	trust := p.Trust
	if trust <= 0 || trust > 1 {
		trust = DefaultTrust
	}
	r, w := p.Pricing.CacheRead, p.Pricing.CacheWrite
	// Do no harm: the session reaches the horizon with probability
	// Confidence under the Lindy prior (package horizon).
	d := Decision{Horizon: p.horizon(b)}
	// Not clamped at 0: tokens this request writes anyway (a cold cache,
	// results past the cached prefix) that the batch frees are a saving
	// at w − r, which a negative C carries (package doc).
	d.Rewrite = float64(b.Suffix-b.Freed) * (w - r)
	// Besides the rewrite, clearing must pay for the recall round trips
	// the knob asks (KeepValue): each reads the request again, at r.
	d.Rewrite += RecallTrips(p.keep(), b.Total, b.Recalled) * r
	d.PerTurn = float64(b.Freed) * r
	d.Predicted = float64(d.Horizon) * d.PerTurn
	d.Rent = float64(b.Waited+b.Freed) * r
	// A batch that does not pay back within the horizon is not cleared,
	// however long it has waited: the rent is paid by sending everything
	// too, so it buys nothing back (do no harm). One that pays waits
	// until the rent reaches λ·C, in case the prediction is wrong.
	d.Threshold = trust * d.Rewrite
	d.Clear = d.Predicted >= d.Rewrite && d.Rent >= d.Threshold
	return d
}
