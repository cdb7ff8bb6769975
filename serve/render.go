package serve

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// render turns the engine's conversation into splices of the client's
// body (DESIGN.md invariant 7: every byte the engine did not decide is the
// client's). A conv message built from client messages and still whole
// keeps their bytes, with the blocks the engine moved down the ladder
// spliced in place (a result's content, a text, a tool call's input). The
// client messages the engine replaced (a compaction, a drop) are cut out,
// and the messages it made (the summary message, the drop marker) are
// written in the client's wire format where they stand; client blocks
// they carry on (the user's kept words, a round's opening message) keep
// their bytes, and a run of whole client messages at their end stays as
// the client sent it.
//
// On Anthropic's wire it also puts a cache breakpoint on each block the
// engine holds (anchor.go), within the API's limit: when the breakpoints
// would not fit, the client's message breakpoints go oldest first, and
// then the held block the engine named last goes without.
func (m *mirror) render(req *request, hold []string) []splice {
	for {
		sp, an := m.renderHeld(req, hold)
		if an == nil {
			return sp
		}
		fitted, ok := an.fit(req, sp)
		if ok {
			return fitted
		}
		// The block held last that got a breakpoint goes without.
		for i := len(hold) - 1; i >= 0; i-- {
			if slices.Contains(an.added, hold[i]) {
				hold = slices.Delete(slices.Clone(hold), i, i+1)
				break
			}
		}
	}
}

// renderHeld is render with a breakpoint on every held block that lacks
// one; the plan it followed is nil when there was nothing to anchor.
func (m *mirror) renderHeld(req *request, hold []string) ([]splice, *anchoring) {
	n := len(req.Messages)
	if n == 0 || len(m.wire) != n {
		return nil, nil
	}
	kept := make([]bool, n)
	for i := range req.Messages {
		kept[i] = req.fixed(i)
	}
	inserts := make([][][]byte, n+1) // made messages written before client message i (n: after the last)
	var made [][]byte                // made messages waiting for the next kept one
	var sp []splice
	pc := partsCache{req: req, an: newAnchoring(req, hold)}
	if pc.an != nil {
		pc.an.heldAt = map[[2]int]bool{}
		for _, id := range hold {
			if o, ok := m.origin[id]; ok {
				if ps := pc.parts(o.msg); o.part < len(ps) && ps[o.part].blk >= 0 {
					pc.an.heldAt[[2]int{o.msg, ps[o.part].blk}] = true
				}
			}
		}
	}
	for ci := range m.c.Messages {
		cm := &m.c.Messages[ci]
		if g, ok := m.groups[cm.Blocks[0].ID]; ok && sameIDs(g.ids, cm.Blocks) {
			for w := g.lo; w < g.hi; w++ {
				kept[w] = true
			}
			inserts[g.lo] = append(inserts[g.lo], made...)
			made = nil
			for bi := range cm.Blocks {
				b := &cm.Blocks[bi]
				own := -1
				if m.changed(b) {
					if x, ok := m.blockSplice(&pc, b); ok {
						own = len(sp)
						sp = append(sp, x)
					}
				}
				if pc.an.wants(b.ID) {
					sp = m.anchorInPlace(&pc, b.ID, sp, own)
				}
			}
			continue
		}
		from := m.clientTail(&pc, cm.Blocks)
		own, parts := m.write(&pc, cm.Role, cm.Blocks[:from])
		if from == len(cm.Blocks) {
			made = append(made, own...)
			if len(parts) > 0 {
				made = append(made, message1(req, cm.Role, parts))
			}
			continue
		}
		// The client's messages at the end keep their bytes; what the
		// engine wrote before them goes at the start of the first one's
		// content where roles must alternate (Messages, chat, Gemini),
		// and in an item of its own before it on the Responses API, which
		// takes one: the client's item then goes as it came.
		w := m.origin[cm.Blocks[from].ID].msg
		inserts[w] = append(append(inserts[w], made...), own...)
		made = nil
		switch {
		case len(parts) == 0:
		case req.API == "responses":
			inserts[w] = append(inserts[w], message1(req, cm.Role, parts))
		default:
			sp = append(sp, prependParts(req, req.Messages[w], cm.Role, parts))
		}
		for bi := from; bi < len(cm.Blocks); bi++ {
			kept[m.origin[cm.Blocks[bi].ID].msg] = true
			if id := cm.Blocks[bi].ID; pc.an.wants(id) {
				sp = m.anchorInPlace(&pc, id, sp, -1)
			}
		}
	}
	inserts[n] = append(inserts[n], made...)
	msgs := req.Messages
	sp = append(sp, leadingSystem(req, kept, inserts)...)
	for i := 0; i < n; {
		if kept[i] {
			if len(inserts[i]) > 0 {
				sp = append(sp, splice{s: msgs[i].Span.s, e: msgs[i].Span.s, repl: joinMessages(inserts[i], false, true)})
			}
			i++
			continue
		}
		j := i
		for j < n && !kept[j] {
			j++
		}
		switch {
		case j < n:
			sp = append(sp, splice{s: msgs[i].Span.s, e: msgs[j].Span.s, repl: joinMessages(inserts[j], false, true)})
			inserts[j] = nil
		case i > 0:
			sp = append(sp, splice{s: msgs[i-1].Span.e, e: msgs[n-1].Span.e, repl: joinMessages(inserts[n], true, false)})
			inserts[n] = nil
		default:
			sp = append(sp, splice{s: msgs[0].Span.s, e: msgs[n-1].Span.e, repl: joinMessages(inserts[n], false, false)})
			inserts[n] = nil
		}
		i = j
	}
	if len(inserts[n]) > 0 {
		sp = append(sp, splice{s: msgs[n-1].Span.e, e: msgs[n-1].Span.e, repl: joinMessages(inserts[n], true, false)})
	}
	sort.SliceStable(sp, func(a, b int) bool { return sp[a].s < sp[b].s })
	return sp, pc.an
}

