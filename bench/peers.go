package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// none sends everything.
type none struct{ base }

func (s *none) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	return s.request(), StepInfo{}, nil
}

// truncate is what real truncation does (Aider's and OpenHands' history
// trimming, Codex's trim before compaction, Cline's legacy path): while the
// request is over the window it drops the oldest exchange after the first
// user message — an assistant message with the user message that answers
// it — so the task statement stays, every tool result keeps its call and
// roles still alternate. It stops when only the first user message and
// the newest exchange are left.
type truncate struct{ base }

func (s *truncate) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	var info StepInfo
	for s.tokens() > s.env.Window && len(s.c.Messages) >= 5 {
		// messages: user, assistant, user, …, user; drop messages 1 and 2.
		s.c.Messages = append(s.c.Messages[:1], s.c.Messages[3:]...)
		info.Edits++
	}
	return s.request(), info, nil
}

// toolResults returns pointers to the tool results of c, oldest first;
// with keep, only those of the tools it accepts.
func toolResults(c *conv.Conversation, keep func(tool string) bool) []*conv.Block {
	var out []*conv.Block
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			if b := &c.Messages[i].Blocks[j]; b.Type == conv.TypeToolResult && (keep == nil || keep(b.Name)) {
				out = append(out, b)
			}
		}
	}
	return out
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

// mask is SWE-agent's LastNObservations history processor
// (SWE-agent/SWE-agent sweagent/agent/history_processors.py): the
// instance template counts as the first observation and is never masked;
// of the N observations so far, those before index
// (N/polling)·polling − n are replaced by "Old environment output: (K
// lines omitted)", short or long. With polling 1 (the default) the masked
// set grows every step; with polling p it grows every p steps, keeping
// between n and n+p observations — the option SWE-agent documents for
// prompt caching.
type mask struct {
	base
	keep, polling int
}

func (s *mask) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	results := toolResults(s.c, nil)
	obs := 1 + len(results) // the instance template is observation 0
	last := max(0, obs/s.polling*s.polling-s.keep)
	var info StepInfo
	for k := 1; k < last; k++ {
		b := results[k-1]
		if b.Meta.Rung < conv.RungPlaceholder {
			n := strings.Count(b.ResultText(), "\n") + 1
			placeholder(b, fmt.Sprintf("Old environment output: (%d lines omitted)", n))
			info.Edits++
		}
	}
	return s.request(), info, nil
}

// anthropicClear models the API's context editing strategy
// clear_tool_uses_20250919 (Anthropic docs, build-with-claude/context-editing):
// once the full prompt passes the trigger (100,000 input tokens by
// default; half the window when the window is smaller than 200,000), the
// tool results older than the newest keep (3) are cleared. clear_at_least
// (0 by default) skips a clearing that would free fewer input tokens,
// which the docs offer because each clearing invalidates the cached
// prefix: with it the cleared set grows in batches.
type anthropicClear struct {
	base
	keep, atLeast int
	full          int // tokens of the history as the client holds it, uncleared
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
	var info StepInfo
	sys := s.c.Tokens(s.env.Counter)
	if s.full+sys.System+sys.Tools <= trigger {
		return s.request(), info, nil
	}
	results := toolResults(s.c, nil)
	if len(results) <= s.keep {
		return s.request(), info, nil
	}
	var clear []*conv.Block
	freed := 0
	for _, b := range results[:len(results)-s.keep] {
		if b.Meta.Rung < conv.RungPlaceholder {
			clear = append(clear, b)
			freed += conv.BlockTokens(b, s.env.Counter)
		}
	}
	if len(clear) == 0 || freed < s.atLeast {
		return s.request(), info, nil
	}
	for _, b := range clear {
		placeholder(b, "[cleared]")
	}
	info.Edits = len(clear)
	return s.request(), info, nil
}

// claudeCode models Claude Code's own context management (Anthropic's
// docs how-claude-code-works.md and context-window.md; constants from the
// source published in March 2026, src/services/compact/microCompact.ts
// and autoCompact.ts): time-based microcompact — when more than 60
// minutes passed since the last assistant message (the 1-hour cache is
// cold anyway), every compactable tool result (Read, Bash, Grep, Glob,
// WebSearch, WebFetch, Edit, Write) but the newest 5 becomes "[Old tool
// result content cleared]" — and autocompact at the effective window
// (window − the summary output reserve: 20,000, or a quarter of a window
// under 80,000) less 13,000 tokens, which
// replaces the history by a 9-section summary written by a request that
// extends the cached conversation, then attaches again the files read or
// written most recently (see restoreFiles). Without timestamps microcompact
// never fires, as in a session without pauses.
type claudeCode struct {
	base
	lastAssistant time.Time
	files         recentFiles
}

