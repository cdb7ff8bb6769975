package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// Strategy is a context-management policy under test. The replay feeds it
// the recording one step at a time; it keeps its own state (its earlier
// clearing and summaries persist) and says what request it would send.
type Strategy interface {
	// Step takes the recorded messages that arrived since the last step
	// (the previous assistant message and what followed it) and returns the
	// request the strategy would send before the next assistant message.
	Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error)
}

// Observer is a Strategy that takes the usage the simulated provider
// reports for the request its Step returned, as an agent's provider
// reports it: the replay calls Observe after billing each request, before
// the next Step. When the model answered that request with a recall call
// (a round trip, RecallKeeper), Observe comes twice: that request, whose
// response was the recall call, then the request the round trip sent,
// whose response is the recorded answer.
type Observer interface {
	Observe(u llm.Usage)
}

// StepInfo is what a strategy did in one step besides building a request.
type StepInfo struct {
	// Edits counts the blocks the strategy changed or dropped this step
	// (cleared, masked, truncated), besides compactions.
	Edits           int
	Compactions     int
	SummarizerCalls int
	// Summarizer is what the step's summarizer calls cost beyond the
	// replay's own bill of its compactions (ctxkit's merges of summaries
	// past their budget, a model call each in the agent); it counts in
	// the summaries' cost.
	Summarizer Bill
	// AsSent is true when the request is what went upstream, breakpoints
	// included (a proxy's, package bench/proxy): the replay bills it as it
	// is instead of anchoring it the common way.
	AsSent bool
	// Calls are the other model calls the step made before its request (a
	// proxy's summary requests), as sent: each is billed with the same
	// simulated cache, in order, as the model call it was, and stands in
	// for the replay's own estimate of what the step's compactions cost.
	Calls []Call
	// Invalid is true when the provider refused the request (a stand-in
	// upstream's validation) or a call.
	Invalid bool
	// RecallIDs maps a recall id the request names that is not a recorded
	// block's id (a proxy's own) to the recorded block it stands for, so a
	// term behind it counts as recallable.
	RecallIDs map[string]string
}

// Call is one model call a step made besides its request (a proxy's
// summary request): the request as sent and the tokens of the answer. The
// replay bills it as every summary call, its output at no less than
// SummaryOutputFloor.
type Call struct {
	Request *llm.Request
	Output  int
}

// Env is what a strategy is built with for one session.
type Env struct {
	System  []conv.Block
	Tools   []conv.Tool
	Window  int
	Counter conv.Counter
	Pricing pricing.Table
	// Family is the session's agent (its importer format: "codex",
	// "claude-code", …), "" when unknown: the proxy strategies replay a
	// session as its own client sent it.
	Family string
	// Recording and Evidence are the whole recorded session; only the
	// future-knowing strategies may look at them (it knows the future by construction).
	Recording *conv.Conversation
	Evidence  *Evidence
	// MinCacheTokens is the shortest prefix the simulated cache stores.
	MinCacheTokens int
	// Now is the replay's clock: when the request being prepared is sent,
	// as the recording says (zero when it has no timestamps). The
	// simulated cache expires entries by it, and a strategy that judges
	// the cache's lifetime (ctxkit's engine, as the agent runs it) reads
	// the same clock.
	Now func() time.Time
	// Summarize is the offline summarizer peers use in place of their LLM
	// summary, so that all strategies are compared on equal terms.
	Summarize func(ctx context.Context, msgs []conv.Message) (string, error)
	// KeepValue is the knob ctxkit's engine runs at, in the "ctxkit" row
	// and behind the "serve" row alike (Options.KeepValue; 0: the
	// engine's default).
	KeepValue float64
	// opts are the replay's options, for a strategy that bills what-ifs
	// exactly as the replay does (bound).
	opts Options
}

// Factory builds a strategy for one session.
type Factory struct {
	Name        string
	Description string
	// Source is where the strategy's rule comes from: the peer's published
	// implementation or documentation.
	Source string
	New    func(env Env) Strategy
	// Summary is how the strategy's implementation requests a summary,
	// which decides how its compactions are billed.
	Summary SummaryRequest
}

