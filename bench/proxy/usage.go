package proxy

import (
	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// The usage the stand-in reports. A provider reports, with each response,
// the prompt tokens it counted and the tokens of its answer; the agent's
// engine, and ctxkit's strategy in the bench, decide from that report
// (engine.Engine.Observe). So that a proxy decides from the same report,
// the stand-in answers the client's forwarded request with the usage the
// bench bills for it: the prompt as the replay counts it (the project's
// estimator; encrypted reasoning at the tokens the recording says it
// cost, which only the provider knows), and as output the recorded answer
// the replay appends next — the model's answer, which the stand-in plays.
// The proxy sees nothing of the recording but what a provider would tell
// it.

// reported is the usage the stand-in reports for a forwarded request.
type reported struct {
	counter   conv.Counter
	reasoning map[string]int // encrypted reasoning → its tokens, from the recording
	output    int            // the recorded answer's tokens
}

// cost gives the encrypted reasoning req carries, as decoded by the
// stand-in, the tokens the recording says it cost, which is what the
// provider bills for it in any request that carries it: the client's
// forwarded request and the proxy's own (a summary on the client's
// prefix). Its ciphertext says nothing of its cost.
func (r *reported) cost(req *llm.Request) {
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			b := &req.Messages[i].Blocks[j]
			if n, ok := r.reasoning[b.Data]; ok && b.Type == conv.TypeRedactedThinking {
				b.Meta.Tokens = n
			}
		}
	}
}

// usage is the report for req, as decoded by the stand-in.
func (r *reported) usage(req *llm.Request) llm.Usage {
	r.cost(req)
	prompt := 0
	for _, s := range bench.Segments(req, r.counter) {
		prompt += s.Tokens
	}
	return llm.Usage{Input: prompt, Output: r.output}
}

// report is what the stand-in reports for the request the strategy sends
// now, before the recorded answer: the recorded message after those sent
// so far (recall round trips the client's history holds are not the
// recording's).
func (s *strategy) report() *reported {
	r := &reported{counter: s.env.Counter, reasoning: s.reasoning}
	if rec := s.env.Recording; rec != nil && s.recorded < len(rec.Messages) {
		r.output = conv.MessageTokens(&rec.Messages[s.recorded], s.env.Counter)
	}
	return r
}
