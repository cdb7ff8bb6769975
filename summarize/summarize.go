package summarize

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Summarizer turns a span of conversation into a structured summary.
type Summarizer interface {
	Summarize(ctx context.Context, in Input) (Output, error)
}

// Merger is implemented by summarizers that can fold several summaries into
// one (hierarchical merge, seed 002 §27.6). Summarizers that are not
// Mergers are merged with [MergeText].
type Merger interface {
	Merge(ctx context.Context, parts []Part, in MergeInput) (Output, error)
}

// Input is what a summarizer is asked to summarize.
type Input struct {
	// Messages are the messages to summarize: the region the compactor is
	// about to replace. Tool calls and their results come in pairs.
	Messages []conv.Message
	// Span is the range of turns the messages cover.
	Span conv.Span
	// Earlier are summaries the new one replaces too: an earlier summary
	// of the same round, which a round cut twice leaves in the region's
	// place (oldest first, without their headers and recall indexes). A
	// summarizer that folds them into its summary says so (Output.Folded);
	// otherwise the caller merges them with it.
	Earlier []Part

	// Prefix, when set, is the whole request the agent would send now
	// (system, tools, every message, with its cache anchors). A summarizer
	// that reuses the prompt cache sends it unchanged and appends its
	// instruction to the final user message, so the bulk is a cache read.
	Prefix *llm.Request
	// KeepFrom is the start of the first message kept after the region, so
	// that a summarizer working on Prefix can say where the region ends.
	// Empty when the region runs to the end of the prefix.
	KeepFrom string

	// Template picks the summary's sections; the zero value is Coding.
	Template Template
	// Focus is an extra instruction from "/compact <focus>" or the compact
	// tool's focus argument: what to preserve in more detail.
	Focus string
	// TargetTokens is the size to aim at (see Target).
	TargetTokens int
	// Counter measures text against the budget; nil uses a conservative
	// four-characters-per-token rule.
	Counter conv.Counter
}

// Output is a summary and what it cost.
type Output struct {
	// Text is the summary itself, without any scratchpad.
	Text string
	// Kind is "llm" or "extractive"; Template the template that shaped it.
	Kind     string
	Template Template
	// Model is the model that wrote it (LLM summaries only); CacheReuse
	// reports that the request reused the agent's prompt prefix.
	Model      string
	CacheReuse bool
	Usage      llm.Usage
	// Notes says what the summarizer had to do to succeed, e.g. that it
	// dropped the oldest rounds of its input after a prompt-too-long.
	Notes []string
	// Folded reports that Text covers Input.Earlier too: the caller puts
	// it in their place as it is, with no merge.
	Folded bool
}

// Part is one summary to merge: its text and the turns it covers.
type Part struct {
	Text string
	Span conv.Span
}

// MergeInput configures a merge.
type MergeInput struct {
	TargetTokens int
	Template     Template
	Counter      conv.Counter
}

// Errors a summarizer returns (wrapped); the compactor falls back on any
// error, these tell it why.
var (
	// ErrEmpty: the summarizer produced no summary text.
	ErrEmpty = errors.New("summarize: empty summary")
	// ErrToolCall: the model answered the summary request with a tool call
	// and no text.
	ErrToolCall = errors.New("summarize: model called a tool instead of writing a summary")
	// ErrNothing: the input holds nothing to summarize.
	ErrNothing = errors.New("summarize: nothing to summarize")
)

// Template names a summary template.
type Template string

const (
	// Coding is the default: task, verbatim requirements, execution
	// frontier, decisions, artifact trail, errors and fixes, current work.
	Coding Template = "coding"
	// General is for conversations that are not about code.
	General Template = "general"
	// Research is for investigations: question, findings, ruled-out paths,
	// open questions.
	Research Template = "research"
)

// Templates lists the known templates.
func Templates() []Template { return []Template{Coding, General, Research} }

// ParseTemplate returns the template named s ("" is Coding).
func ParseTemplate(s string) (Template, error) {
	switch Template(s) {
	case "", Coding:
		return Coding, nil
	case General, Research:
		return Template(s), nil
	}
	return "", fmt.Errorf("summarize: unknown template %q (want coding, general or research)", s)
}

func (t Template) orDefault() Template {
	if t == "" {
		return Coding
	}
	return t
}

// Target bounds for summaries: about one fifth of the region (seed 001
// §3.4), never below MinTarget nor above MaxTarget.
const (
	TargetRatio = 5
	MinTarget   = 256
	MaxTarget   = 8000
)

// Target is the summary size to aim at for a region of regionTokens:
// regionTokens/5 clamped to [lo, hi]. lo or hi ≤ 0 take MinTarget and
// MaxTarget.
func Target(regionTokens, lo, hi int) int {
	if lo <= 0 {
		lo = MinTarget
	}
	if hi <= 0 {
		hi = MaxTarget
	}
	if hi < lo {
		hi = lo
	}
	return min(max(regionTokens/TargetRatio, lo), hi)
}

// count measures text with c, or with a conservative chars/4 rule (rounded
// up, counting runes so CJK text is not undercounted badly).
func count(c conv.Counter, s string) int {
	if c != nil {
		return c.Count(s)
	}
	return approx(s)
}

func approx(s string) int {
	n := 0
	for _, r := range s {
		if r > 0x2E80 { // CJK and beyond: about one token per character
			n += 4
		} else {
			n++
		}
	}
	return (n + 3) / 4
}