// Strategies lists every strategy the benchmark knows, in report order:
//
//   - none: sends everything (what a recorded agent without compaction did).
//   - truncate: drops the oldest exchanges after the first user message to fit
//     the window (Aider's and OpenHands' history trimming; Cline's legacy
//     truncation keeps the first pair the same way).
//   - seed-micro: this project's seed 003 micro-compaction as written.
//   - mask-10: SWE-agent's LastNObservations(n=10), polling 1, the published
//     default (SWE-agent/SWE-agent sweagent/agent/history_processors.py;
//     the Complexity Trap paper's observation masking, arXiv 2508.21433).
//   - mask-10-poll10: the same with polling=10, the option SWE-agent documents
//     for prompt caching.
//   - anthropic-clear: the Anthropic API's clear_tool_uses_20250919 with its
//     defaults (trigger 100k input tokens, keep 3, clear_at_least 0; docs
//     build-with-claude/context-editing).
//   - anthropic-clear-5k: the same with clear_at_least 5,000 input tokens, the
//     docs' example value, which exists so a clearing pays for the cache
//     rewrite it causes.
//   - claude-code: Claude Code's time-based microcompact keeping the newest 5
//     compactable results and its autocompact, which attaches the files
//     touched last again after its summary (docs how-claude-code-works.md,
//     context-window.md; constants from the source published in March 2026).
//   - codex: Codex CLI's local compaction (openai/codex codex-rs/core/src/compact.rs).
//   - gemini: Gemini CLI's chat compression and tool-output masking
//     (google-gemini/gemini-cli packages/core/src/context/
//     chatCompressionService.ts, toolOutputMaskingService.ts).
//   - ctxkit: ctxkit's default engine.
//   - reference: a future-knowing reference that clears a result once no later
//     turn needs what only it holds, in cache-aware batches (formerly "oracle").
//   - bound: the future-knowing lower bound (see [Bound]).
func Strategies() []Factory {
	fs := []Factory{
		{"none", "send everything", "—", func(e Env) Strategy { return &none{base: newBase(e)} }, 0},
		{"truncate", "drop the oldest exchanges after the first user message to fit the window", "Aider/OpenHands history trimming", func(e Env) Strategy { return &truncate{base: newBase(e)} }, 0},
		{"seed-micro", "seed 003: eager micro-compaction (keep 3, skip ≤100 chars, preserve reads) + summary of everything past 25% of the window", "ctxkit seed 003", func(e Env) Strategy { return &seedMicro{base: newBase(e)} }, 0},
		{"mask-10", "SWE-agent LastNObservations n=10 (polling 1): older observations become a line count", "SWE-agent sweagent/agent/history_processors.py", func(e Env) Strategy { return &mask{base: newBase(e), keep: 10, polling: 1} }, 0},
		{"mask-10-poll10", "SWE-agent LastNObservations n=10, polling=10 (its documented caching option)", "SWE-agent sweagent/agent/history_processors.py", func(e Env) Strategy { return &mask{base: newBase(e), keep: 10, polling: 10} }, 0},
		{"anthropic-clear", "API clear_tool_uses defaults: above 100k input tokens (or half a smaller window) keep the last 3 tool results", "Anthropic docs, context editing", func(e Env) Strategy { return &anthropicClear{base: newBase(e), keep: 3} }, 0},
		{"anthropic-clear-5k", "clear_tool_uses with clear_at_least 5,000 input tokens (the docs' example)", "Anthropic docs, context editing", func(e Env) Strategy { return &anthropicClear{base: newBase(e), keep: 3, atLeast: 5000} }, 0},
		{"claude-code", "Claude Code: microcompact after a 60-minute pause keeping 5 results; autocompact near the window with a 9-section summary, then the 5 files touched last attached again (≤5k tokens each)", "Claude Code docs; microCompact.ts/autoCompact.ts/compact.ts (2026-03)", func(e Env) Strategy { return &claudeCode{base: newBase(e)} }, 0},
		{"codex", "Codex CLI: tool outputs cut to 12k tokens as they enter its history; at 90% of the window, user messages verbatim (≤20k tokens) + summary; assistant turns and tool output dropped", "openai/codex codex-rs/core/src/compact.rs, context_manager/history.rs", func(e Env) Strategy { return &codex{base: newBase(e)} }, 0},
		{"gemini", "Gemini CLI: at 50% of the window, summary of the oldest 70%, newest 30% verbatim; tool outputs past the newest 50k tokens masked to a preview once they come to 30k", "gemini-cli chatCompressionService.ts, toolOutputMaskingService.ts", func(e Env) Strategy { return &gemini{base: newBase(e)} }, 0},
		{"ctxkit", "ctxkit's default: rung-1 compression, cache-aware clearing with recall, compaction with extractive summaries", "this module", newCtxkit, 0},
		{"reference", "future-knowing reference: clears a result once no later turn needs what only it holds, in cache-aware batches", "—", newReference, 0},
		{"bound", "future-knowing lower bound: each result whole for its turn, then only the terms later turns use, at the cheapest batch times found by search", "—", newBound, 0},
	}
	// Seed 003 and Gemini CLI send the span to a summarizer request of its
	// own; the others extend the cached conversation.
	for i := range fs {
		switch fs[i].Name {
		case "seed-micro":
			fs[i].Summary = SummarySeparate
		case "gemini":
			fs[i].Summary = SummarySeparateChecked
		}
	}
	return fs
}

// Lookup returns the factories named in names (comma-separated), or an
// error naming the unknown one and the known ones.
func Lookup(names string) ([]Factory, error) {
	return LookupIn(names, Strategies())
}

