package serve

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
)

// A client resends its whole history on every turn, so all but the newest
// messages of a request are messages the proxy has parsed before, byte for
// byte. The parse cache remembers each message's parse (its spans relative
// to the message, its blocks and content hashes) under a fast hash of the
// message's raw bytes, so a request costs one hash pass over the history
// instead of a scan, a SHA-256 and a cache_control search of every block.
// A message whose bytes changed at all (a moved cache_control breakpoint,
// say) is simply parsed again.

// Message parsers, so one provider's parse never answers another's.
const (
	kindAnthropic byte = iota + 1
	kindChat
	kindResponses
	kindGemini
)

// parseCacheSize is how many messages one generation of the cache holds:
// two generations hold the histories of a few dozen long sessions
// (a few hundred bytes per message), and a message not seen for two
// generations is parsed again.
const parseCacheSize = 8192

type msgKey struct {
	h    uint64
	n    int
	kind byte
}

// parseCache is safe for concurrent use. A nil *parseCache parses without
// remembering.
type parseCache struct {
	seed     maphash.Seed
	mu       sync.Mutex
	cur, old map[msgKey]message // spans relative to the message's start
}

func newParseCache() *parseCache {
	return &parseCache{seed: maphash.MakeSeed(), cur: make(map[msgKey]message)}
}

// parse reads a request body of the endpoint's API (a Gemini request's
// model is in ctx: the path names it, not the body).
func (s *Server) parse(ctx context.Context, provider, endpoint string, body []byte) (*request, error) {
	switch endpoint {
	case "gemini":
		model, _ := ctx.Value(geminiModelKey{}).(string)
		return s.parses.gemini(body, model)
	case "messages":
		return s.parses.anthropic(body)
	case "chat":
		return s.parses.chat(body)
	case "responses":
		return s.parses.responses(body)
	}
	return nil, fmt.Errorf("no parser for %s %s", provider, endpoint)
}

// msgParser reads the message at sp of body. It must depend on nothing
// but those bytes: the links between messages are made by link.
type msgParser func(body []byte, sp span) (message, error)

// messages parses the messages at spans with one, reusing the parse of
// every message seen before, and links tool results to their calls. The
// cache is locked twice per request, not per message.
func (pc *parseCache) messages(kind byte, body []byte, spans []span, one msgParser) ([]message, error) {
	msgs := make([]message, len(spans))
	var keys []msgKey
	var hit []bool
	if pc != nil {
		keys, hit = make([]msgKey, len(spans)), make([]bool, len(spans))
		for i, sp := range spans {
			raw := body[sp.s:sp.e]
			keys[i] = msgKey{h: maphash.Bytes(pc.seed, raw), n: len(raw), kind: kind}
		}
		pc.mu.Lock()
		for i, k := range keys {
			msgs[i], hit[i] = pc.getLocked(k)
		}
		pc.mu.Unlock()
	}
	var missed []int
	for i, sp := range spans {
		if hit != nil && hit[i] {
			msgs[i] = msgs[i].moved(sp.s)
			continue
		}
		m, err := one(body, sp)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
		missed = append(missed, i)
	}
	if pc != nil && len(missed) > 0 {
		pc.mu.Lock()
		for _, i := range missed {
			pc.putLocked(keys[i], msgs[i].moved(-spans[i].s))
		}
		pc.mu.Unlock()
	}
	link(msgs)
	return msgs, nil
}

// getLocked returns the message under k, moving it to the current
// generation if it was in the old one.
func (pc *parseCache) getLocked(k msgKey) (message, bool) {
	if m, ok := pc.cur[k]; ok {
		return m, true
	}
	m, ok := pc.old[k]
	if ok {
		pc.putLocked(k, m)
	}
	return m, ok
}

func (pc *parseCache) putLocked(k msgKey, m message) {
	if len(pc.cur) >= parseCacheSize {
		pc.old, pc.cur = pc.cur, make(map[msgKey]message, parseCacheSize)
	}
	pc.cur[k] = m
}

// moved returns m with every span shifted by d bytes, and its own copy of
// the blocks.
func (m message) moved(d int) message {
	m.Span = m.Span.moved(d)
	m.Content = m.Content.moved(d)
	if m.Blocks != nil {
		bs := make([]block, len(m.Blocks))
		for i, b := range m.Blocks {
			b.Span, b.Content, b.Input, b.CC = b.Span.moved(d), b.Content.moved(d), b.Input.moved(d), b.CC.moved(d)
			bs[i] = b
		}
		m.Blocks = bs
	}
	return m
}

// moved shifts a span by d; an absent span stays absent.
func (p span) moved(d int) span {
	if !p.ok() {
		return p
	}
	return span{p.s + d, p.e + d}
}

// link gives every tool result its call's name and input: the tool_use
// block with its id earlier in the conversation (none: empty).
func link(msgs []message) {
	type call struct {
		name  string
		input span
	}
	calls := make(map[string]call, len(msgs)/2)
	for i := range msgs {
		for j := range msgs[i].Blocks {
			b := &msgs[i].Blocks[j]
			switch b.Type {
			case "tool_use":
				calls[b.ToolUseID] = call{b.Name, b.Input}
			case "tool_result":
				c := calls[b.ToolUseID]
				b.Name, b.Input = c.name, c.input
			}
		}
	}
}
