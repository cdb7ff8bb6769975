package bench

import (
	"errors"
	"hash/fnv"
	"slices"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
)

// anchorer gives every strategy the same cache anchors, so that strategies
// differ only in what they send, never in where the bench puts their
// breakpoints. Each request a strategy builds is anchored again by
// assemble.Builder.BuildHeld (at most 4 breakpoints, the 20-block
// lookback), holding:
//
//   - the frontier: the last block before the start of the strategy's most
//     recent edit (clearing, masking, compression or a summary), found by
//     comparing the request with the one before. Everything before it is
//     unchanged since that edit, so the next edit (which for every
//     strategy here starts later in the prompt) reads it;
//   - one anchor the strategy placed itself below its newest message, if
//     any (ctxkit's own frontier, micro.Clearer.Hold), so a strategy that
//     knows where its next batch starts keeps that knowledge.
//
// BuildHeld adds the system/tools anchor, the tail (the newest message)
// and, when the tail is further than the lookback from the previous
// request's, an anchor within reach. A request the builder rejects as
// invalid (truncate's, once) is billed with the tail and system anchors
// peers place themselves.
type anchorer struct {
	builder *engine.Anchors
	err     error
	prev    []blockKey // the previous request's message blocks
	// frontier is the id of the block the newest edit starts after; ""
	// before any edit or when the edit started at the first message.
	frontier string
}

type blockKey struct {
	id   string
	hash uint64
}

func newAnchorer(e Env) *anchorer {
	a := &anchorer{}
	a.builder, a.err = engine.NewAnchors(e.Pricing, e.Counter, e.MinCacheTokens)
	return a
}

func keyOf(b *conv.Block) blockKey {
	h := fnv.New64a()
	h.Write([]byte(b.Type))
	h.Write([]byte{0})
	h.Write([]byte(b.ToolUseID))
	h.Write([]byte{0})
	h.Write([]byte(b.PlainText()))
	if b.IsError {
		h.Write([]byte{1})
	}
	return blockKey{b.ID, h.Sum64()}
}

// observe records req as the newest request and moves the frontier when
// req changed a block the previous request had.
func (a *anchorer) observe(req *llm.Request) {
	var cur []blockKey
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			cur = append(cur, keyOf(&req.Messages[i].Blocks[j]))
		}
	}
	n := min(len(cur), len(a.prev))
	edit := -1
	for i := range n {
		if cur[i] != a.prev[i] {
			edit = i
			break
		}
	}
	if edit < 0 && len(cur) < len(a.prev) {
		edit = len(cur) // blocks dropped at the end: nothing a replay does, but be total
	}
	if edit >= 0 {
		a.frontier = ""
		if edit > 0 {
			a.frontier = cur[edit-1].id
		}
	}
	a.prev = cur
}

// place returns req anchored by the common machinery. req is not changed.
func (a *anchorer) place(req *llm.Request) *llm.Request {
	a.observe(req)
	if a.err != nil {
		return anchoredRequest(req)
	}
	var hold []string
	if a.frontier != "" {
		hold = append(hold, a.frontier)
	}
	if own := ownAnchor(req); own != "" && own != a.frontier {
		hold = append(hold, own)
	}
	c := &conv.Conversation{System: req.System, Tools: req.Tools, Messages: req.Messages}
	r, err := a.builder.Place(c, hold)
	if err != nil {
		if !errors.Is(err, assemble.ErrInvalid) {
			a.err = err
		}
		return anchoredRequest(req)
	}
	r.Model, r.MaxTokens = req.Model, req.MaxTokens
	return r
}

// ownAnchor is the id of the earliest message block, below the newest
// message, that the strategy anchored itself, or "".
func ownAnchor(req *llm.Request) string {
	for i := 0; i < len(req.Messages)-1; i++ {
		bs := req.Messages[i].Blocks
		for j := range bs {
			if bs[j].CacheControl != nil {
				return bs[j].ID
			}
		}
	}
	return ""
}

// ClientAnchors is req with the cache breakpoints a client such as Claude
// Code places itself (see anchoredRequest): what a proxy in front of it
// receives. req is not changed.
func ClientAnchors(req *llm.Request) *llm.Request { return anchoredRequest(req) }

// anchoredRequest is req with the breakpoints most agents place: the end
// of the system prompt (or tools), the newest message and the message
// before the newest user message.
func anchoredRequest(req *llm.Request) *llm.Request {
	c := &conv.Conversation{System: req.System, Tools: req.Tools, Messages: slices.Clone(req.Messages)}
	for i := range c.Messages {
		m := &c.Messages[i]
		if slices.ContainsFunc(m.Blocks, func(b conv.Block) bool { return b.CacheControl != nil }) {
			m.Blocks = slices.Clone(m.Blocks)
			for j := range m.Blocks {
				m.Blocks[j].CacheControl = nil
			}
		}
	}
	r := anchored(c)
	r.Model, r.MaxTokens = req.Model, req.MaxTokens
	return r
}
