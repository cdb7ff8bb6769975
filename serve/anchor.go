package serve

import (
	"bytes"
	"slices"
	"sort"
)

// Cache anchors on Anthropic's wire. The engine's micro clearing prices a
// rewrite assuming the request carries cache_control breakpoints on the
// blocks Engine.Hold names — the deepest cached prefix before the change,
// which the request reads, and the frontier of the latest batch, which
// the next batch reads back — as the agent's assembly places them
// (assemble.Builder.BuildHeld). The client places its own breakpoints by
// its own rules, so the proxy adds the engine's: a breakpoint on each held
// block, spliced into the client's bytes like any other edit, in the
// client's own form (its type and ttl). The Messages API takes at most
// maxBreakpoints; when adding would exceed them, the client's message
// breakpoints go, oldest first — never the system prompt's or the tools',
// never the newest message's — and when those are not enough, the held
// block the engine named last goes without. docs/serve.md has the rule.

// maxBreakpoints is the most cache_control breakpoints the Messages API
// takes in one request.
const maxBreakpoints = 4

// kBreakpointKey is a cache_control member's key and colon, as the proxy
// writes one.
const kBreakpointKey = `"cache_control":`

// anchoring is one render's plan for the engine's held anchors: which
// held blocks still want one, and the client's breakpoints the request
// carries.
type anchoring struct {
	body   []byte
	hold   []string        // the held ids, in the engine's order
	want   map[string]bool // held ids not yet seen in the render
	added  []string        // held ids the render put a breakpoint on
	sites  []site          // the client's breakpoints on message blocks, in order
	fixed  int             // the client's breakpoints outside messages (tools, system, automatic)
	before []byte          // the form of the last breakpoint before the messages
	auto   []byte          // the form of the automatic (top-level) breakpoint
	newest int             // the client's newest message
	heldAt map[[2]int]bool // the client blocks (message, block) the engine holds
}

// site is a breakpoint of the client's on a message block: block blk of
// message msg, its cache_control value at val; nested ones (on the blocks
// of a tool result's content) count n, at the block's content.
type site struct {
	msg, blk int
	val      span
	nested   bool
}

// newAnchoring plans the anchors for req: nil when there is nothing to
// place — no held block, a wire that caches by itself (OpenAI, Gemini),
// or a client that sends no breakpoint at all (it asked for no caching,
// and has no form to copy).
func newAnchoring(req *request, hold []string) *anchoring {
	if req.API != "messages" || len(hold) == 0 {
		return nil
	}
	body := req.Body
	an := &anchoring{body: body, hold: hold, want: make(map[string]bool, len(hold)), newest: len(req.Messages) - 1}
	for _, id := range hold {
		an.want[id] = true
	}
	for _, sp := range []span{req.ToolsSpan, req.System} {
		if !sp.ok() || body[sp.s] != '[' || !bytes.Contains(body[sp.s:sp.e], kCacheControl) {
			continue
		}
		elems(body, sp, func(_ int, e span) error {
			if body[e.s] == '{' {
				if v := member(body, e, kCacheControl); isBreakpoint(body, v) {
					an.fixed++
					an.before = body[v.s:v.e]
				}
			}
			return nil
		})
	}
	if isBreakpoint(body, req.AutoCache) {
		an.fixed++
		an.auto = body[req.AutoCache.s:req.AutoCache.e]
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			b := &req.Messages[i].Blocks[j]
			if isBreakpoint(body, b.CC) {
				an.sites = append(an.sites, site{msg: i, blk: j, val: b.CC})
			}
			for range b.Nested {
				an.sites = append(an.sites, site{msg: i, blk: j, val: b.Content, nested: true})
			}
		}
	}
	if an.fixed == 0 && len(an.sites) == 0 {
		return nil
	}
	return an
}

// isBreakpoint reports whether a cache_control value sets a breakpoint
// (an object; null sets none).
func isBreakpoint(body []byte, v span) bool { return v.ok() && body[v.s] == '{' }

// wants reports whether the render should anchor block id.
func (an *anchoring) wants(id string) bool { return an != nil && an.want[id] }

