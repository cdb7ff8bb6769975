package main

import (
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/openai"
)

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

// summaries lists the summary blocks of the final conversation in the
// report.
func summaries(rep *compactReport, final *conv.Conversation, counter conv.Counter) {
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