// leadingSystem keeps a Messages API request from opening with a
// mid-conversation system message (the API wants a user message first):
// system messages whose every earlier message the engine replaced go
// right after what the engine's conversation now begins with — the
// message it made, or the client's first message it kept (which the made
// parts open) — ahead of the first answer, as they stood before.
func leadingSystem(req *request, kept []bool, inserts [][][]byte) []splice {
	if req.API != "messages" {
		return nil
	}
	var lead []int
	k := -1
	for i := range kept {
		if !kept[i] {
			continue
		}
		if !req.fixed(i) || req.Messages[i].Role != "system" {
			k = i
			break
		}
		lead = append(lead, i)
	}
	if len(lead) == 0 || k < 0 || lead[0] == 0 && len(inserts[0]) == 0 {
		return nil
	}
	var moved [][]byte
	for _, i := range lead {
		kept[i] = false
		moved = append(moved, req.Body[req.Messages[i].Span.s:req.Messages[i].Span.e])
		if len(inserts[i]) > 0 {
			inserts[k] = append(inserts[i], inserts[k]...)
			inserts[i] = nil
		}
	}
	if len(inserts[k]) > 0 {
		inserts[k] = append(inserts[k], moved...)
		return nil
	}
	e := req.Messages[k].Span.e
	return []splice{{s: e, e: e, repl: joinMessages(moved, true, false)}}
}

// joinMessages joins made messages with commas, with one before or after
// them as their place in the array needs.
func joinMessages(ms [][]byte, before, after bool) []byte {
	if len(ms) == 0 {
		return nil
	}
	var b bytes.Buffer
	for i, x := range ms {
		if i > 0 || before {
			b.WriteByte(',')
		}
		b.Write(x)
	}
	if after {
		b.WriteByte(',')
	}
	return b.Bytes()
}

func sameIDs(ids []string, bs []conv.Block) bool {
	if len(ids) != len(bs) {
		return false
	}
	for i := range bs {
		if bs[i].ID != ids[i] {
			return false
		}
	}
	return true
}

// changed reports whether the engine changed a client block.
func (m *mirror) changed(b *conv.Block) bool {
	if b.Meta.Rung != conv.RungFull {
		return true
	}
	o, ok := m.origin[b.ID]
	if !ok {
		return true
	}
	switch o.kind {
	case partImage:
		return b.Type != conv.TypeImage
	case partText, partOpaque:
		return b.Type != conv.TypeText && b.Type != conv.TypeOpaque
	case partSealed:
		return b.Type != conv.TypeText && b.Type != conv.TypeRedactedThinking && b.Type != conv.TypeServerToolUse
	}
	return false
}