// done notes that block id needs nothing more: anchored (added true), by
// the client already, or unable to carry a breakpoint.
func (an *anchoring) done(id string, added bool) {
	delete(an.want, id)
	if added {
		an.added = append(an.added, id)
	}
}

// form is the cache_control value for a breakpoint after client message
// msg (-1: before every message): the client's nearest breakpoint after
// it, else its nearest before, so the ttls the client ordered (1h before
// 5m) stay ordered.
func (an *anchoring) form(msg int) []byte {
	for _, s := range an.sites {
		if s.msg > msg && !s.nested {
			return an.body[s.val.s:s.val.e]
		}
	}
	if an.auto != nil {
		return an.auto
	}
	for i := len(an.sites) - 1; i >= 0; i-- {
		if s := an.sites[i]; s.msg <= msg && !s.nested {
			return an.body[s.val.s:s.val.e]
		}
	}
	if an.before != nil {
		return an.before
	}
	return []byte(`{"type":"ephemeral"}`)
}

// anchorable reports whether a block of the client's type may carry a
// breakpoint (thinking may not; a type the proxy does not know is left
// alone).
func anchorable(typ string) bool {
	switch typ {
	case "text", "image", "document", "search_result", "tool_use", "tool_result", "tool_reference":
		return true
	}
	return false
}

// withBreakpoint is the object part x (ending in '}') with a cache_control
// member of value form added; x is not changed.
func withBreakpoint(x, form []byte) []byte {
	i := len(x) - 1
	out := make([]byte, 0, len(x)+len(kBreakpointKey)+len(form)+1)
	out = append(out, x[:i]...)
	out = append(out, ',')
	out = append(out, kBreakpointKey...)
	out = append(out, form...)
	return append(out, x[i:]...)
}

// anchorInPlace puts a breakpoint on b, a client block that keeps its
// place in the client's bytes, unless it has one; sp holds the render's
// splices so far, sp[own] the block's own edit (own -1: none).
func (m *mirror) anchorInPlace(pc *partsCache, b string, sp []splice, own int) []splice {
	an := pc.an
	o, ok := m.origin[b]
	if !ok {
		return sp
	}
	ps := pc.parts(o.msg)
	if o.part >= len(ps) {
		an.done(b, false)
		return sp
	}
	p := ps[o.part]
	msg := pc.req.Messages[o.msg]
	body := pc.req.Body
	if !anchorable(p.typ) {
		an.done(b, false)
		return sp
	}
	form := an.form(o.msg)
	last := own
	switch {
	case last >= 0 && sp[last].s == p.whole.s && sp[last].e == p.whole.e && !p.str:
		// The engine rewrote the whole part: the breakpoint goes into it.
		sp[last].repl = withBreakpoint(sp[last].repl, form)
	case p.blk >= 0 && isBreakpoint(body, msg.Blocks[p.blk].CC):
		an.done(b, false) // the client anchored it
		return sp
	case p.str:
		// A string content becomes one text part carrying the breakpoint.
		val := body[p.val.s:p.val.e]
		if last >= 0 && sp[last].s == p.val.s && sp[last].e == p.val.e {
			val, sp = sp[last].repl, slices.Delete(sp, last, last+1)
		}
		if overlaps(sp, p.whole.s, p.whole.e) {
			an.done(b, false)
			return sp
		}
		var x bytes.Buffer
		x.WriteString(`[{"type":"text","text":`)
		x.Write(val)
		x.WriteString("," + kBreakpointKey)
		x.Write(form)
		x.WriteString(`}]`)
		sp = append(sp, splice{s: p.whole.s, e: p.whole.e, repl: x.Bytes()})
	case body[p.whole.e-1] == '}' && !overlaps(sp, p.whole.e-1, p.whole.e-1):
		sp = append(sp, splice{s: p.whole.e - 1, e: p.whole.e - 1, repl: append([]byte(","+kBreakpointKey), form...)})
	default:
		an.done(b, false)
		return sp
	}
	an.done(b, true)
	return sp
}