// LookupIn is Lookup among all (Strategies and the strategies a caller
// adds, such as package bench/proxy's).
func LookupIn(names string, all []Factory) ([]Factory, error) {
	if names == "" || names == "all" {
		return all, nil
	}
	var out []Factory
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(all, func(f Factory) bool { return f.Name == n })
		if i < 0 {
			known := make([]string, len(all))
			for j, f := range all {
				known[j] = f.Name
			}
			return nil, fmt.Errorf("bench: unknown strategy %q (known: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// base holds a strategy's own copy of the conversation.
type base struct {
	env Env
	c   *conv.Conversation
	// recalls counts the messages recall round trips added to c since the
	// last Step (recalled).
	recalls int
}

// RecallKeeper is a strategy whose state keeps what a recall round trip
// added: the model's calls of the recall tool and the originals they
// returned, between the request and the recorded answer to it, as an
// agent's history does. Recalled returns the ids it gave the results,
// each mapped to the original it holds (result i holds ids[i]).
type RecallKeeper interface {
	Recalled(msgs []conv.Message, ids []string) map[string]string
}

// Recalled adds the calls and results of a recall round trip to the
// state, with block ids of its own, in the turn of the request they
// answer.
func (b *base) Recalled(msgs []conv.Message, ids []string) map[string]string {
	turn := 0
	if n := len(b.c.Messages); n > 0 {
		turn = b.c.Messages[n-1].Turn
	}
	out := make(map[string]string, len(ids))
	for _, m := range msgs {
		m.Blocks = conv.CloneBlocks(m.Blocks)
		for i := range m.Blocks {
			m.Blocks[i].ID = ""
		}
		b.c.Stamp(m.Blocks)
		for i := range m.Blocks {
			if m.Blocks[i].Type == conv.TypeToolResult && i < len(ids) {
				out[m.Blocks[i].ID] = ids[i]
			}
		}
		m.Turn = turn
		b.c.Messages = append(b.c.Messages, m)
		b.recalls++
	}
	return out
}

func newBase(e Env) base {
	c := &conv.Conversation{System: conv.CloneBlocks(e.System), Tools: e.Tools}
	if e.Recording != nil {
		c.Seq = e.Recording.Seq
	}
	return base{env: e, c: c}
}

// append adds the arrived messages as the strategy's own copies, keeping
// their recorded ids and turns; the id sequence moves past them, so a
// summary made later never reuses a recorded id.
func (b *base) append(arrived []conv.Message) {
	for _, m := range arrived {
		m.Blocks = conv.CloneBlocks(m.Blocks)
		b.c.Stamp(m.Blocks)
		b.c.Messages = append(b.c.Messages, m)
	}
}

func (b *base) tokens() int { return b.c.Tokens(b.env.Counter).Total() }

// request builds the request the peers send: the whole state, without
// breakpoints (the replay's anchorer places them the same way for every
// strategy), on a copy of the message list so later edits of the state
// never change a request already built.
func (b *base) request() *llm.Request {
	return &llm.Request{Tools: b.c.Tools, System: b.c.System, Messages: slices.Clone(b.c.Messages)}
}

// anchored is c as a request with the cache breakpoints most agents place
// (end of the system prompt and tools, the last block of the newest
// message and of the message before the newest user message), on copies
// so the state is never marked.
func anchored(c *conv.Conversation) *llm.Request {
	req := &llm.Request{Tools: c.Tools, System: c.System, Messages: slices.Clone(c.Messages)}
	eph := []byte(`{"type":"ephemeral"}`)
	if n := len(req.System); n > 0 {
		req.System = slices.Clone(req.System)
		req.System[n-1].CacheControl = eph
	} else if n := len(req.Tools); n > 0 {
		req.Tools = slices.Clone(req.Tools)
		req.Tools[n-1].CacheControl = eph
	}
	mark := func(i int) {
		m := req.Messages[i]
		m.Blocks = slices.Clone(m.Blocks)
		for j := len(m.Blocks) - 1; j >= 0; j-- {
			if t := m.Blocks[j].Type; t != conv.TypeThinking && t != conv.TypeRedactedThinking {
				m.Blocks[j].CacheControl = eph
				break
			}
		}
		req.Messages[i] = m
	}
	n := len(req.Messages)
	if n > 0 {
		mark(n - 1)
	}
	if n > 2 {
		mark(n - 3)
	}
	return req
}

// summaryMessage is a user message holding a summary of turns first..last.
func summaryMessage(text string, first, last int) conv.Message {
	return conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewSummary(text, conv.Span{First: first, Last: last})}}
}

// placeholder moves a tool result to rung 2 with text.
func placeholder(b *conv.Block, text string) {
	b.SetText(text, conv.RungPlaceholder)
}
