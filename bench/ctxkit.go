package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
)

// ctxkitStrategy is ctxkit's engine (package engine) driven exactly as
// the agent drives it: each arrived message is appended, the usage the
// simulated provider billed for the previous request is observed once the
// response is in the conversation, a round that ended gets RoundEnded
// (rung 1), and Prepare decides and assembles the next request. The
// summarizer is the extractive one, the originals are kept in memory, and
// there is no workspace: a replay has no project files.
type ctxkitStrategy struct {
	base
	eng    *engine.Engine
	keeper *micro.MemoryKeeper
	err    error
	// usage is what the simulated provider billed for the last request,
	// observed once its response arrives with the next step.
	usage *llm.Usage
}

func newCtxkit(e Env) Strategy {
	s := &ctxkitStrategy{base: newBase(e), keeper: micro.NewMemoryKeeper()}
	s.eng, s.err = engine.New(engine.Config{
		Window:         e.Window,
		Pricing:        e.Pricing,
		Counter:        e.Counter,
		MinCacheTokens: e.MinCacheTokens,
		Keeper:         s.keeper,
	})
	return s
}

// Observe is the replay hook: the usage the simulated provider billed for
// the request Step returned.
func (s *ctxkitStrategy) Observe(u llm.Usage) { s.usage = &u }

func (s *ctxkitStrategy) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	var info StepInfo
	if s.err != nil {
		return nil, info, s.err
	}
	for _, m := range arrived {
		s.append([]conv.Message{m})
		if m.Role != conv.RoleAssistant {
			continue
		}
		if s.usage != nil {
			s.eng.Observe(s.c, *s.usage)
			s.usage = nil
		}
		if !hasToolUse(&m) {
			// The model answered without a tool: the round is over.
			if _, err := s.eng.RoundEnded(ctx, s.c); err != nil {
				return nil, info, err
			}
		}
	}
	// A new user turn begins with the previous round's results settled, as
	// the agent's Run does.
	if n := len(s.c.Messages); n > 0 && conv.OpensRound(s.c.Messages[n-1]) {
		if _, err := s.eng.RoundEnded(ctx, s.c); err != nil {
			return nil, info, err
		}
	}
	r, err := s.eng.Prepare(ctx, s.c)
	var overflow *compact.OverflowError
	if err != nil && !errors.As(err, &overflow) {
		return nil, info, fmt.Errorf("engine: %w", err)
	}
	// An overflow still sends the request: the replay counts it as a turn
	// over the window, as the provider would reject it.
	info.Compactions = r.Compaction.Compactions
	info.SummarizerCalls = len(r.Compaction.Summaries)
	if r.Request == nil {
		return nil, info, fmt.Errorf("engine: no request: %w", err)
	}
	return r.Request, info, nil
}

func hasToolUse(m *conv.Message) bool {
	for i := range m.Blocks {
		if m.Blocks[i].Type == conv.TypeToolUse {
			return true
		}
	}
	return false
}
