package bench

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
)

// ctxkitStrategy is ctxkit's default engine as the agent runs it before
// every request: micro-compaction (rung 1 for ended rounds, rung 2 with the
// cache-aware policy priced by the run's table and told where compaction
// starts, the oversize guard), then compaction with the extractive
// summarizer when the context passes the soft threshold — after which
// micro clears at once what it may (micro.Compactor.Compacted) — then
// assembly with ctxkit's cache anchors and the ones micro holds
// (micro.Compactor.Hold, assemble.Builder.BuildHeld).
type ctxkitStrategy struct {
	base
	micro   *micro.Compactor
	compact *compact.Compactor
	keeper  *micro.MemoryKeeper
	builder *assemble.Builder
	err     error
}

func newCtxkit(e Env) Strategy {
	s := &ctxkitStrategy{base: newBase(e), keeper: micro.NewMemoryKeeper()}
	s.compact = compact.New(nil, compact.Config{Window: e.Window, Counter: e.Counter})
	s.micro = micro.New(micro.Config{
		Policy: micro.CacheAware{Pricing: e.Pricing}, Counter: e.Counter, Window: e.Window,
		CompactAt: s.compact.Budget().Soft, MinCacheTokens: e.MinCacheTokens,
	})
	anchors := 0
	if e.Pricing.Automatic || !e.Pricing.Caches() {
		anchors = -1 // the provider caches by itself, or not at all
	}
	// The replay has no workspace: no project rules, no @file mentions.
	s.builder, s.err = assemble.New(assemble.Config{
		Workspace: os.TempDir(), RuleFiles: []string{}, Counter: e.Counter, MaxAnchors: anchors,
		MinCacheTokens: e.MinCacheTokens,
	})
	return s
}

func (s *ctxkitStrategy) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	var info StepInfo
	if s.err != nil {
		return nil, info, s.err
	}
	s.append(arrived)
	if _, err := s.micro.Step(ctx, s.c, s.keeper); err != nil {
		return nil, info, fmt.Errorf("micro: %w", err)
	}
	res, err := s.compact.Before(ctx, s.c, s.keeper)
	var overflow *compact.OverflowError
	var stopped *compact.StoppedError
	if err != nil && !errors.As(err, &overflow) && !errors.As(err, &stopped) {
		return nil, info, fmt.Errorf("compact: %w", err)
	}
	// An overflow or a stopped compactor still sends the request: the
	// replay counts it as a turn over the window, as the provider would
	// reject it.
	info.Compactions = res.Compactions
	info.SummarizerCalls = len(res.Summaries)
	if res.Compactions > 0 {
		// This request rewrites everything after the summary: what micro
		// may clear goes now, at no rewrite.
		if _, err := s.micro.Compacted(ctx, s.c, s.keeper); err != nil {
			return nil, info, fmt.Errorf("micro: %w", err)
		}
	}
	a, err := s.builder.BuildHeld(s.c, nil, s.micro.Hold())
	if err != nil {
		return nil, info, err
	}
	return a.Request, info, nil
}
