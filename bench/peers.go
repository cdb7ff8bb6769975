package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// none sends everything.
type none struct{ base }

func (s *none) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	return s.request(), StepInfo{}, nil
}

// truncate drops the oldest whole rounds until the request fits the window.
// When only the current round is left (a single-task agent session is one
// long round), it drops that round's oldest steps — an assistant message
// with the results that answer it — after the opening user message.
type truncate struct{ base }

func (s *truncate) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	for s.tokens() > s.env.Window {
		if rs := s.c.Rounds(); len(rs) > 1 {
			s.c.Messages = s.c.Messages[rs[1].Start:]
			continue
		}
		// messages: user, assistant, user, …, user; drop messages 1 and 2
		// (an assistant step and its results), keeping alternation.
		if len(s.c.Messages) < 5 {
			break
		}
		s.c.Messages = append(s.c.Messages[:1], s.c.Messages[3:]...)
	}
	return s.request(), StepInfo{}, nil
}

// consumedResults returns pointers to the tool results an assistant
// message already followed, oldest first.
func consumedResults(c *conv.Conversation) []*conv.Block {
	last := -1
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == conv.RoleAssistant {
			last = i
			break
		}
	}
	var out []*conv.Block
	for i := 0; i < last; i++ {
		for j := range c.Messages[i].Blocks {
			if b := &c.Messages[i].Blocks[j]; b.Type == conv.TypeToolResult {
				out = append(out, b)
			}
		}
	}
	return out
}

// isReadTool reports whether a tool reads files (seed 003's preserve list).
func isReadTool(name string) bool {
	switch strings.ToLower(name) {
	case "read", "read_file", "view", "cat":
		return true
	}
	return false
}

// seedMicro is seed 003 as written: every turn, consumed tool results
// older than the newest 3 and longer than 100 characters become
// "[Previous: used X]" unless they come from a read tool; past a threshold
// (50,000 of a 200,000 window, scaled to the window) a summary replaces the
// whole conversation.
type seedMicro struct{ base }

func (s *seedMicro) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	res := consumedResults(s.c)
	if len(res) > 3 {
		for _, b := range res[:len(res)-3] {
			if b.Meta.Rung >= conv.RungPlaceholder || len(b.ResultText()) <= 100 || isReadTool(b.Name) {
				continue
			}
			placeholder(b, "[Previous: used "+b.Name+"]")
		}
	}
	var info StepInfo
	if s.tokens() > s.env.Window/4 && len(s.c.Messages) >= 3 {
		text, err := s.env.Summarize(ctx, s.c.Messages)
		if err != nil {
			return nil, info, err
		}
		first, last := s.c.Messages[0].Turn, s.c.LastTurn()
		s.c.Messages = []conv.Message{summaryMessage("[Conversation compressed.]\n\n"+text, first, last)}
		info.Compactions, info.SummarizerCalls = 1, 1
	}
	return s.request(), info, nil
}

// mask is observation masking: tool results older than the last keep
// assistant turns are replaced by a line saying how much was omitted.
type mask struct {
	base
	keep int
}

func (s *mask) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	seen := 0
	for i := len(s.c.Messages) - 1; i >= 0; i-- {
		m := &s.c.Messages[i]
		if m.Role == conv.RoleAssistant {
			seen++
			continue
		}
		if seen < s.keep {
			continue
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Type == conv.TypeToolResult && b.Meta.Rung < conv.RungPlaceholder {
				n := strings.Count(b.ResultText(), "\n") + 1
				placeholder(b, fmt.Sprintf("Old environment output: (%d lines omitted)", n))
			}
		}
	}
	return s.request(), StepInfo{}, nil
}

// anthropicClear models the API's clear_tool_uses_20250919 with its
// defaults: once the full prompt passes the trigger (100,000 input tokens,
// or half the window when the window is smaller than 200,000), every tool
// result but the newest 3 is cleared server-side on each request.
type anthropicClear struct {
	base
	full int // tokens of the history as the client holds it, uncleared
}

