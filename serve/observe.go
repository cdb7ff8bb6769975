package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/store"
)

// What the engine decides from, besides the client's history and the
// summaries: the same inputs the agent's engine has.
//
//   - The provider's report on each response (prompt and output tokens,
//     read from the response as it streams past, usage.go): the engine
//     measures the context as the last report plus an estimate of what
//     was appended since (engine.Replay.Observe) — the prompt taken at
//     no less than the engine's own count of the request, and the output
//     at no less than the response the client sends back, so that the
//     hard limit holds by the project's count whatever the provider's
//     tokenizer says — and the encrypted
//     reasoning of a response counts as the output the provider reported
//     less the response's other blocks, as the importer counts recorded
//     reasoning (its ciphertext says nothing of its cost).
//   - When each request was sent: the engine's clock, by which it judges
//     whether the provider's prompt cache has expired.
//
// Both are kept per request in the store (store.KindObserved, under the
// request's key: its message count and the hash of its last message), with
// the next request's decisions, so that a mirror rebuilt from the history —
// after a restart, on another replica — replays each request with the
// report and the time the first one had, and decides alike. A request
// whose report never came (the upstream failed, the client went away
// first) is stepped without one, on every replica.

// observation is what was observed of one request.
type observation struct {
	Prompt int       `json:"prompt,omitempty"`
	Output int       `json:"output,omitempty"`
	At     time.Time `json:"at"`
}

// requestKey names the request whose messages are the first n of wire.
// Use it at ended(req, n) (keyOf): a request's key is the same whether it
// is the newest or one within a later request's history.
func requestKey(wire []string, n int) string {
	if n == 0 {
		return "0"
	}
	return strconv.Itoa(n) + ":" + wire[n-1]
}

// ended is where the request whose messages are req's first n ends for
// its key: after the last of them that is not fixed. A fixed message after
// the newest turn (Claude Code's mid-conversation system message) belongs
// to no turn, so a boundary within a later request's history
// (mirror.step) falls before it.
func ended(req *request, n int) int {
	for n > 0 && req.fixed(n-1) {
		n--
	}
	return n
}

// keyOf is the key of the request whose messages are req's first n (the
// mirror's wire), and the hash of the message it ends at, as a decision
// stored for it names them (store.KindObserved, store.KindRefused).
func (m *mirror) keyOf(req *request, n int) (key string, hashes []string) {
	e := ended(req, n)
	if e > 0 {
		hashes = []string{m.wire[e-1]}
	}
	return requestKey(m.wire, e), hashes
}

// inputs sets what the engine observes before deciding on request key:
// the report on the previous request's response, and the clock.
func (m *mirror) inputs(key string, at time.Time) {
	if o, ok := m.obs[m.prevKey]; ok && (o.Prompt > 0 || o.Output > 0) {
		out := o.Output
		if m.resp >= 0 && m.resp < len(m.c.Messages) {
			// Never less than the response the client sent back.
			out = max(out, conv.MessageTokens(&m.c.Messages[m.resp], m.e.Config().Counter))
		}
		m.replay.Observe(llm.Usage{Input: o.Prompt, Output: out})
	}
	m.resp = -1
	if at.IsZero() {
		at = m.obs[key].At
	}
	if !at.IsZero() {
		// A boundary the proxy observed nothing at (a request it never
		// saw: the client's history holds it) keeps the last time known,
		// so the engine's clock never runs back to zero.
		m.now = at
	}
	m.prevKey = key
}

// reasoningTokens counts the encrypted reasoning of response cm — the
// answer to the request last stepped — as the output the provider
// reported for it less its other blocks, shared among them.
func (m *mirror) reasoningTokens(cm *conv.Message) {
	o, ok := m.obs[m.prevKey]
	if !ok || o.Output <= 0 {
		return
	}
	counter := m.e.Config().Counter
	var sealed []*conv.Block
	rest := 0
	for i := range cm.Blocks {
		b := &cm.Blocks[i]
		if b.Type == conv.TypeRedactedThinking {
			sealed = append(sealed, b)
			continue
		}
		rest += conv.BlockTokens(b, counter)
	}
	if len(sealed) == 0 {
		return
	}
	each := max(1, (o.Output-rest)/len(sealed))
	for _, b := range sealed {
		m.client += each - conv.BlockTokens(b, counter)
		b.Meta.Tokens = each
	}
}

// observe records what the provider reported for the response to d's
// request, sent at d.at, for the mirror to decide from at the next
// request, and notes it for the store. A mirror that has moved on (a later
// request stepped it, or it was dropped) is left alone.
func (s *Server) observe(d *decided, u upstreamUsage) {
	m := d.m
	if m == nil || d.req == nil {
		return
	}
	prompt := int(u.input + u.cacheRead + u.cacheWrite)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(d.req.Messages)
	if m.broken || len(m.wire) != n {
		return
	}
	key, hashes := m.keyOf(d.req, n)
	if prompt > 0 {
		// Never less than the engine's own count of what it sent: the
		// hard limit holds by the project's count as by the provider's.
		prompt = max(prompt, m.tokens)
	}
	o := observation{Prompt: prompt, Output: int(u.output), At: d.at.UTC()}
	if _, ok := m.obs[key]; ok {
		return
	}
	m.obs[key] = o
	data, err := json.Marshal(o)
	if err != nil {
		return
	}
	m.unsaved = append(m.unsaved, store.Decision{Kind: store.KindObserved, Key: key, Hashes: hashes, Data: data, At: time.Now().UTC()})
}

// loadObservations reads what was observed of the session's requests —
// the provider's reports and the sizes its refusals stated — for a new
// mirror (once).
func (s *Server) loadObservations(ctx context.Context, m *mirror, session string) error {
	if m.loaded {
		return nil
	}
	m.loaded = true
	ds, _, err := s.st(ctx).Decisions(ctx, session)
	if err != nil {
		return fmt.Errorf("reading what was observed of the session: %w", err)
	}
	for _, d := range ds {
		switch d.Kind {
		case store.KindObserved:
			var o observation
			if json.Unmarshal(d.Data, &o) == nil {
				m.obs[d.Key] = o
			}
		case store.KindRefused:
			var l llm.Limit
			if json.Unmarshal(d.Data, &l) == nil {
				m.refused[d.Key] = l
			}
		}
	}
	return nil
}