// partsCache lists the parts of the request's messages, each once, and
// holds the render's anchor plan (nil: none).
type partsCache struct {
	req *request
	m   map[int][]part
	an  *anchoring
}

func (pc *partsCache) parts(i int) []part {
	if ps, ok := pc.m[i]; ok {
		return ps
	}
	if pc.m == nil {
		pc.m = map[int][]part{}
	}
	ps := partsOf(pc.req.Body, pc.req.Messages[i])
	pc.m[i] = ps
	return ps
}

// blockSplice writes a changed block back into its place in the client's
// message.
func (m *mirror) blockSplice(pc *partsCache, b *conv.Block) (splice, bool) {
	o, ok := m.origin[b.ID]
	if !ok {
		return splice{}, false
	}
	ps := pc.parts(o.msg)
	if o.part >= len(ps) {
		return splice{}, false
	}
	p := ps[o.part]
	body := pc.req.Body
	switch {
	case b.Type == conv.TypeToolResult && p.kind == partToolResult && p.val.ok():
		return splice{s: p.val.s, e: p.val.e, repl: jsonString(b.ResultText())}, true
	case b.Type == conv.TypeToolUse && p.kind == partToolUse && p.val.ok():
		if body[p.val.s] == '"' {
			return splice{s: p.val.s, e: p.val.e, repl: jsonString(string(b.Input))}, true
		}
		return splice{s: p.val.s, e: p.val.e, repl: append([]byte(nil), b.Input...)}, true
	case b.Type == conv.TypeText && p.kind == partText && p.val.ok():
		return splice{s: p.val.s, e: p.val.e, repl: jsonString(b.Text)}, true
	case b.Type == conv.TypeText && !p.str:
		return splice{s: p.whole.s, e: p.whole.e, repl: textPart(pc.req, o.role, b.Text)}, true
	}
	return splice{}, false
}

// textPart is a text part in the client's wire format.
func textPart(req *request, role, text string) []byte {
	return append(append([]byte(textOpen(req, roleOf(role))), jsonString(text)...), '}')
}

// textOpen is the start of a text part, up to its text value: a Gemini
// part has no type.
func textOpen(req *request, role conv.Role) string {
	if req.API == "gemini" {
		return `{"text":`
	}
	return `{"type":"` + textType(req, role) + `","text":`
}

// clientTail is where the run of whole, unchanged client messages at the
// end of a made message begins (len(bs) when there is none): those keep
// their bytes and their own place. The run may not begin with tool
// results, which must follow their calls.
func (m *mirror) clientTail(pc *partsCache, bs []conv.Block) int {
	from := len(bs)
	k := len(bs)
	next := -1 // the client message after the run found so far
	for k > 0 {
		o, ok := m.origin[bs[k-1].ID]
		if !ok || m.changed(&bs[k-1]) {
			break
		}
		w, np := o.msg, m.nparts[o.msg]
		if o.part != np-1 || k < np || next >= 0 && !m.adjacent(w, next) {
			break
		}
		whole := true
		for t := 0; t < np; t++ {
			b := &bs[k-np+t]
			o2, ok := m.origin[b.ID]
			if !ok || o2.msg != w || o2.part != t || m.changed(b) {
				whole = false
				break
			}
		}
		if !whole || m.roles[w] == "tool" || hasResultParts(pc.parts(w)) || !contentList(pc.req, w) {
			break
		}
		k -= np
		from, next = k, w
	}
	return from
}

// adjacent reports whether client message a comes right before b, system
// messages aside.
func (m *mirror) adjacent(a, b int) bool {
	if a >= b {
		return false
	}
	for i := a + 1; i < b; i++ {
		if roleOf(m.roles[i]) != "" {
			return false
		}
	}
	return true
}

// contentList reports whether client message w has content parts could
// be put before: a list, or a string.
func contentList(req *request, w int) bool {
	c := req.Messages[w].Content
	return c.ok() && (req.Body[c.s] == '[' || req.Body[c.s] == '"')
}

func hasResultParts(ps []part) bool {
	for _, p := range ps {
		if p.kind == partToolResult {
			return true
		}
	}
	return false
}

