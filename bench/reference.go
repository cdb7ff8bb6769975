package bench

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
)

// reference is a lower bound, not a product: it knows the rest of the
// recording. A tool result may go once every evidence term it holds that a
// later turn will use is also held by a newer block still in the context
// (the newest block holding a term is never cleared while the term is
// needed), so its evidence recall is 1 by construction. It clears a batch
// only when the batch pays: it bills this request both ways against a
// shadow of the replay's cache, exactly, and weighs the extra cost against
// the freed tokens over the turns that really remain. It uses ctxkit's
// request assembly, so the two differ only in what they clear.
type reference struct {
	base
	pos       int                 // recording index of the next assistant message
	termsOf   map[string][]string // tool result id → evidence terms it holds
	lastUse   map[string]int      // term → last assistant index using it
	msgOf     map[string]int      // block id → recording message index
	shadow    *Cache
	builder   *engine.Engine // assembly only: the reference decides what to clear
	err       error
	remaining []int // assistant messages at or after each recording index
}

func newReference(e Env) Strategy {
	s := &reference{base: newBase(e), shadow: NewCache(e.Pricing, e.MinCacheTokens)}
	// The engine's assembly, with the anchors it places for these prices;
	// no workspace: a replay has no project files.
	s.builder, s.err = engine.New(engine.Config{
		Window: e.Window, Pricing: e.Pricing, Counter: e.Counter, MinCacheTokens: e.MinCacheTokens,
		Keeper: engine.NewMemoryKeeper(), NoMicro: true, NoCompaction: true,
	})
	s.index()
	return s
}

func (s *reference) index() {
	ev, rec := s.env.Evidence, s.env.Recording
	s.termsOf, s.lastUse, s.msgOf = make(map[string][]string), make(map[string]int), make(map[string]int)
	for k, terms := range ev.Terms {
		for _, t := range terms {
			s.lastUse[t] = max(s.lastUse[t], k)
		}
	}
	for t := range s.lastUse {
		for _, id := range ev.where[t] {
			s.termsOf[id] = append(s.termsOf[id], t)
		}
	}
	s.remaining = make([]int, len(rec.Messages)+1)
	for i := len(rec.Messages) - 1; i >= 0; i-- {
		s.remaining[i] = s.remaining[i+1]
		if rec.Messages[i].Role == conv.RoleAssistant {
			s.remaining[i]++
		}
		for _, b := range rec.Messages[i].Blocks {
			s.msgOf[b.ID] = i
		}
	}
}

// held reports whether term t is held by a block newer than message after
// that is in the conversation unchanged.
func (s *reference) held(t string, after int, present map[string]bool) bool {
	for _, id := range s.env.Evidence.where[t] {
		if m, ok := s.msgOf[id]; ok && m > after && present[id] {
			return true
		}
	}
	return false
}

func (s *reference) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	if s.err != nil {
		return nil, StepInfo{}, s.err
	}
	s.append(arrived)
	s.pos += len(arrived)
	present := make(map[string]bool)
	for i := range s.c.Messages {
		for _, b := range s.c.Messages[i].Blocks {
			if b.Meta.Rung == conv.RungFull {
				present[b.ID] = true
			}
		}
	}
	var batch []string
	freed := 0
	last := len(s.c.Messages) - 1
	for i := range s.c.Messages[:max(last, 0)] {
		for j := range s.c.Messages[i].Blocks {
			b := &s.c.Messages[i].Blocks[j]
			if b.Type != conv.TypeToolResult || b.Meta.Rung >= conv.RungPlaceholder {
				continue
			}
			ok := true
			for _, t := range s.termsOf[b.ID] {
				if s.lastUse[t] >= s.pos && !s.held(t, s.msgOf[b.ID], present) {
					ok = false
					break
				}
			}
			if ok {
				batch = append(batch, b.ID)
				freed += conv.BlockTokens(b, s.env.Counter)
			}
		}
	}
	keep, err := s.builder.Build(s.c)
	if err != nil {
		return nil, StepInfo{}, err
	}
	req := keep.Request
	if len(batch) > 0 {
		cleared := s.c.Clone()
		for _, id := range batch {
			i, j := cleared.Find(id)
			b := &cleared.Messages[i].Blocks[j]
			placeholder(b, fmt.Sprintf("[cleared: %s result — recall %s]", b.Name, b.ID))
		}
		alt, err := s.builder.Build(cleared)
		if err != nil {
			return nil, StepInfo{}, err
		}
		if s.pays(keep.Request, alt.Request, freed) {
			s.c, req = cleared, alt.Request
		}
	}
	s.shadow.Bill(Segments(req, s.env.Counter), 0)
	return req, StepInfo{}, nil
}

// pays bills both requests against copies of the shadow cache and clears
// when the extra cost now is less than what the freed tokens would cost
// over the rest of the recording, or when keeping would not fit.
func (s *reference) pays(keep, clear *llm.Request, freed int) bool {
	segsKeep := Segments(keep, s.env.Counter)
	total := 0
	for _, seg := range segsKeep {
		total += seg.Tokens
	}
	if total > s.env.Window {
		return true
	}
	extra := s.shadow.clone().Bill(Segments(clear, s.env.Counter), 0).USD - s.shadow.clone().Bill(segsKeep, 0).USD
	p := s.env.Pricing
	perToken := p.ReadPrice()
	later := s.remaining[min(s.pos, len(s.remaining)-1)] - 1
	return float64(freed)*float64(later)*perToken/1e6 > extra
}
