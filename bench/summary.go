package bench

import (
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// SummaryRequest says how a strategy's implementation asks its model for
// a summary, which decides how the summary call is billed.
type SummaryRequest int

const (
	// SummaryExtends: the summary request is the cached conversation with
	// the summary instruction appended as a final user message (Claude
	// Code, Codex since compaction moved onto the normal endpoint, ctxkit),
	// so it reads the prefix the last request wrote.
	SummaryExtends SummaryRequest = iota
	// SummarySeparate: a request of its own (its own system prompt, the
	// span to summarize), which shares no cached prefix: its input is
	// written fresh.
	SummarySeparate
	// SummarySeparateChecked: SummarySeparate followed by a second call
	// that extends the first with the summary and asks the model to check
	// and rewrite it (Gemini CLI's "probe" self-verification, PR #15710).
	SummarySeparateChecked
)

// Summary billing constants. The output floor is what a structured LLM
// summary of a span is at least: Claude Code's template asks for 9
// sections (request and intent, concepts, files with full snippets,
// errors and fixes, problem solving, every user message, pending tasks,
// current work, next step with verbatim quotes), Gemini CLI's
// <state_snapshot> for 7, Codex's handoff summary for 5 items with "any
// critical data"; Claude Code reserves 20,000 output tokens for it (its
// p99.99 was 17,387). 2,000 tokens — about 220 per section of the
// 9-section template — is the low end of that; a summary the extractive
// summarizer writes longer is billed at its own length.
const (
	SummaryOutputFloor = 2000
	// summaryPromptTokens approximates the summary instruction sent with
	// the conversation (Claude Code's 9-section prompt with its analysis
	// and no-tools guard is about this long; Codex's is shorter, Gemini's
	// about the same).
	summaryPromptTokens = 1000
	// recallOutputTokens is the output of a turn that only calls the
	// recall tool.
	recallOutputTokens = 30
)

// summaryPrompt is a stand-in instruction of about summaryPromptTokens.
var summaryPrompt = strings.Repeat("Summarize the conversation so far for the agent that continues it: the request, decisions, files, errors and fixes, pending work. ", summaryPromptTokens/25)

// mergeBill prices a merge of summaries as a model summarizer makes it: a
// request of its own — the system prompt, the instruction and the parts
// (parts tokens in all) — against an empty cache, as SummarySeparate's
// call is, its output at no less than SummaryOutputFloor.
func mergeBill(e Env, parts, output int) Bill {
	segs := []Segment{{Tokens: summaryPromptTokens, Prefix: 1}, {Tokens: summaryPromptTokens + parts, Prefix: 2, Anchor: true}}
	return NewCache(e.Pricing, e.MinCacheTokens).Bill(segs, max(output, SummaryOutputFloor))
}

// summaryBills prices the summary calls of one compaction step. pre is the
// conversation as it stood before the compaction (the previous request
// plus what arrived since), summarized the messages the compaction
// replaced, and output the summary's tokens (floored). Extending requests
// bill against the replay's cache; separate ones against an empty cache.
func (r *replayer) summaryBills(kind SummaryRequest, pre *llm.Request, summarized []conv.Message, output int) Bill {
	output = max(output, SummaryOutputFloor)
	instr := conv.NewText(conv.SourceUser, summaryPrompt)
	switch kind {
	case SummaryExtends:
		req := &llm.Request{System: pre.System, Tools: pre.Tools, Messages: withInstruction(pre.Messages, instr)}
		return r.cache.BillAt(Segments(anchoredRequest(req), r.opts.Counter), output, r.now)
	default:
		fresh := NewCache(r.opts.Pricing, r.opts.MinCacheTokens)
		sys := []conv.Block{conv.NewText(conv.SourceSystem, summaryPrompt)}
		req := &llm.Request{System: sys, Messages: withInstruction(summarized, instr)}
		b := fresh.Bill(Segments(anchoredRequest(req), r.opts.Counter), output)
		if kind == SummarySeparateChecked {
			out := conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, strings.Repeat("snapshot ", output))}}
			check := conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{instr}}
			req.Messages = append(slices.Clone(req.Messages), out, check)
			b = b.Add(fresh.Bill(Segments(anchoredRequest(req), r.opts.Counter), output))
		}
		return b
	}
}

// withInstruction returns msgs with instr appended to the final user
// message, or as a new user message after a final assistant message.
func withInstruction(msgs []conv.Message, instr conv.Block) []conv.Message {
	out := slices.Clone(msgs)
	if n := len(out); n > 0 && out[n-1].Role == conv.RoleUser {
		out[n-1].Blocks = append(slices.Clone(out[n-1].Blocks), instr)
		return out
	}
	return append(out, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{instr}})
}

// newSummaries returns the summary blocks of req that prev did not have,
// and the messages of the state before (pre) whose blocks req no longer
// has: what the compaction summarized.
func newSummaries(prev map[string]bool, req *llm.Request) []*conv.Block {
	var out []*conv.Block
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			b := &req.Messages[i].Blocks[j]
			if b.Type == conv.TypeSummary && !prev[b.ID] {
				out = append(out, b)
			}
		}
	}
	return out
}

// replaced returns the messages of pre with at least one block req no
// longer holds unchanged: the span a compaction summarized.
func replaced(pre []conv.Message, req *llm.Request) []conv.Message {
	kept := make(map[string]bool)
	for i := range req.Messages {
		for _, b := range req.Messages[i].Blocks {
			kept[b.ID] = true
		}
	}
	var out []conv.Message
	for _, m := range pre {
		if slices.ContainsFunc(m.Blocks, func(b conv.Block) bool { return !kept[b.ID] }) {
			out = append(out, m)
		}
	}
	return out
}