// compactableTool reports whether Claude Code's microcompact clears the
// results of tool name.
func compactableTool(name string) bool {
	switch strings.ToLower(name) {
	case "read", "bash", "grep", "glob", "websearch", "webfetch", "edit", "write":
		return true
	}
	return false
}

func (s *claudeCode) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	var info StepInfo
	now := newestTime(arrived)
	if !now.IsZero() && !s.lastAssistant.IsZero() && now.Sub(s.lastAssistant) > 60*time.Minute {
		results := toolResults(s.c, compactableTool)
		for k := 0; k < len(results)-5; k++ {
			if b := results[k]; b.Meta.Rung < conv.RungPlaceholder {
				placeholder(b, "[Old tool result content cleared]")
				info.Edits++
			}
		}
	}
	for _, m := range arrived {
		if m.Role == conv.RoleAssistant {
			if t := newestTime([]conv.Message{m}); !t.IsZero() {
				s.lastAssistant = t
			}
		}
	}
	s.append(arrived)
	s.files.see(arrived)
	trigger := s.env.Window - min(20_000, s.env.Window/4) - 13_000
	if s.tokens() < trigger || len(s.c.Messages) < 3 {
		return s.request(), info, nil
	}
	text, err := s.env.Summarize(ctx, s.c.Messages)
	if err != nil {
		return nil, info, err
	}
	first, last := s.c.Messages[0].Turn, s.c.LastTurn()
	msg := summaryMessage("This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n"+text, first, last)
	msg.Blocks = append(msg.Blocks, s.files.restore(s.env.Counter)...)
	s.c.Stamp(msg.Blocks)
	s.c.Messages = []conv.Message{msg}
	info.Compactions, info.SummarizerCalls = 1, 1
	return s.request(), info, nil
}

// newestTime is the latest block timestamp in msgs, zero when none has one.
func newestTime(msgs []conv.Message) time.Time {
	var t time.Time
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Meta.CreatedAt.After(t) {
				t = b.Meta.CreatedAt
			}
		}
	}
	return t
}

// codex models Codex CLI's local compaction: at 90% of the window the
// history becomes the user's own messages, newest first up to 20,000
// tokens, plus a summary; assistant turns and tool output are dropped.
// Before that, each tool output enters its history cut to the model's
// truncation policy (see codexOutputTokens).
type codex struct{ base }

// codexOutputTokens: Codex CLI records a tool output into its history cut
// to the model's truncation policy, 10,000 tokens for its own models, with
// a fifth more for serialization: the beginning and the end, about 4 bytes
// a token, the middle replaced by a note of how much was cut (codex-rs
// core context_manager/history.rs process_item, truncate.rs).
const codexOutputTokens = 12_000

func (s *codex) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	var info StepInfo
	for i := len(s.c.Messages) - len(arrived); i < len(s.c.Messages); i++ {
		for j := range s.c.Messages[i].Blocks {
			b := &s.c.Messages[i].Blocks[j]
			if b.Type != conv.TypeToolResult || slices.ContainsFunc(b.Content, func(c conv.Block) bool { return c.Type == conv.TypeImage }) {
				continue // (an image's text stays whole with it)
			}
			text := b.ResultText()
			if n := s.env.Counter.Count(text); n > codexOutputTokens {
				b.SetText(cutMiddle(text, codexOutputTokens*4/2, fmt.Sprintf("\n…%d tokens truncated…\n", n-codexOutputTokens)), conv.RungCompressed)
				info.Edits++
			}
		}
	}
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
// split before an assistant message so no tool call loses its result;
// then its tool-output masking (masker).
type gemini struct {
	base
	masker
}

func (s *gemini) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	req, info, err := s.compress(ctx)
	if err != nil {
		return nil, info, err
	}
	pending := 0
	for i := len(s.c.Messages) - 1; i >= 0 && s.c.Messages[i].Role != conv.RoleAssistant; i-- {
		pending++
	}
	if n := s.mask(s.c, s.env.Counter, pending); n > 0 {
		info.Edits += n
		req = s.request()
	}
	info.RecallIDs = s.ids
	return req, info, nil
}

func (s *gemini) compress(ctx context.Context) (*llm.Request, StepInfo, error) {
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
