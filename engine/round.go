package engine

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/horizon"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/toolresult"
)

// RoundEnded moves the results of finished steps to history (rung 1,
// seed 000 §3.1): every full tool result the model has already answered
// (an assistant message follows it) and whose round has ended gets its
// per-tool compressed form. Call it when the model answers without
// calling a tool (the round is over) and again when a new user turn
// begins; within a round the model sees its results whole. The change is
// one edit, kept through Config.Keeper before it is applied. Ready has no
// request.
func (e *Engine) RoundEnded(ctx context.Context, c *conv.Conversation) (Ready, error) {
	r := e.ready()
	e.arrive(c)
	if e.cfg.NoMicro {
		return r, nil
	}
	last := -1
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == conv.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return r, nil
	}
	// When the conversation ends with the model's answer the round is
	// over; otherwise the round of the last step is still open and keeps
	// its results whole.
	end := last
	if last == len(c.Messages)-1 {
		end = len(c.Messages)
	} else {
		rounds := c.Rounds()
		end = min(end, rounds[len(rounds)-1].Start)
	}
	var uses map[string]*conv.Block
	var blocks []conv.Block
	freed, first, recalled := 0, -1, 0
	counter := e.cfg.Counter
	for i := 0; i < end; i++ {
		m := &c.Messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Type != conv.TypeToolResult || b.Meta.Rung != conv.RungFull || b.Meta.Pinned || !b.Meta.Compactable {
				continue
			}
			if e.incompressible[b.ID] {
				continue
			}
			if uses == nil {
				uses = c.ToolUses()
			}
			nb, ok := toolresult.Compress(b, uses[b.ToolUseID])
			if !ok {
				if e.incompressible == nil {
					e.incompressible = make(map[string]bool)
				}
				e.incompressible[b.ID] = true
				continue
			}
			freed += conv.BlockTokens(b, counter) - conv.BlockTokens(&nb, counter)
			if u := uses[b.ToolUseID]; u != nil && toolresult.IsRecall(u.Name, e.cfg.RecallTool) {
				recalled++
			}
			blocks = append(blocks, nb)
			if first < 0 {
				first = i
			}
		}
	}
	if len(blocks) == 0 {
		return r, nil
	}
	pays, rewrite, uncovered := e.roundPays(c, first, freed, recalled)
	if uncovered {
		r.decide(Decision{Kind: KindWait, Blocks: len(blocks), Tokens: freed,
			Reason: "the round ended: its results stay whole until the session has saved enough against sending everything to pay for the rewrite (do no harm)"})
	}
	if !pays {
		// Do no harm: the rewrite would not pay back within the horizon,
		// or would stake more than the session has saved. The results
		// stay whole and are offered again at the next round end, when
		// the session has gone on longer and the batch is larger.
		return r, nil
	}
	ed := conv.Edit{Kind: conv.EditRung, Reason: "engine:round", Blocks: blocks}
	e.keeper.r = &r
	defer func() { e.keeper.r = nil }()
	if err := e.keeper.Keep(ctx, ed, c); err != nil {
		return r, fmt.Errorf("engine: keeping the round's results before compressing them: %w", err)
	}
	if err := c.Apply(ed); err != nil {
		return r, fmt.Errorf("engine: compressing the round's results: %w", err)
	}
	// The next request changes the prompt from the first compressed
	// result: micro holds the cached prefix before it, the one roundPays
	// priced the rewrite by, so the request reads it.
	e.micro.Changed(c, first)
	e.charge(rewrite)
	r.Round = RoundResult{Compressed: len(blocks), Freed: freed}
	r.decide(Decision{Kind: KindCompress, Blocks: len(blocks), Tokens: freed,
		Reason: "the round ended: its results enter history in their per-tool compressed form (rung 1)"})
	e.freed(freed)
	return r, nil
}

// roundPays reports whether moving blocks to rung 1, freeing freed tokens,
// pays back within the horizon (package horizon), and what the change
// costs at once (the rewrite, in price × tokens; account.go), by the arithmetic of
// micro's cache-aware policy: the change makes the provider write again
// everything from the first changed message (first) to the end of the request
// (T tokens, less the F freed) at the write premium w−r, and saves F·r on
// every later request until the next compaction rewrites the prompt
// anyway. A provider without a prompt cache pays no rewrite; there rung 1
// must save, within the horizon, the request read once more (a recall
// round trip, should the model need a compressed result whole). recalled
// counts the results of recall calls among the blocks: each costs a round
// trip of its own (micro.RecallTrips). A rewrite is staked only out of
// what the session has saved against sending everything (account.go).
// Near the window it is taken whatever it costs. uncovered says it would
// pay back but the session's savings do not cover its stake.
func (e *Engine) roundPays(c *conv.Conversation, first, freed, recalled int) (pays bool, rewrite float64, uncovered bool) {
	if freed <= 0 {
		return false, 0, false
	}
	usage := e.compact.Usage(c)
	// Where the provider can read back to, by micro's picture of its
	// cache: with explicit anchors the deepest live anchored prefix before
	// the first changed message, not the message itself.
	suffix := 0
	if e.cfg.Pricing.Caches() {
		suffix = e.micro.Rewrite(c, first)
	}
	rewrite = float64(suffix-freed) * e.cfg.Pricing.RewritePrice() // negative: a saving on what is written anyway (micro's rule)
	if usage >= e.HighWater() {
		return true, rewrite, false
	}
	h := horizon.Requests(e.requests, horizon.DefaultConfidence)
	if next := e.compact.NextAt(); !e.cfg.NoCompaction && e.requests > 0 && usage > 0 && next > usage {
		// The context grows usage/requests a request; the compaction
		// due at next rewrites everything, so saving stops there.
		h = min(h, float64(next-usage)*float64(e.requests)/float64(usage))
	}
	// Besides any rewrite, rung 1 must pay for the recall round trips the
	// knob asks (Config.KeepValue; micro.RecallTrips): a compressed
	// result the model needs whole again costs one, the request read once
	// more, with a prompt cache or without; or, when the results of
	// recall calls among them (recalled) are several, one each.
	p := e.cfg.Pricing
	trips := micro.RecallTrips(e.cfg.KeepValue, usage, recalled)
	if !p.Caches() {
		// Nothing to rewrite (micro's rule).
		return h*float64(freed) >= trips, 0, false
	}
	pays = h*float64(freed)*p.CacheRead >= rewrite+trips*p.CacheRead
	if !horizon.Covered(micro.Stake(p, suffix, freed), e.acct.saved) {
		return false, rewrite, pays
	}
	return pays, rewrite, false
}