func (s *anthropicClear) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	for i := range arrived {
		m := arrived[i]
		s.full += conv.MessageTokens(&m, s.env.Counter)
	}
	s.append(arrived)
	trigger := 100_000
	if s.env.Window < 200_000 {
		trigger = s.env.Window / 2
	}
	sys := s.c.Tokens(s.env.Counter)
	if s.full+sys.System+sys.Tools > trigger {
		var results []*conv.Block
		for i := range s.c.Messages {
			for j := range s.c.Messages[i].Blocks {
				if b := &s.c.Messages[i].Blocks[j]; b.Type == conv.TypeToolResult {
					results = append(results, b)
				}
			}
		}
		if len(results) > 3 {
			for _, b := range results[:len(results)-3] {
				if b.Meta.Rung < conv.RungPlaceholder {
					placeholder(b, "[cleared]")
				}
			}
		}
	}
	return s.request(), StepInfo{}, nil
}

// codex models Codex CLI's local compaction: at 90% of the window the
// history becomes the user's own messages, newest first up to 20,000
// tokens, plus a summary; assistant turns and tool output are dropped.
type codex struct{ base }

func (s *codex) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	var info StepInfo
	if s.tokens() < s.env.Window*9/10 || len(s.c.Messages) < 3 {
		return s.request(), info, nil
	}
	text, err := s.env.Summarize(ctx, s.c.Messages)
	if err != nil {
		return nil, info, err
	}
	var kept []conv.Block
	budget := 20_000
	for i := len(s.c.Messages) - 1; i >= 0 && budget > 0; i-- {
		m := &s.c.Messages[i]
		for j := len(m.Blocks) - 1; j >= 0; j-- {
			b := m.Blocks[j]
			if b.Type != conv.TypeText || b.Meta.Source != conv.SourceUser {
				continue
			}
			n := conv.BlockTokens(&b, s.env.Counter)
			if n > budget {
				break
			}
			budget -= n
			kept = append([]conv.Block{b.Clone()}, kept...)
		}
	}
	first, last := s.c.Messages[0].Turn, s.c.LastTurn()
	msg := summaryMessage("Another language model started to solve this problem and produced a summary of its work:\n\n"+text, first, last)
	msg.Blocks = append(kept, msg.Blocks...)
	s.c.Stamp(msg.Blocks)
	s.c.Messages = []conv.Message{msg}
	info.Compactions, info.SummarizerCalls = 1, 1
	return s.request(), info, nil
}

// gemini models Gemini CLI's chat compression: at 50% of the window the
// oldest part is summarized and the newest 30% (by tokens) kept verbatim,
// split before an assistant message so no tool call loses its result.
type gemini struct{ base }

func (s *gemini) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	var info StepInfo
	total := s.tokens()
	if total < s.env.Window/2 {
		return s.request(), info, nil
	}
	keep, split := 0, -1
	for i := len(s.c.Messages) - 1; i > 0; i-- {
		keep += conv.MessageTokens(&s.c.Messages[i], s.env.Counter)
		if keep > total*3/10 {
			break
		}
		if s.c.Messages[i].Role == conv.RoleAssistant {
			split = i
		}
	}
	if split <= 0 {
		return s.request(), info, nil // no safe split: Gemini skips compression
	}
	text, err := s.env.Summarize(ctx, s.c.Messages[:split])
	if err != nil {
		return nil, info, err
	}
	first, last := s.c.Messages[0].Turn, s.c.Messages[split-1].Turn
	msg := summaryMessage(text, first, last)
	s.c.Stamp(msg.Blocks)
	s.c.Messages = append([]conv.Message{msg}, s.c.Messages[split:]...)
	info.Compactions, info.SummarizerCalls = 1, 1
	return s.request(), info, nil
}
