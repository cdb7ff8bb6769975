package engine

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Ready is what one engine call decided and what the caller does next:
// send Request (when set) and show or log Decisions. Every edit in Edits
// has already been made durable through Config.Keeper and then applied to
// the conversation the call was given; Originals names the blocks whose
// originals that made durable, in order.
type Ready struct {
	// Request is the request to send, assembled with its cache anchors
	// (nil for RoundEnded). Assembly says where the layers and anchors
	// ended up.
	Request  *llm.Request
	Assembly *assemble.Assembly
	// Tokens is the engine's estimate of Request's prompt, the figure
	// Observe calibrates the provider's count against.
	Tokens int

	// Edits are the edits applied, in order; Originals the ids of the
	// blocks each edit changed or removed, whose originals Config.Keeper
	// held before the edit took effect.
	Edits     []conv.Edit
	Originals []string

	// Micro is what rungs 1–2 did, Round what the round's end did (rung
	// 1), Compaction what rung 3 did (Compaction.Compactions is 0 when it
	// did nothing).
	Micro      micro.Result
	Round      RoundResult
	Compaction compact.Result

	// Decisions are the engine's decisions with their reasons, in the
	// order taken: for /context, the bench's marks and logs.
	Decisions []Decision
	// Warnings are errors the engine worked around: the request can still
	// go out (micro-compaction failed and left its edits for the next
	// request; automatic compaction is stopped and the context is over
	// the soft threshold).
	Warnings []error

	request int // the session's requests when the call began (Decision.Request)
}

// ready starts the Ready of an engine call: its decisions come with the
// session's request count as it stands.
func (e *Engine) ready() Ready { return Ready{request: e.requests} }

// RoundResult is what the end of a round did: the round's tool results
// entered history in their per-tool compressed form (rung 1).
type RoundResult struct {
	Compressed int `json:"compressed"`
	Freed      int `json:"freed"`
}

// Kind is the kind of a Decision.
type Kind string

// The decisions the engine takes.
const (
	KindCompress Kind = "compress" // results moved to rung 1
	KindClear    Kind = "clear"    // results moved to rung 2 (placeholders)
	KindSpill    Kind = "spill"    // an oversize result spilled to a file
	KindWait     Kind = "wait"     // clearable results kept: clearing does not pay yet, or the session has not saved enough to stake it
	KindCompact  Kind = "compact"  // turns summarized (rung 3)
	KindFallback Kind = "fallback" // a summary went down the fallback chain
	KindStopped  Kind = "stopped"  // automatic compaction is off
	KindWindow   Kind = "window"   // the provider stated a smaller window, or less room for the answer
)

// Decision is one thing the engine decided, and why.
type Decision struct {
	Kind Kind `json:"kind"`
	// Blocks is how many blocks moved (for KindCompact: how many regions
	// were summarized).
	Blocks int    `json:"blocks,omitempty"`
	Tokens int    `json:"tokens,omitempty"` // freed, or kept for Wait
	Reason string `json:"reason"`
	// Request is the session's request the decision came with: the one
	// Prepare builds, or for a call between requests (a round's end, a
	// manual compaction) the last one built.
	Request int `json:"request"`
}

func (d Decision) String() string {
	var sb strings.Builder
	sb.WriteString(string(d.Kind))
	switch {
	case d.Blocks > 0 && d.Kind == KindCompact:
		fmt.Fprintf(&sb, " regions=%d", d.Blocks)
	case d.Blocks > 0:
		fmt.Fprintf(&sb, " blocks=%d", d.Blocks)
	}
	if d.Tokens > 0 {
		fmt.Fprintf(&sb, " tokens=%d", d.Tokens)
	}
	sb.WriteString(": ")
	sb.WriteString(d.Reason)
	return sb.String()
}

func (r *Ready) decide(d Decision) {
	d.Request = r.request
	r.Decisions = append(r.Decisions, d)
}

// Decided is a run of one decision: the same kind and reason taken on
// Times requests, from First to the last one, Request (a clearing policy
// that waits, say, waits request after request).
type Decided struct {
	Decision
	First int `json:"first_request"`
	Times int `json:"times"`
}

// AddDecisions appends ds to log, in order: a decision of the same kind
// and reason as the last one in log, on a later request, extends that run
// (its count and sizes are the latest); any other starts a new one. It is
// how a session's decisions are shown (the agent's /context, ctxkit
// compact --json) without one line per request.
func AddDecisions(log []Decided, ds ...Decision) []Decided {
	for _, d := range ds {
		if n := len(log); n > 0 {
			last := &log[n-1]
			if last.Kind == d.Kind && last.Reason == d.Reason && d.Request > last.Request {
				last.Decision = d
				last.Times++
				continue
			}
		}
		log = append(log, Decided{Decision: d, First: d.Request, Times: 1})
	}
	return log
}

// microDecisions describes what a micro step did.
func (r *Ready) microDecisions(mr micro.Result, policy string) {
	guarded, compressed, cleared := 0, 0, 0
	for _, e := range mr.Edits {
		for _, b := range e.Blocks {
			switch {
			case e.Reason == "micro:guard":
				guarded++
			case b.Meta.Rung == conv.RungPlaceholder:
				cleared++
			default:
				compressed++
			}
		}
	}
	if mr.Spilled > 0 || guarded > 0 {
		r.decide(Decision{Kind: KindSpill, Blocks: max(mr.Spilled, guarded),
			Reason: fmt.Sprintf("new tool results over the oversize guard (%d bytes) leave head and tail and a recall id", mr.BytesSpilled)})
	}
	if compressed > 0 {
		r.decide(Decision{Kind: KindCompress, Blocks: compressed,
			Reason: "preserved results whose round ended take their per-tool compressed form (rung 1)"})
	}
	if cleared > 0 {
		r.decide(Decision{Kind: KindClear, Blocks: cleared, Tokens: mr.Freed,
			Reason: fmt.Sprintf("policy %s cleared these consumed results (rung 2, recall ids kept)", policy)})
	}
	if mr.Deferred > 0 {
		reason := fmt.Sprintf("policy %s keeps these clearable results for now", policy)
		if mr.Uncovered {
			reason = fmt.Sprintf("policy %s keeps these clearable results until the session has saved enough against sending everything to pay for the rewrite (do no harm)", policy)
		}
		r.decide(Decision{Kind: KindWait, Tokens: mr.Deferred, Reason: reason})
	}
}

// compactDecisions describes what a compaction did.
func (r *Ready) compactDecisions(cr compact.Result) {
	if cr.Compactions > 0 {
		reason := fmt.Sprintf("trigger %s: context %d tokens, %d after %s", orNone(string(cr.Trigger)), cr.TokensBefore, cr.TokensAfter, textfmt.Count(len(cr.Summaries), "summary", "summaries"))
		var files []string
		for _, s := range cr.Summaries {
			files = append(files, s.Files...)
		}
		if len(files) > 0 {
			reason += fmt.Sprintf(", carrying the newest reads of %s", strings.Join(files, ", "))
		}
		r.decide(Decision{Kind: KindCompact, Blocks: cr.Compactions, Tokens: max(cr.TokensBefore-cr.TokensAfter, 0), Reason: reason})
	}
	for _, f := range cr.Fallbacks {
		r.decide(Decision{Kind: KindFallback, Reason: fmt.Sprintf("%s → %s: %s", f.From, f.To, f.Reason)})
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
