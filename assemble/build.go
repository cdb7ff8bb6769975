package assemble

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Todo is one item of the agent's todo list, recapped as L5.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"` // pending, in_progress, completed
}

// Range is a half-open range of message indexes.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Layers says where each layer of seed 000 §3.3 ended up in the request.
type Layers struct {
	// System is the number of request system blocks that come from the
	// conversation (L1, with the tool schemas); Rules says whether the
	// project rules block (L2) follows them.
	System int  `json:"system"`
	Rules  bool `json:"rules"`
	// History (L3) are the messages before the current round; Question
	// (L4) is the message that opened it, -1 when there is none;
	// Scratchpad (L6) is the rest of the round.
	History    Range `json:"history"`
	Question   int   `json:"question"`
	Scratchpad Range `json:"scratchpad"`
	// Recap says whether the todo recap (L5) was added at the end of the
	// newest user message.
	Recap bool `json:"recap"`
}

// Assembly is an assembled request and how it was laid out.
type Assembly struct {
	Request *llm.Request
	Anchors []Anchor
	Layers  Layers
}

// Build assembles the request for the conversation's current state: L1 the
// system blocks and tool schemas, L2 the project rules as one more system
// block, L3/L4/L6 the messages as they are, L5 the todo recap (when todos
// is not empty) as a system reminder at the very end of the newest user
// message, and up to four cache anchors on the request's own copies.
//
// Build reads nothing but its arguments and the rules the Builder holds,
// so the same state and config give a byte-identical request. It fills the
// token caches of c's blocks; it changes nothing else of c. c.Pending is
// not sent: pending injections wait for the next Turn. A conversation that
// would make a request the provider rejects is an error (ErrInvalid).
// SetMaxTokens sets Config.MaxTokens, the max_tokens of the requests
// built from now on: the provider stated a smaller window than the one
// configured (engine.Engine.Retry).
func (b *Builder) SetMaxTokens(n int) {
	if n > 0 {
		b.cfg.MaxTokens = n
	}
}

func (b *Builder) Build(c *conv.Conversation, todos []Todo) (*Assembly, error) {
	return b.BuildHeld(c, todos, nil)
}

// BuildHeld is Build with cache anchors held after the blocks named in
// hold, which the layer that changes the history knows and Build cannot:
// the deepest prefix the provider still holds before a block changed
// since the previous request (this request reads it) and the frontier
// below which nothing will change before the next batch (that batch reads
// it). micro.Clearer.Hold says which. Held anchors come first, then the
// newest message's; the rest are chosen as Build chooses them. An id not
// in the conversation, on a block that cannot carry an anchor with none
// before it in its message, or ending a prefix shorter than
// MinCacheTokens is ignored; so is every id when anchors are off. The
// request is still a pure function of the arguments.
func (b *Builder) BuildHeld(c *conv.Conversation, todos []Todo, hold []string) (*Assembly, error) {
	if err := b.check(c); err != nil {
		return nil, err
	}
	l, summary, held := b.layout(c, hold)
	ly := layers(c)
	ly.System, ly.Rules = len(sent(c.System)), b.rules.File != ""
	newest := len(c.Messages) - 1
	anchors := placeAnchors(l, ly.Question, newest, b.cfg.MinCacheTokens, b.cfg.MaxAnchors, b.cfg.Lookback, summary, held)

	req := &llm.Request{
		Model:     b.cfg.Model,
		MaxTokens: b.cfg.MaxTokens,
		System:    withoutAnchors(sent(c.System)),
		Messages:  make([]conv.Message, len(c.Messages)),
	}
	if ly.Rules {
		req.System = append(req.System, b.rulesBlock.Clone())
	}
	if c.Tools != nil {
		req.Tools = make([]conv.Tool, len(c.Tools))
		for i, t := range c.Tools {
			t.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
			t.CacheControl = nil // imported anchors would exceed the limit
			req.Tools[i] = t
		}
	}
	// The request shares the conversation's blocks: only a message that
	// gets an anchor or the recap, or that carries imported cache_control,
	// is copied, so assembly costs what changed, not the whole history.
	for i, m := range c.Messages {
		m.Blocks = stripped(m.Blocks)
		req.Messages[i] = m
	}
	own := func(i int) *conv.Message {
		m := &req.Messages[i]
		if len(c.Messages[i].Blocks) > 0 && len(m.Blocks) > 0 && &m.Blocks[0] == &c.Messages[i].Blocks[0] {
			m.Blocks = slices.Clone(m.Blocks)
		}
		return m
	}

	cc := b.cacheControl()
	for _, a := range anchors {
		switch {
		case a.Tool:
			req.Tools[a.Block].CacheControl = cc
		case a.Msg < 0:
			req.System[a.Block].CacheControl = cc
		default:
			own(a.Msg).Blocks[a.Block].CacheControl = cc
		}
	}

	if text := recap(todos); text != "" {
		m := own(newest)
		m.Blocks = append(m.Blocks, wrapBlock(conv.NewText(conv.SourceReminder, text), b.cfg.Tags))
		ly.Recap = true
	}

	if err := verify(req, len(anchors)); err != nil {
		return nil, err
	}
	return &Assembly{Request: req, Anchors: anchors, Layers: ly}, nil
}

