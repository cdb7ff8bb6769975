package serve

import (
	"encoding/json"
	"time"

	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/store"
)

// A request the upstream refuses for its size — the model's window is
// smaller than the proxy took it to be (a local model, a model the table
// does not know, a window --window overstates), or the provider counts the
// prompt higher than the engine does — is what the agent's provider
// answers with llm.ErrPromptTooLong, and the proxy does what the agent
// does: the engine retries it (engine.Engine.Retry: the window the
// refusal states is the window from then on, the conversation is
// compacted to it, or only max_tokens goes down when the prompt fitted),
// and the request goes upstream again, once, before anything reaches the
// client. The sizes the refusal stated are kept with the request's other
// decisions once the upstream accepts it (store.KindRefused), and a
// mirror rebuilt from the history retries at the same request: a
// restarted proxy, or another replica, decides alike. A second refusal,
// or one that is not for size, reaches the client as it came.

// maxRefusal is the most bytes of an error answer read to see whether it
// refuses the request for its size; a longer one is forwarded as it
// comes.
const maxRefusal = 64 << 10

// refusal reads an upstream's error answer (status, body): whether it
// refuses the request for its size in tokens (llm.TooLong; not a 413,
// which refuses its bytes), and the sizes it states (llm.ParseLimit; a
// zero Limit when it states none: the engine then bounds the window by
// what was refused). It reads the error
// shapes of the Anthropic, OpenAI and Gemini APIs and of the servers that
// copy them ({"error": {"message", "type", "code"}}, vLLM's top-level
// "message", Gemini's array of one).
func refusal(status int, body []byte) (llm.Limit, bool) {
	type shape struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	var e shape
	if err := json.Unmarshal(body, &e); err != nil {
		var arr []shape
		if json.Unmarshal(body, &arr) != nil || len(arr) != 1 {
			return llm.Limit{}, false
		}
		e = arr[0]
	}
	msg, typ := e.Error.Message, e.Error.Type
	if msg == "" {
		msg, typ = e.Message, e.Type
	}
	var code string
	_ = json.Unmarshal(e.Error.Code, &code) // Gemini's is a number: no code
	if llm.RefusedBytes(status, typ) {
		// Refused for its bytes: a retry at a window would not change
		// that; the client's own recovery runs.
		return llm.Limit{}, false
	}
	if !llm.TooLong(status, typ, code, msg) {
		return llm.Limit{}, false
	}
	l, _ := llm.ParseLimit(&llm.APIError{Status: status, Type: typ, Message: msg, Kind: llm.ErrPromptTooLong})
	return l, true
}

// resend decides again the request d decided, which the upstream refused
// with the error answer (status, body): when it is a refusal for size
// (refusal), the engine retries the request and the body to send instead
// is returned, with the sizes the refusal stated. ok is false — the answer
// goes to the client as it came — when it is not one, when the request
// was not the engine's to decide, or when it was decided again once
// already.
func (s *Server) resend(d *decided, status int, body []byte) (out *spliced, l llm.Limit, ok bool) {
	m := d.m
	if m == nil || d.settled || d.resent || d.out == nil || m.broken {
		return nil, l, false
	}
	l, ok = refusal(status, body)
	if !ok {
		return nil, l, false
	}
	n := len(m.wire)
	if n == 0 || n != len(d.req.Messages) {
		return nil, l, false
	}
	key, hashes := m.keyOf(d.req, n)
	if _, done := m.refused[key]; done {
		return nil, l, false // retried at this request already
	}
	d.resent = true
	var r engine.Ready
	if err := m.retry(d.ctx, &r, l); err != nil {
		// The engine stopped half-way: the next request decides afresh.
		m.broken = true
		s.log.Warn("retrying a request the upstream refused for its size", "session", d.session, "err", err)
		return nil, l, false
	}
	m.refused[key] = l
	data, _ := json.Marshal(l) // three numbers: never fails
	m.pending.observed = append(m.pending.observed, store.Decision{Kind: store.KindRefused, Key: key, Hashes: hashes, Data: data, At: time.Now().UTC()})
	d.answer = 0
	s.account(d, r)
	d.out = &spliced{body: d.out.body, sp: withAnswer(m.render(d.req, m.e.Hold()), d.req, d.answer)}
	return d.out, l, true
}