// anchorWritten puts a breakpoint on x, the bytes the render wrote for
// block id (client part p when client), unless it carries one.
func (pc *partsCache) anchorWritten(id string, x []byte, o origin, p part, client, same bool) []byte {
	an := pc.an
	at := -1
	if client {
		at = o.msg
		if same && p.blk >= 0 && isBreakpoint(pc.req.Body, pc.req.Messages[o.msg].Blocks[p.blk].CC) {
			an.done(id, false)
			return x
		}
	}
	if len(x) == 0 || x[0] != '{' || x[len(x)-1] != '}' || client && same && !anchorable(p.typ) {
		an.done(id, false)
		return x
	}
	an.done(id, true)
	return withBreakpoint(x, an.form(at))
}

// overlaps reports whether a splice of [s, e) would overlap one in sp
// (an insertion, s == e, one that replaces bytes around s).
func overlaps(sp []splice, s, e int) bool {
	for _, x := range sp {
		if s == e && x.s < s && s < x.e || s < e && x.s < e && s < x.e || s < e && x.s == x.e && s < x.s && x.s < e {
			return true
		}
	}
	return false
}

// fit makes sp, the render's sorted splices with the anchors added, keep
// the request within maxBreakpoints: it counts the breakpoints the
// forwarded request carries and removes the client's message breakpoints
// that must go, oldest first. ok is false when even that is not enough
// (the system prompt, the tools and the newest message hold the rest):
// the caller renders again with one anchor fewer.
func (an *anchoring) fit(req *request, sp []splice) ([]splice, bool) {
	n := an.fixed
	for _, x := range sp {
		n += breakpointKeys(x.repl)
	}
	// The client's breakpoints the splices left in place (one a splice
	// rewrote or cut out is gone, or counted in the splice's copy), and
	// which of them may go.
	var wide []splice
	for _, x := range sp {
		if x.s < x.e {
			wide = append(wide, x)
		}
	}
	var droppable []site
	for _, s := range an.sites {
		k := sort.Search(len(wide), func(i int) bool { return wide[i].e > s.val.s })
		if k < len(wide) && wide[k].s <= s.val.s {
			continue
		}
		n++
		if !s.nested && !req.fixed(s.msg) && s.msg != an.newest && !an.heldAt[[2]int{s.msg, s.blk}] {
			droppable = append(droppable, s)
		}
	}
	over := n - maxBreakpoints
	if over <= 0 || len(an.added) == 0 {
		return sp, true // within the limit, or the client's own count
	}
	if over > len(droppable) {
		return sp, false
	}
	for _, s := range droppable[:over] {
		sp = append(sp, unanchor(an.body, s.val))
	}
	sort.SliceStable(sp, func(a, b int) bool { return sp[a].s < sp[b].s })
	return sp, true
}

// unanchor is the splice that removes the cache_control member whose
// value is at v, with its comma.
func unanchor(body []byte, v span) splice {
	i := v.s - 1
	for i > 0 && isWS(body[i]) {
		i--
	}
	// body[i] is the ':'; the key ends before it.
	i--
	for i > 0 && isWS(body[i]) {
		i--
	}
	ks := i + 1 - len(kCacheControl)
	j := ks - 1
	for j > 0 && isWS(body[j]) {
		j--
	}
	if body[j] == ',' {
		return splice{s: j, e: v.e}
	}
	// The first member: the comma after it goes.
	e := skipWS(body, v.e)
	if e < len(body) && body[e] == ',' {
		e = skipWS(body, e+1)
	}
	return splice{s: ks, e: e}
}

// breakpointKeys counts the cache_control members in b, JSON the proxy
// wrote or copied (a splice's replacement): keys, never string values.
func breakpointKeys(b []byte) int {
	if !bytes.Contains(b, kCacheControl) {
		return 0
	}
	n := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		e, err := stringEnd(b, i)
		if err != nil {
			return n
		}
		if bytes.Equal(b[i:e], kCacheControl) {
			if j := skipWS(b, e); j < len(b) && b[j] == ':' && isBreakpoint(b, span{skipWS(b, j+1), len(b)}) {
				n++
			}
		}
		i = e - 1
	}
	return n
}

// breakpointsIn counts the breakpoints on the elements of the list at sp
// (a tool result's content).
func breakpointsIn(body []byte, sp span) int {
	n := 0
	elems(body, sp, func(_ int, e span) error {
		if body[e.s] == '{' && isBreakpoint(body, member(body, e, kCacheControl)) {
			n++
		}
		return nil
	})
	return n
}
