package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/openai"
	"github.com/ctxkit/ctxkit/summarize"
)

// summaryLayer is rung 3: compaction into structured summaries, run before
// every request like a live agent's compactor.
type summaryLayer struct {
	c *compact.Compactor
	// What the replay's compactions did, for the report.
	compactions int
	fallbacks   []compact.Fallback
	stops       []string
	lastStop    error
	usage       llm.Usage
}

func (l *summaryLayer) Name() string { return "summary" }

func (l *summaryLayer) Step(ctx context.Context, c *conv.Conversation, st store) (layerResult, error) {
	before := len(c.Messages)
	r, err := l.c.Before(ctx, c, st)
	l.compactions += r.Compactions
	l.fallbacks = append(l.fallbacks, r.Fallbacks...)
	l.usage = l.usage.Add(r.Usage)
	out := layerResult{Edits: r.Edits, Summarized: before - len(c.Messages), Freed: max(r.TokensBefore-r.TokensAfter, 0)}
	var stopped *compact.StoppedError
	if errors.Is(err, compact.ErrOverflow) || errors.As(err, &stopped) {
		// A live agent would tell the user and stop; the replay notes it
		// (once per run of the same stop) and goes on, so the report
		// shows how far the session got.
		kind := compact.ErrOverflow
		if stopped != nil {
			kind = stopped.Reason
		}
		if kind != l.lastStop {
			l.stops = append(l.stops, fmt.Sprintf("before message %d: %v", before, err))
		}
		l.lastStop = kind
		return out, nil
	}
	l.lastStop = nil
	return out, err
}

// newSummaryLayer builds the summary layer from the flags; model is the
// recording's model, whose window is the default.
func newSummaryLayer(o compactOptions, counter conv.Counter, model string) (*summaryLayer, error) {
	mode, err := compact.ParseMode(o.mode)
	if err != nil {
		return nil, err
	}
	info := llm.LookupModel(model)
	if model == "" {
		info = llm.ModelInfo{Window: 200_000, MaxOutput: 8_192}
	}
	cfg := compact.Config{Window: info.Window, MaxOutput: info.MaxOutput, Mode: mode, Counter: counter}
	if o.window > 0 {
		cfg.Window = o.window
	}
	var s summarize.Summarizer
	switch o.summarizer {
	case "", "extractive":
	case "llm":
		p, err := summaryProvider(o)
		if err != nil {
			return nil, err
		}
		s = summarize.NewLLM(p, o.summaryModel, summarize.LLMOptions{})
	default:
		return nil, fmt.Errorf("unknown summarizer %q (extractive or llm)", o.summarizer)
	}
	return &summaryLayer{c: compact.New(s, cfg)}, nil
}

func summaryProvider(o compactOptions) (llm.Provider, error) {
	switch o.provider {
	case "", "anthropic":
		var opts []anthropic.Option
		if o.baseURL != "" {
			opts = append(opts, anthropic.WithBaseURL(o.baseURL))
		}
		return anthropic.New(o.summaryModel, opts...)
	case "openai":
		var opts []openai.Option
		if o.baseURL != "" {
			opts = append(opts, openai.WithBaseURL(o.baseURL))
		}
		return openai.New(o.summaryModel, opts...)
	}
	return nil, fmt.Errorf("unknown provider %q (anthropic or openai)", o.provider)
}

// report fills the rung-3 part of the report from the layer and the final
// conversation.
func (l *summaryLayer) report(rep *compactReport, final *conv.Conversation, counter conv.Counter) {
	b := l.c.Budget()
	rep.Window = b.Window
	rep.Mode = string(l.c.Config().Mode)
	rep.Summarizer = l.c.SummarizerName()
	rep.Compactions = l.compactions
	rep.Fallbacks = append(rep.Fallbacks, l.fallbacks...)
	rep.Stopped = append(rep.Stopped, l.stops...)
	rep.SummaryUsage = l.usage
	for _, m := range final.Messages {
		for i := range m.Blocks {
			blk := &m.Blocks[i]
			if blk.Type != conv.TypeSummary {
				continue
			}
			s := compactSummary{ID: blk.ID, Tokens: conv.BlockTokens(blk, counter), Merged: blk.Merged}
			if blk.Span != nil {
				s.Turns = *blk.Span
			}
			rep.Summaries = append(rep.Summaries, s)
		}
	}
}

// compactSummary is one summary block of the result.
type compactSummary struct {
	ID     string    `json:"id"`
	Turns  conv.Span `json:"turns"`
	Tokens int       `json:"tokens"`
	Merged bool      `json:"merged,omitempty"`
}
