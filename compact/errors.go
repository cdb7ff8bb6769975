package compact

import (
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Errors the compactor returns; each message tells the user what to do.
var (
	// ErrOverflow: the conversation does not fit and nothing compactable is
	// left (the rest is pinned: recent turns, user words, summaries).
	ErrOverflow = errors.New("compact: context overflow: nothing compactable is left; start a new session from the summary with /clear --keep-summary")
	// ErrCircuitOpen: automatic compaction stopped after consecutive
	// failures.
	ErrCircuitOpen = errors.New("compact: automatic compaction stopped after repeated failures; run /compact to try again by hand, or start a new session from the summary with /clear --keep-summary")
	// ErrThrashing: the context keeps refilling right after each
	// compaction, so compacting again would loop.
	ErrThrashing = errors.New("compact: automatic compaction is thrashing: the context refilled to the limit right after each of the last compactions; something large is being re-read every turn. Run /compact with a focus, or start a new session from the summary with /clear --keep-summary")
	// ErrNoKeeper: a compaction needs somewhere to keep the originals.
	ErrNoKeeper = errors.New("compact: no keeper: the originals must be made durable before they leave the context")
)

// OverflowError is an overflow with its figures; it unwraps to
// ErrOverflow.
type OverflowError struct {
	Tokens int // what the conversation needs
	Limit  int // what fits
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("compact: context overflow: the conversation needs about %d tokens, %d fit, and nothing compactable is left; start a new session from the summary with /clear --keep-summary", e.Tokens, e.Limit)
}

func (e *OverflowError) Unwrap() error { return ErrOverflow }

// StoppedError says automatic compaction is off and why; it unwraps to
// ErrCircuitOpen or ErrThrashing.
type StoppedError struct {
	Reason error
	Count  int    // consecutive failures or refills
	Last   string // the last failure, if any
}

func (e *StoppedError) Error() string {
	s := fmt.Sprintf("%v (%d in a row)", e.Reason, e.Count)
	if e.Last != "" {
		s += "; last: " + e.Last
	}
	return s
}

func (e *StoppedError) Unwrap() error { return e.Reason }

// Trigger says what started a compaction.
type Trigger string

const (
	TriggerSoft Trigger = "soft"
	TriggerHard Trigger = "hard"
	// TriggerScheduled: below the soft threshold, where the cost model
	// says the next compaction is due (schedule.go).
	TriggerScheduled Trigger = "scheduled"
	TriggerReactive  Trigger = "reactive"
	TriggerManual    Trigger = "manual"
	TriggerTool      Trigger = "tool"
)

// Result reports what one call did.
type Result struct {
	Trigger      Trigger `json:"trigger,omitempty"`
	Level        string  `json:"level,omitempty"`
	TokensBefore int     `json:"tokens_before"`
	TokensAfter  int     `json:"tokens_after"`
	// Compactions counts the regions replaced (summaries, merges and
	// truncations).
	Compactions int        `json:"compactions"`
	Summaries   []Summary  `json:"summaries,omitempty"`
	Fallbacks   []Fallback `json:"fallbacks,omitempty"`
	// Edits are the edits applied, in order, each kept before it was
	// applied.
	Edits []conv.Edit `json:"-"`
	// Usage is what the summary requests cost.
	Usage llm.Usage `json:"usage"`
	// Note explains a call that did nothing (nothing to compact, guard
	// stopped).
	Note string `json:"note,omitempty"`
	// Ladder names the rungs of the escalation that changed the
	// conversation, in order: the configured mode ("region" or "round"),
	// "round" when region mode could not get under the soft threshold,
	// "all" (one summary of everything before the last turns), "drop"
	// (the truncation marker) and "shrink" (blocks of the recent tail cut
	// to fit the limit).
	Ladder []string `json:"ladder,omitempty"`
}

// Summary describes one summary block a compaction produced.
type Summary struct {
	ID         string    `json:"id"`
	Turns      conv.Span `json:"turns"`
	Tokens     int       `json:"tokens"`
	Replaced   int       `json:"replaced_tokens"`
	Kind       string    `json:"kind"` // llm, extractive, truncated, or KindMerged
	Merged     bool      `json:"merged,omitempty"`
	CacheReuse bool      `json:"cache_reuse,omitempty"`
	// Files are the paths of the files the summary message carries
	// verbatim (their newest reads; files.go), newest first.
	Files []string `json:"files,omitempty"`
}

// KindMerged is the Kind of a summary that merged the summaries of
// different rounds once together they outgrew their budget: a second
// summarizer call when the summarizer is a Merger (the model's), besides
// the one that wrote the newest of them. A summary that folded in an
// earlier one of its own round (a round cut twice) has its writer's kind.
const KindMerged = "merged"

// Fallback records one step down the fallback chain.
type Fallback struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

func (r *Result) add(o Result) {
	r.Compactions += o.Compactions
	r.Summaries = append(r.Summaries, o.Summaries...)
	r.Fallbacks = append(r.Fallbacks, o.Fallbacks...)
	r.Edits = append(r.Edits, o.Edits...)
	r.Ladder = append(r.Ladder, o.Ladder...)
	r.Usage = r.Usage.Add(o.Usage)
}