// write writes blocks the engine made (or carried on) in the client's wire
// format: the tool results as messages of their own where the API wants
// them so (OpenAI: tool messages, call outputs), the rest as content parts
// of a message of role.
func (m *mirror) write(pc *partsCache, role conv.Role, bs []conv.Block) (own, content [][]byte) {
	req := pc.req
	body := req.Body
	for i := range bs {
		b := &bs[i]
		o, client := m.origin[b.ID]
		var p part
		if client {
			if ps := pc.parts(o.msg); o.part < len(ps) {
				p = ps[o.part]
			} else {
				client = false
			}
		}
		same := client && !m.changed(b)
		switch {
		case b.Type == conv.TypeToolResult && (req.API == "chat" || req.API == "responses"):
			if same && p.whole == req.Messages[o.msg].Span {
				own = append(own, body[p.whole.s:p.whole.e])
				continue
			}
			if req.API == "responses" {
				own = append(own, []byte(`{"type":"function_call_output","call_id":`+string(jsonString(b.ToolUseID))+`,"output":`+string(jsonString(b.ResultText()))+`}`))
			} else {
				own = append(own, []byte(`{"role":"tool","tool_call_id":`+string(jsonString(b.ToolUseID))+`,"content":`+string(jsonString(b.ResultText()))+`}`))
			}
		case same && p.str:
			content = append(content, append(append([]byte(textOpen(req, role)), body[p.val.s:p.val.e]...), '}'))
		case same:
			content = append(content, body[p.whole.s:p.whole.e])
		case b.Type == conv.TypeToolResult && req.API == "gemini":
			content = append(content, geminiResponsePart(b))
		case b.Type == conv.TypeToolResult:
			content = append(content, []byte(`{"type":"tool_result","tool_use_id":`+string(jsonString(b.ToolUseID))+`,"content":`+string(jsonString(b.ResultText()))+`}`))
		default:
			content = append(content, textPart(req, string(role), b.PlainText()))
		}
		if pc.an.wants(b.ID) {
			k := len(content) - 1
			content[k] = pc.anchorWritten(b.ID, content[k], o, p, client, same && !p.str)
		}
	}
	return own, content
}

// message1 is a message of role with content parts, in the client's wire
// format.
func message1(req *request, role conv.Role, parts [][]byte) []byte {
	var msg bytes.Buffer
	switch {
	case req.API == "responses":
		msg.WriteString(`{"type":"message","role":"` + string(role) + `","content":[`)
	case req.API == "gemini" && role == conv.RoleAssistant:
		msg.WriteString(`{"role":"model","parts":[`)
	case req.API == "gemini":
		msg.WriteString(`{"role":"user","parts":[`)
	default:
		msg.WriteString(`{"role":"` + string(role) + `","content":[`)
	}
	msg.Write(bytes.Join(parts, []byte{','}))
	msg.WriteString(`]}`)
	return msg.Bytes()
}

// prependParts puts parts at the start of client message cm's content: a
// list gets them before its first part; a string becomes a list of them
// and the string as a text part.
func prependParts(req *request, cm message, role conv.Role, parts [][]byte) splice {
	body := req.Body
	c := cm.Content
	joined := bytes.Join(parts, []byte{','})
	if cm.Str {
		var b bytes.Buffer
		b.WriteByte('[')
		b.Write(joined)
		b.WriteString("," + textOpen(req, role))
		b.Write(body[c.s:c.e])
		b.WriteString(`}]`)
		return splice{s: c.s, e: c.e, repl: b.Bytes()}
	}
	if len(bytes.TrimSpace(body[c.s+1:c.e-1])) > 0 {
		joined = append(joined, ',')
	}
	return splice{s: c.s + 1, e: c.s + 1, repl: joined}
}

// geminiResponsePart is a tool result as a Gemini functionResponse part
// (a call id the parser made up, "name#k", is not the client's: left out).
func geminiResponsePart(b *conv.Block) []byte {
	var sb bytes.Buffer
	sb.WriteString(`{"functionResponse":{`)
	if b.ToolUseID != "" && !strings.Contains(b.ToolUseID, "#") {
		sb.WriteString(`"id":` + string(jsonString(b.ToolUseID)) + `,`)
	}
	sb.WriteString(`"name":` + string(jsonString(b.Name)) + `,"response":{"output":` + string(jsonString(b.ResultText())) + `}}}`)
	return sb.Bytes()
}

func textType(req *request, role conv.Role) string {
	if req.API == "responses" {
		if role == conv.RoleAssistant {
			return "output_text"
		}
		return kInputText
	}
	return "text"
}
