package engine

import (
	"context"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Replay drives an Engine through a recorded session in exactly the order
// the agent calls it, so a replay measures what the agent runs: the usage
// reported for a request is observed once its response is in the
// conversation, a round the model ended gets RoundEnded, a new user turn
// begins with RoundEnded, and Prepare builds the next request. The bench's
// ctxkit strategy and ctxkit compact replay through it. A Replay is not
// safe for concurrent use.
type Replay struct {
	e     *Engine
	usage *llm.Usage
}

// NewReplay returns a Replay driving e.
func NewReplay(e *Engine) *Replay { return &Replay{e: e} }

// Observe records the usage the (simulated) provider reported for the
// request the last Step returned; the Engine observes it when the response
// arrives with the next Step.
func (r *Replay) Observe(u llm.Usage) { r.usage = &u }

// Step takes the recorded messages that arrived since the last request —
// already appended at the end of c: the previous response and what
// followed it — and returns what the engine decided for the next request.
// Ready holds the edits and decisions of the round ends too.
func (r *Replay) Step(ctx context.Context, c *conv.Conversation, arrived int) (Ready, error) {
	var out Ready
	first := len(c.Messages) - arrived
	for i := first; i < len(c.Messages); i++ {
		m := &c.Messages[i]
		if m.Role != conv.RoleAssistant {
			continue
		}
		if r.usage != nil {
			r.e.observeAt(i+1, *r.usage)
			r.usage = nil
		}
		if !callsTool(m) {
			// The model answered without a tool: the round is over.
			rr, err := r.e.RoundEnded(ctx, c)
			out.merge(rr)
			if err != nil {
				return out, err
			}
		}
	}
	if n := len(c.Messages); arrived > 0 && n > 0 && conv.OpensRound(c.Messages[n-1]) {
		// A new user turn begins with the previous round settled.
		rr, err := r.e.RoundEnded(ctx, c)
		out.merge(rr)
		if err != nil {
			return out, err
		}
	}
	p, err := r.e.Prepare(ctx, c)
	out.merge(p)
	return out, err
}

// observeAt is Observe with the conversation n messages long, as it was
// when the response arrived.
func (e *Engine) observeAt(n int, u llm.Usage) {
	e.compact.Observe(u, n)
	e.measure.observe(u, n)
}

// merge adds what a later call decided to r.
func (r *Ready) merge(o Ready) {
	if o.Request != nil {
		r.Request, r.Assembly, r.Tokens = o.Request, o.Assembly, o.Tokens
	}
	r.Edits = append(r.Edits, o.Edits...)
	r.Originals = append(r.Originals, o.Originals...)
	r.Micro = addMicro(r.Micro, o.Micro)
	r.Round.Compressed += o.Round.Compressed
	r.Round.Freed += o.Round.Freed
	if o.Compaction.Compactions > 0 || o.Compaction.Trigger != "" || r.Compaction.Level == "" {
		r.Compaction = o.Compaction
	}
	r.Decisions = append(r.Decisions, o.Decisions...)
	r.Warnings = append(r.Warnings, o.Warnings...)
}

func callsTool(m *conv.Message) bool {
	for i := range m.Blocks {
		if m.Blocks[i].Type == conv.TypeToolUse {
			return true
		}
	}
	return false
}
