package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

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

	// last is the time of the last request stepped; trip is set while the
	// engine steps for a recall round trip, which went out then (the
	// replay bills it at that time).
	last time.Time
	trip bool
	// reports are the provider's reports on the requests since the last
	// Step, in order (two after a recall round trip): each is given to
	// the engine before the step whose messages hold that request's
	// response.
	reports []llm.Usage
}

func newCtxkit(e Env) Strategy { return newCtxkitAt(e, e.KeepValue) }

// CtxkitAt is ctxkit's engine with the knob engine.Config.KeepValue set
// to v, named "ctxkit v=…": one point of its cost–recall curve, which the
// report draws through every such strategy (bench --frontier).
func CtxkitAt(v float64) Factory {
	return Factory{
		Name:        FrontierName(v),
		Description: fmt.Sprintf("ctxkit's engine with KeepValue %g (a token kept in view worth %g× its read price)", v, v),
		Source:      "this module",
		New:         func(e Env) Strategy { return newCtxkitAt(e, v) },
	}
}

// FrontierName is the name of ctxkit's strategy at KeepValue v.
func FrontierName(v float64) string { return fmt.Sprintf("ctxkit v=%g", v) }

// keepValueOf is the keep value strategy name runs ctxkit at: opts'
// for "ctxkit" (the engine's default when 0), v for FrontierName(v), 0
// for any other.
func keepValueOf(name string, opts Options) float64 {
	if name == "ctxkit" {
		if opts.KeepValue != 0 {
			return opts.KeepValue
		}
		return compact.DefaultKeepValue
	}
	var v float64
	if _, err := fmt.Sscanf(name, "ctxkit v=%g", &v); err == nil && FrontierName(v) == name {
		return v
	}
	return 0
}

func newCtxkitAt(e Env, keep float64) Strategy {
	s := &ctxkitStrategy{base: newBase(e)}
	clock := e.Now
	if e.Now != nil {
		clock = func() time.Time {
			if s.trip {
				return s.last
			}
			return e.Now()
		}
	}
	eng, err := engine.New(engine.Config{
		Window:         e.Window,
		Pricing:        e.Pricing,
		Counter:        e.Counter,
		MinCacheTokens: e.MinCacheTokens,
		KeepValue:      keep,
		Clock:          clock,
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
// billed for the request Step returned, and for a recall round trip's.
func (s *ctxkitStrategy) Observe(u llm.Usage) { s.reports = append(s.reports, u) }

// report gives the engine the next report on hand.
func (s *ctxkitStrategy) report() {
	if len(s.reports) > 0 {
		s.replay.Observe(s.reports[0])
		s.reports = s.reports[1:]
	}
}

func (s *ctxkitStrategy) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	var info StepInfo
	if s.err != nil {
		return nil, info, s.err
	}
	if s.recalls > 0 {
		// A recall round trip since the last request: the agent (and the
		// proxy, which sees it in the history the client resends) steps
		// the engine for the request that carried the recalled originals,
		// before the request the recording answers next.
		n := s.recalls
		s.recalls = 0
		s.trip = true
		s.report()
		r, _, err := s.step(ctx, n, &info)
		s.trip = false
		if err != nil {
			return nil, info, err
		}
		if len(r.Edits) > 0 && len(s.reports) > 0 {
			// The replay billed the round trip as the request before it
			// with the recall calls and originals added, and the engine
			// has just changed that request (a compaction, a clearing):
			// the provider's report describes a request the engine did
			// not send. An agent's provider reports the request its
			// engine prepared; here the engine goes by its own count.
			// Told the report, it took the context for what it was
			// before its own compaction and compacted again at once.
			s.reports = s.reports[1:]
		}
	}
	s.report()
	s.append(arrived)
	if s.env.Now != nil {
		s.last = s.env.Now()
	}
	r, overflow, err := s.step(ctx, len(arrived), &info)
	if err != nil {
		return nil, info, err
	}
	if r.Request == nil {
		return nil, info, fmt.Errorf("engine: no request: %w", overflow)
	}
	return r.Request, info, nil
}

// step steps the engine for a request that added n messages, adding its
// compactions to info. An overflow still sends the request (the replay
// counts it as a turn over the window, as the provider would reject it):
// it comes back as overflow beside the Ready; any other error as err.
func (s *ctxkitStrategy) step(ctx context.Context, n int, info *StepInfo) (r engine.Ready, overflow, err error) {
	r, err = s.replay.Step(ctx, s.c, n)
	var oe *compact.OverflowError
	if err != nil && !errors.As(err, &oe) {
		return engine.Ready{}, nil, fmt.Errorf("engine: %w", err)
	}
	info.Compactions += r.Compaction.Compactions
	info.SummarizerCalls += len(r.Compaction.Summaries)
	for _, sm := range r.Compaction.Summaries {
		if sm.Kind == compact.KindMerged {
			// Summaries of different rounds past their budget, merged:
			// the bench's extractive summarizer merges them by text, the
			// agent's model summarizer in a request of its own, which
			// the step's summary bill does not hold.
			info.Summarizer = info.Summarizer.Add(mergeBill(s.env, sm.Replaced, s.written(sm.ID)))
		}
	}
	return r, err, nil
}

// written is what the summary block id holds besides its header and recall
// index: what a model writes.
func (s *ctxkitStrategy) written(id string) int {
	for i := range s.c.Messages {
		for j := range s.c.Messages[i].Blocks {
			if b := &s.c.Messages[i].Blocks[j]; b.ID == id {
				return s.env.Counter.Count(compact.WithoutIndex(b.Text))
			}
		}
	}
	return 0
}