// check verifies c as a request, incrementally: when c extends the
// conversation the previous Build verified, only the new messages (and
// their pairing with the last verified one) are checked.
func (b *Builder) check(c *conv.Conversation) error {
	firstID := func(i int) string {
		if i < 0 || i >= len(c.Messages) || len(c.Messages[i].Blocks) == 0 {
			return ""
		}
		return c.Messages[i].Blocks[0].ID
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	from := 0
	if p := b.checked; p.n > 0 && len(c.Messages) >= p.n && p.system == len(c.System) &&
		firstID(0) == p.first && firstID(p.n-1) == p.last {
		from = p.n - 1
	}
	vs := conv.CheckFrom(c, from)
	if n := len(c.Messages); n == 0 {
		vs = append(vs, conv.Violation{Rule: conv.RuleEmptyMessage, Detail: "a request needs at least one message"})
	} else if c.Messages[n-1].Role != conv.RoleUser {
		vs = append(vs, conv.Violation{Rule: conv.RuleLastNotUser, Msg: n - 1, Detail: "a request must end with a user message"})
	}
	if len(vs) > 0 {
		b.checked = checkpoint{}
		return fmt.Errorf("%w: %w", ErrInvalid, vs)
	}
	b.checked = checkpoint{n: len(c.Messages), first: firstID(0), last: firstID(len(c.Messages) - 1), system: len(c.System)}
	return nil
}

// cacheControl is the marker every anchor carries.
func (b *Builder) cacheControl() json.RawMessage {
	if b.cfg.CacheTTL == "1h" {
		return json.RawMessage(`{"type":"ephemeral","ttl":"1h"}`)
	}
	return json.RawMessage(`{"type":"ephemeral"}`)
}

// layout lists the prompt's slots in cache order with their prefix sizes,
// and returns the slot of the newest summary block (-1 if none) and the
// slots of the blocks named in hold that can carry an anchor, in the
// order of hold.
func (b *Builder) layout(c *conv.Conversation, hold []string) (*layout, int, []int) {
	counter := b.cfg.Counter
	l := &layout{}
	total := 0
	for i := range c.Tools {
		total += conv.ToolTokens(&c.Tools[i], counter)
		l.slots = append(l.slots, slot{msg: -1, blk: i, tool: true, tokens: total, ok: true})
	}
	sys := 0
	for i := range c.System {
		if c.System[i].Empty() {
			continue
		}
		total += conv.BlockTokens(&c.System[i], counter)
		l.slots = append(l.slots, slot{msg: -1, blk: sys, tokens: total, ok: true})
		sys++
	}
	if b.rules.File != "" {
		total += b.rulesBlock.Meta.Tokens
		l.slots = append(l.slots, slot{msg: -1, blk: sys, tokens: total, ok: true})
	}
	l.prefix = len(l.slots)
	summary := -1
	var held []int
	if len(hold) > 0 {
		held = make([]int, len(hold))
		for i := range held {
			held[i] = -1
		}
	}
	for i := range c.Messages {
		l.msgStart = append(l.msgStart, len(l.slots))
		m := &c.Messages[i]
		for j := range m.Blocks {
			bl := &m.Blocks[j]
			total += conv.BlockTokens(bl, counter)
			if bl.Type == conv.TypeSummary {
				summary = len(l.slots)
			}
			l.slots = append(l.slots, slot{msg: i, blk: j, tokens: total, ok: anchorable(bl)})
			for h, id := range hold {
				if id == bl.ID {
					// The block itself, or the last one before it in its
					// message that can carry an anchor.
					held[h] = l.lastOK(l.msgStart[i], len(l.slots))
				}
			}
		}
	}
	return l, summary, slices.DeleteFunc(held, func(s int) bool { return s < 0 })
}

// layers finds L3, L4 and L6 among the messages.
func layers(c *conv.Conversation) Layers {
	n := len(c.Messages)
	ly := Layers{History: Range{0, n}, Question: -1, Scratchpad: Range{n, n}}
	rs := c.Rounds()
	if len(rs) == 0 {
		return ly
	}
	last := rs[len(rs)-1]
	if conv.OpensRound(c.Messages[last.Start]) {
		ly.History = Range{0, last.Start}
		ly.Question = last.Start
		ly.Scratchpad = Range{last.Start + 1, n}
	}
	return ly
}

// recap renders the todo list (L5), "" when there is nothing to recap.
func recap(todos []Todo) string {
	var sb strings.Builder
	n := 0
	for _, t := range todos {
		if strings.TrimSpace(t.Content) == "" {
			continue
		}
		n++
		status := t.Status
		if status == "" {
			status = "pending"
		}
		fmt.Fprintf(&sb, "\n%d. [%s] %s", n, status, t.Content)
	}
	if n == 0 {
		return ""
	}
	return "Your current todo list, for reference. Keep it up to date with the todo tool as you work; do not mention this reminder to the user." + sb.String()
}

// verify checks the request about to be returned: it must pass
// conv.CheckRequest, declare tools when it holds tool blocks (the API
// refuses it otherwise), have no empty system block and carry at most the
// allowed anchors, none on a block that cannot hold one.
// The messages were checked before assembly; the request differs from them
// only by its anchors and the recap at the very end, so this checks those.
func verify(req *llm.Request, anchors int) error {
	if len(req.Tools) == 0 && slices.ContainsFunc(req.Messages, func(m conv.Message) bool {
		return slices.ContainsFunc(m.Blocks, func(b conv.Block) bool { return b.Type == conv.TypeToolUse || b.Type == conv.TypeToolResult })
	}) {
		return fmt.Errorf("%w: the conversation has tool calls but declares no tools", ErrInvalid)
	}
	n := 0
	for _, t := range req.Tools {
		if t.CacheControl != nil {
			n++
		}
	}
	count := func(bs []conv.Block) error {
		for i := range bs {
			if bs[i].CacheControl == nil {
				continue
			}
			if !anchorable(&bs[i]) {
				return fmt.Errorf("%w: cache anchor on a %s block that cannot hold one", ErrInvalid, bs[i].Type)
			}
			n++
		}
		return nil
	}
	for i := range req.System {
		if req.System[i].Empty() {
			return fmt.Errorf("%w: empty system block %d", ErrInvalid, i)
		}
	}
	if err := count(req.System); err != nil {
		return err
	}
	for _, m := range req.Messages {
		if err := count(m.Blocks); err != nil {
			return err
		}
	}
	if n != anchors || n > DefaultMaxAnchors {
		return fmt.Errorf("%w: %d cache anchors in the request, %d placed", ErrInvalid, n, anchors)
	}
	return nil
}

// sent drops empty system blocks, which the provider refuses.
func sent(system []conv.Block) []conv.Block {
	if !slices.ContainsFunc(system, func(b conv.Block) bool { return b.Empty() }) {
		return system
	}
	return slices.DeleteFunc(slices.Clone(system), func(b conv.Block) bool { return b.Empty() })
}

// stripped returns bs without imported cache_control markers: bs itself
// when it has none, else a copy.
func stripped(bs []conv.Block) []conv.Block {
	has := func(b conv.Block) bool {
		return b.CacheControl != nil || slices.ContainsFunc(b.Content, func(c conv.Block) bool { return c.CacheControl != nil })
	}
	if !slices.ContainsFunc(bs, has) {
		return bs
	}
	return withoutAnchors(bs)
}

// withoutAnchors deep-copies bs, dropping every cache_control an imported
// block carried: the request's anchors are the ones Build places.
func withoutAnchors(bs []conv.Block) []conv.Block {
	out := conv.CloneBlocks(bs)
	for i := range out {
		out[i].CacheControl = nil
		for j := range out[i].Content {
			out[i].Content[j].CacheControl = nil
		}
	}
	return out
}
