package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
)

// ctxkitStrategy is ctxkit's engine (package engine) driven through
// engine.Replay, in exactly the order the agent calls it: the usage the
// simulated provider billed for a request is observed once its response
// arrives, a round that ended gets RoundEnded (rung 1), and Prepare
// decides and assembles the next request. The summarizer is the extractive
// one, the originals are kept in memory, and there is no workspace: a
// replay has no project files.
type ctxkitStrategy struct {
	base
	replay *engine.Replay
	err    error
}

func newCtxkit(e Env) Strategy {
	s := &ctxkitStrategy{base: newBase(e)}
	eng, err := engine.New(engine.Config{
		Window:         e.Window,
		Pricing:        e.Pricing,
		Counter:        e.Counter,
		MinCacheTokens: e.MinCacheTokens,
		Keeper:         engine.NewMemoryKeeper(),
	})
	if err != nil {
		s.err = err
		return s
	}
	s.replay = engine.NewReplay(eng)
	return s
}

// Observe is the replay hook (Observer): the usage the simulated provider
// billed for the request Step returned.
func (s *ctxkitStrategy) Observe(u llm.Usage) { s.replay.Observe(u) }

func (s *ctxkitStrategy) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	var info StepInfo
	if s.err != nil {
		return nil, info, s.err
	}
	s.append(arrived)
	r, err := s.replay.Step(ctx, s.c, len(arrived))
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
