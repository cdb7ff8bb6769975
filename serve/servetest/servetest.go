// Package servetest checks what a context-management proxy sent upstream
// against what its client sent it: the invariants DESIGN.md states for
// ctxkit serve, on the bytes, without asking the proxy what it decided.
// Tests of package serve, of package bench/proxy and of any proxy call
// [Check] after every upstream request.
//
// The checks, for a client request and the request the proxy forwarded
// for it (Anthropic Messages, OpenAI chat completions, OpenAI Responses or
// Gemini generateContent bodies; a Responses item is read as a message
// whose one block is the item, a reasoning or compaction item as a
// thinking block, and a Gemini content's parts as its blocks, a thought
// part or a part with a thoughtSignature as a thinking block):
//
//   - the hard limit (invariant 6): the forwarded request counts at most
//     Limits.Limit tokens with Limits.Counter (the project's estimator),
//     encrypted reasoning at what the provider reported for it
//     (Limits.Sealed), as the engine counts it;
//   - the user's words: the client's newest message goes upstream byte
//     for byte, except one block of it that alone counts more than the
//     engine's oversize guard (Limits.Guard); when it is all that is left of the
//     client's messages (its system messages aside, kept byte for byte
//     before it), the summary of the rest may open it (text blocks
//     before its own, which follow byte for byte, a string content as
//     one text part holding the client's string: roles alternate, so a
//     summary has no message of its own there);
//   - one summary: at most one summary block (a text block starting
//     "<summary") that the client did not send;
//   - every other byte is the client's (invariant 7): everything outside
//     "messages" is byte-identical; every forwarded message is either the
//     client's, byte for byte, or the client's message at that place with
//     some of its blocks changed, dropped or added, its other keys
//     byte-identical and its untouched blocks byte-identical; thinking
//     blocks are never changed; the client's messages the proxy left out
//     form runs (a summary or a cut replaces a run; the summary may open
//     the first message kept after the run, text blocks before its own).
//     Messages the proxy added hold only text blocks.
//   - cache anchors (Messages API): besides those edits, a block's
//     cache_control may change in two ways only — a breakpoint added (a
//     string content may become one text part holding the client's string
//     and the breakpoint), in a form the client used, and a client's
//     breakpoint removed from a block otherwise unchanged (a block the
//     proxy rewrote may lose its own with the rewrite); never on the
//     newest message, never a thinking block, never a breakpoint's value
//     changed. A request the proxy added
//     breakpoints to carries at most 4; it removed the client's only when
//     adding needed the room (the request carries 4) and oldest first.
//
// What the proxy changed is returned as an [Edits], so a test can also
// compare it with what the proxy says it decided.
package servetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/wire"
)

// Limits are what Check measures against.
type Limits struct {
	// Window is the proxy's context window, in tokens.
	Window int
	// Guard is the engine's oversize guard at Window (micro.Guard(Window)
	// when 0): a block of the client's newest message that counts more
	// may be cut to head and tail.
	Guard int
	// Limit is the hard limit: the most tokens a forwarded request may
	// count (compact.Config.Budget().Limit for the window and the
	// request's max_tokens); 0 skips the check.
	Limit int
	// Counter counts tokens (tokens.NewEstimator()).
	Counter conv.Counter
	// OpenAI is true for chat completions bodies.
	OpenAI bool
	// Sealed, when set, is what an encrypted reasoning item (a Responses
	// reasoning item's encrypted_content, redacted thinking's data) costs
	// in the context, as the engine counts it: the output tokens the
	// provider reported for it, not its ciphertext, which says nothing of
	// its cost. ok is false for one it does not know, counted from its
	// bytes with Counter.
	Sealed func(data string) (tokens int, ok bool)
}

// guard is Guard, or the engine's at Window.
func (l Limits) guard() int {
	if l.Guard > 0 {
		return l.Guard
	}
	return micro.Guard(l.Window)
}

// Edits is what the proxy changed, as Check found it.
type Edits struct {
	Tokens     int // tokens of the forwarded request (0 when not counted)
	Dropped    int // client messages left out
	Added      int // messages the proxy added
	Changed    int // blocks (or string contents) changed in place
	Removed    int // blocks removed from a kept message
	New        int // blocks added to a kept message
	Summaries  int // summary blocks the client did not send
	Anchored   int // breakpoints added on the client's blocks (or in messages the proxy added)
	Unanchored int // the client's breakpoints removed from blocks it kept
}

// maxBreakpoints is the most cache_control breakpoints the Messages API
// takes in one request.
const maxBreakpoints = 4

// ErrChanged is wrapped by every violation Check reports.
var ErrChanged = errors.New("servetest: the proxy broke an invariant")

// Check compares upstream, the body the proxy forwarded, with client, the
// body the client sent it, and returns what changed and every invariant
// broken (an error wrapping ErrChanged, nil when none is).
func Check(client, upstream []byte, lim Limits) (Edits, error) {
	var ed Edits
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrChanged}, args...)...))
	}
	k := kindOf(client)
	cs, cm, err := valueSpan(client, k.key)
	if err != nil {
		return ed, fmt.Errorf("servetest: the client's request: %w", err)
	}
	us, um, err := valueSpan(upstream, k.key)
	if err != nil {
		return ed, fmt.Errorf("servetest: the forwarded request: %w", err)
	}
	if !bytes.Equal(without(client, cs), without(upstream, us)) {
		bad("the bytes outside %s differ from the client's", k.key)
	}
	cmsgs, err := k.parse(cm)
	if err != nil {
		return ed, fmt.Errorf("servetest: the client's messages: %w", err)
	}
	umsgs, err := k.parse(um)
	if err != nil {
		return ed, fmt.Errorf("servetest: the forwarded messages: %w", err)
	}
	if lim.Limit > 0 && lim.Counter != nil {
		ed.Tokens, err = count(upstream, k.decode, lim)
		if err != nil {
			return ed, fmt.Errorf("servetest: counting the forwarded request: %w", err)
		}
		if ed.Tokens > lim.Limit {
			bad("the forwarded request counts %d tokens, over the hard limit %d", ed.Tokens, lim.Limit)
		}
	}
	clientBlocks := map[string]bool{}
	for _, m := range cmsgs {
		for _, b := range m.blocks {
			clientBlocks[string(b.raw)] = true
		}
	}
	an := &anchors{forms: breakpointForms(client)}
	ci := 0
	lastPair := -1
	lead := true // every forwarded message so far is a system message of the client's, byte for byte
	for ui := range umsgs {
		u := &umsgs[ui]
		first := lead
		var j int
		if n := len(cmsgs); first && ui == len(umsgs)-1 && ci < n && cmsgs[n-1].role == u.role && opened(u, &cmsgs[n-1]) {
			j = n - 1 // what replaced the rest opens the newest message, all that is left
		} else {
			var next *message
			if ui+1 < len(umsgs) {
				next = &umsgs[ui+1]
			}
			j = match(u, next, cmsgs, ci)
		}
		lead = lead && j >= 0 && bytes.Equal(u.raw, cmsgs[j].raw) && isSystem(u.role)
		if j < 0 {
			ed.Added++
			for _, b := range u.blocks {
				if b.typ != "text" {
					bad("message %d was added by the proxy and holds a %s block", ui, b.typ)
				}
				if isSummary(b) {
					ed.Summaries++
				}
				if b.cc != nil && !clientBlocks[string(b.raw)] {
					an.added(ui, b.cc, false, bad, &ed)
				}
			}
			continue
		}
		ed.Dropped += j - ci
		ci = j + 1
		lastPair = j
		c := &cmsgs[j]
		if bytes.Equal(u.raw, c.raw) {
			an.keep(j, c.blocks, j == len(cmsgs)-1)
			continue
		}
		if !bytes.Equal(u.rest, c.rest) {
			bad("message %d: keys besides content differ from the client's message %d", ui, j)
		}
		compareBlocks(ui, u, c, j, &ed, clientBlocks, bad, j == len(cmsgs)-1, first, lim, an)
	}
	if k.key == "messages" {
		an.check(upstream, &ed, bad)
	}
	ed.Dropped += len(cmsgs) - ci
	if n := len(cmsgs); n > 0 && lastPair != n-1 {
		bad("the client's newest message (%d) is not the forwarded request's last", n-1)
	}
	if ed.Summaries > 1 {
		bad("%d summary blocks the client did not send (at most one)", ed.Summaries)
	}
	return ed, errors.Join(errs...)
}

// compareBlocks compares a forwarded message with the client's message it
// stands for. newest is true for the client's newest message, first when
// only the client's system messages (chat completions' system and
// developer messages, Responses' instruction items) come before u.
func compareBlocks(ui int, u, c *message, j int, ed *Edits, clientBlocks map[string]bool, bad func(string, ...any), newest, first bool, lim Limits, an *anchors) {
	if opened(u, c) {
		// What replaced a run opens the message after it (roles
		// alternate, so it has no message of its own), whose own blocks
		// follow unchanged: the newest message only when it is all that
		// is left.
		if newest && !first {
			bad("message %d: a block was added to the client's newest message", ui)
		}
		p := len(u.blocks) - len(c.blocks)
		if c.str != nil {
			p = len(u.blocks) - 1
		}
		ed.New += p
		for _, b := range u.blocks[:p] {
			if isSummary(b) && !clientBlocks[string(b.raw)] {
				ed.Summaries++
			}
			if b.cc != nil && !clientBlocks[string(b.raw)] {
				an.added(ui, b.cc, false, bad, ed)
			}
		}
		return
	}
	changedNewest := 0
	if c.str != nil && u.str == nil && len(u.blocks) == 1 {
		if cc, ok := anchoredText(u.blocks[0].raw, c.strRaw); ok {
			// The client's string as one text part with a breakpoint.
			an.added(ui, cc, newest, bad, ed)
			return
		}
	}
	if u.str != nil || c.str != nil {
		// A string content is one block.
		ed.Changed++
		if newest && !(c.str != nil && lim.Counter != nil && lim.Counter.Count(*c.str) > lim.guard()) {
			bad("message %d: the client's newest message changed", ui)
		}
		return
	}
	k := 0
	for _, b := range u.blocks {
		at := -1
		for x := k; x < len(c.blocks); x++ {
			if bytes.Equal(c.blocks[x].plain(), b.plain()) {
				at = x
				break
			}
		}
		if at >= 0 {
			ed.Removed += at - k
			k = at + 1
			an.moved(ui, j, at, &c.blocks[at], &b, newest, bad, ed)
			continue
		}
		// The same tool call or result, changed; or a block changed in
		// its place.
		at = -1
		for x := k; x < len(c.blocks); x++ {
			if b.id != "" && c.blocks[x].id == b.id && c.blocks[x].typ == b.typ {
				at = x
				break
			}
		}
		if at < 0 && k < len(c.blocks) && c.blocks[k].typ == b.typ && b.typ != "text" {
			at = k
		}
		if at < 0 && k < len(c.blocks) && b.typ == "text" && c.blocks[k].typ == "text" && !isSummary(b) {
			at = k
		}
		if at < 0 {
			ed.New++
			if b.typ != "text" {
				bad("message %d: the proxy added a %s block", ui, b.typ)
			}
			if isSummary(b) && !clientBlocks[string(b.raw)] {
				ed.Summaries++
			}
			if newest {
				bad("message %d: a block was added to the client's newest message", ui)
			}
			continue
		}
		ed.Removed += at - k
		k = at + 1
		ed.Changed++
		o := c.blocks[at]
		if o.cc == nil || b.cc != nil {
			// A breakpoint added on a changed block; one the change
			// itself left out is the change's.
			an.moved(ui, j, at, &o, &b, newest, bad, ed)
		}
		if o.typ == "thinking" || o.typ == "redacted_thinking" {
			bad("message %d: a %s block changed", ui, o.typ)
		}
		if newest {
			changedNewest++
			if lim.Counter == nil || lim.Counter.Count(string(o.raw)) <= lim.guard() {
				bad("message %d: a block of the client's newest message changed, and it is not over the oversize guard's %d tokens", ui, lim.guard())
			}
		}
	}
	ed.Removed += len(c.blocks) - k
	if newest && len(c.blocks)-k > 0 {
		bad("message %d: blocks of the client's newest message were removed", ui)
	}
	if changedNewest > 1 {
		bad("message %d: %d blocks of the client's newest message changed (at most one)", ui, changedNewest)
	}
}

// opened reports whether u is c with text blocks put before its own,
// which follow byte for byte; a string content c follows as one text
// part holding the client's string byte for byte (a list can hold the
// blocks put before it, a string cannot).
func opened(u, c *message) bool {
	own := len(c.blocks)
	if c.str != nil {
		own = 1
	}
	p := len(u.blocks) - own
	if u.str != nil || p <= 0 {
		return false
	}
	for i, b := range u.blocks {
		switch {
		case i < p:
			if b.typ != "text" {
				return false
			}
		case c.str != nil:
			if !textPartOf(b.raw, c.strRaw) {
				return false
			}
		case !bytes.Equal(b.raw, c.blocks[i-p].raw):
			return false
		}
	}
	return true
}

// textPartOf reports whether part is a text part (chat completions'
// "text", Responses' "input_text" or "output_text") whose text is the
// JSON string s byte for byte, and nothing else.
func textPartOf(part, s json.RawMessage) bool {
	var f map[string]json.RawMessage
	if json.Unmarshal(part, &f) != nil || len(f) != 2 {
		return false
	}
	switch string(f["type"]) {
	case `"text"`, `"input_text"`, `"output_text"`:
		return bytes.Equal(f["text"], s)
	}
	return false
}

// isSystem reports whether a message of role (as parseMessages and
// parseItems name roles) is a system message: instructions the client
// sends among its messages, not a turn of the conversation.
func isSystem(role string) bool {
	switch role {
	case "system", "developer", "message:system", "message:developer":
		return true
	}
	return false
}

// isSummary reports whether a text block is a summary block.
func isSummary(b block) bool {
	return b.typ == "text" && strings.HasPrefix(strings.TrimSpace(b.text), "<summary")
}

// message is one message of a request, as bytes.
type message struct {
	raw    json.RawMessage
	role   string
	rest   []byte          // the message without its content value
	str    *string         // content, when a string
	strRaw json.RawMessage // the string content as the client wrote it
	blocks []block
}

type block struct {
	raw  json.RawMessage
	typ  string
	id   string // tool_use id or tool_result tool_use_id
	text string
	cc   json.RawMessage // its cache_control breakpoint (Messages API), if any
	bare json.RawMessage // raw without its cache_control member
}

func parseMessages(raw json.RawMessage) ([]message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, err
	}
	out := make([]message, len(raws))
	for i, r := range raws {
		m := message{raw: r}
		var f struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r, &f); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		m.role = f.Role
		span, content, err := valueSpan(r, "content")
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		m.rest = without(r, span)
		var s string
		switch {
		case len(content) == 0 || string(content) == "null":
		case json.Unmarshal(content, &s) == nil:
			if f.ToolCallID != "" {
				// An OpenAI tool message is one tool result.
				m.blocks = []block{{raw: content, typ: "tool_result", id: f.ToolCallID, text: s}}
			} else {
				m.str, m.strRaw = &s, content
			}
		default:
			var bs []json.RawMessage
			if err := json.Unmarshal(content, &bs); err != nil {
				return nil, fmt.Errorf("message %d: content: %w", i, err)
			}
			for _, b := range bs {
				var bf struct {
					Type      string `json:"type"`
					ID        string `json:"id"`
					ToolUseID string `json:"tool_use_id"`
					Text      string `json:"text"`
				}
				_ = json.Unmarshal(b, &bf)
				id := bf.ID
				if bf.ToolUseID != "" {
					id = bf.ToolUseID
				}
				bare, cc := unanchored(b)
				m.blocks = append(m.blocks, block{raw: b, typ: bf.Type, id: id, text: bf.Text, cc: cc, bare: bare})
			}
		}
		out[i] = m
	}
	return out, nil
}

// match is the index of the client's message, from ci on, that forwarded
// message u stands for: the first byte-identical one; else one that u
// opens (text blocks put before its own, which follow byte for byte: what
// replaced the run before it), the one the next forwarded message follows
// byte for byte if there is such (a kept message may be byte-identical to
// earlier ones: "yes"); else the first of the same role sharing a block
// or a tool call id, else the client's message at ci when it has u's
// role; -1 when u is the proxy's own.
func match(u, next *message, cmsgs []message, ci int) int {
	for j := ci; j < len(cmsgs); j++ {
		if bytes.Equal(cmsgs[j].raw, u.raw) {
			return j
		}
	}
	open := -1
	for j := ci; j < len(cmsgs); j++ {
		if cmsgs[j].role != u.role || !opened(u, &cmsgs[j]) {
			continue
		}
		if next != nil && j+1 < len(cmsgs) && bytes.Equal(cmsgs[j+1].raw, next.raw) {
			return j
		}
		if open < 0 {
			open = j
		}
	}
	if open >= 0 {
		return open
	}
	for j := ci; j < len(cmsgs); j++ {
		if cmsgs[j].role == u.role && shares(u, &cmsgs[j]) {
			return j
		}
	}
	if ci < len(cmsgs) && cmsgs[ci].role == u.role {
		return ci
	}
	return -1
}

func shares(u, c *message) bool {
	for _, a := range u.blocks {
		for _, b := range c.blocks {
			if bytes.Equal(a.plain(), b.plain()) && !isSummary(a) || a.id != "" && a.id == b.id {
				return true
			}
		}
	}
	return false
}

// kind is a wire format as Check reads it: the key of the history, how
// its elements become messages, and how the body decodes for counting.
type kind struct {
	key    string
	parse  func(json.RawMessage) ([]message, error)
	decode func([]byte) (*llm.Request, error)
}

// kindOf tells the format of a client's body by its history's key.
func kindOf(body []byte) kind {
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	switch {
	case top["contents"] != nil:
		return kind{"contents", parseContents, wire.DecodeGemini}
	case top["input"] != nil && top["messages"] == nil:
		return kind{"input", parseItems, wire.DecodeResponses}
	}
	return kind{"messages", parseMessages, nil}
}

// parseItems reads Responses input items as messages of one block each:
// a message item's role is its role and its blocks its content parts;
// any other item is a message of its type (role) with the item as its
// one block, reasoning and compaction items as thinking.
func parseItems(raw json.RawMessage) ([]message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, err
	}
	out := make([]message, len(raws))
	for i, r := range raws {
		var f struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			CallID  string          `json:"call_id"`
			Output  json.RawMessage `json:"output"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r, &f); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		if f.Type == "" {
			f.Type = "message"
		}
		m := message{raw: r, role: f.Type + ":" + f.Role}
		if f.Type == "message" {
			span, content, err := valueSpan(r, "content")
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			m.rest = without(r, span)
			var s string
			if json.Unmarshal(content, &s) == nil {
				m.str, m.strRaw = &s, content
			} else {
				var ps []json.RawMessage
				if err := json.Unmarshal(content, &ps); err != nil {
					return nil, fmt.Errorf("item %d: content: %w", i, err)
				}
				for _, p := range ps {
					var pf struct {
						Text string `json:"text"`
					}
					_ = json.Unmarshal(p, &pf)
					m.blocks = append(m.blocks, block{raw: p, typ: "text", text: pf.Text})
				}
			}
			out[i] = m
			continue
		}
		typ := f.Type
		switch f.Type {
		case "reasoning", "compaction":
			typ = "thinking"
		case "function_call", "custom_tool_call", "local_shell_call":
			typ = "tool_use"
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			typ = "tool_result"
		}
		m.role = "item" // calls and outputs change in place, never their kind
		m.blocks = []block{{raw: r, typ: typ, id: f.CallID}}
		out[i] = m
	}
	return out, nil
}

// parseContents reads Gemini contents as messages whose blocks are their
// parts: a thought part, or any part with a thoughtSignature (signed by
// the provider), is thinking and may not change.
func parseContents(raw json.RawMessage) ([]message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, err
	}
	out := make([]message, len(raws))
	for i, r := range raws {
		var f struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(r, &f); err != nil {
			return nil, fmt.Errorf("content %d: %w", i, err)
		}
		span, parts, err := valueSpan(r, "parts")
		if err != nil {
			return nil, fmt.Errorf("content %d: %w", i, err)
		}
		m := message{raw: r, role: f.Role, rest: without(r, span)}
		var ps []json.RawMessage
		if err := json.Unmarshal(parts, &ps); err != nil {
			return nil, fmt.Errorf("content %d: parts: %w", i, err)
		}
		for _, p := range ps {
			var pf struct {
				Text         *string `json:"text"`
				Thought      bool    `json:"thought"`
				Signature    string  `json:"thoughtSignature"`
				FunctionCall *struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"functionCall"`
				FunctionResponse *struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"functionResponse"`
			}
			_ = json.Unmarshal(p, &pf)
			b := block{raw: p, typ: "text"}
			switch {
			case pf.FunctionCall != nil:
				b.typ, b.id = "tool_use", pf.FunctionCall.ID
			case pf.FunctionResponse != nil:
				b.typ, b.id = "tool_result", pf.FunctionResponse.ID
			case pf.Text != nil:
				b.text = *pf.Text
			default:
				b.typ = "data"
			}
			if pf.Thought || pf.Signature != "" {
				b.typ = "thinking"
			}
			m.blocks = append(m.blocks, b)
		}
		out[i] = m
	}
	return out, nil
}

// valueSpan finds the value of key in the JSON object obj: its byte span
// ([0 0] when absent) and its bytes.
func valueSpan(obj []byte, key string) ([2]int, json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(obj))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return [2]int{}, nil, errors.New("not a JSON object")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return [2]int{}, nil, err
		}
		k, _ := t.(string)
		off := int(d.InputOffset())
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return [2]int{}, nil, err
		}
		if k != key {
			continue
		}
		end := int(d.InputOffset())
		start := end - len(v)
		if start < off || !bytes.Equal(obj[start:end], v) {
			return [2]int{}, nil, fmt.Errorf("cannot place the %s value", key)
		}
		return [2]int{start, end}, v, nil
	}
	return [2]int{}, nil, nil
}

// without is b with span cut out.
func without(b []byte, span [2]int) []byte {
	out := make([]byte, 0, len(b)-(span[1]-span[0]))
	out = append(out, b[:span[0]]...)
	return append(out, b[span[1]:]...)
}

// count is the forwarded request's size with lim.Counter, as the engine
// counts a conversation.
func count(body []byte, decode func([]byte) (*llm.Request, error), lim Limits) (int, error) {
	switch {
	case decode != nil:
	case lim.OpenAI:
		decode = wire.DecodeOpenAI
	default:
		decode = wire.DecodeAnthropic
	}
	req, err := decode(body)
	if err != nil {
		return 0, err
	}
	if lim.Sealed != nil {
		for i := range req.Messages {
			for j := range req.Messages[i].Blocks {
				b := &req.Messages[i].Blocks[j]
				if b.Type != conv.TypeRedactedThinking {
					continue
				}
				if n, ok := lim.Sealed(b.Data); ok && n > 0 {
					b.Meta.Tokens = n
				}
			}
		}
	}
	c := &conv.Conversation{System: req.System, Tools: req.Tools, Messages: req.Messages}
	return c.Tokens(lim.Counter).Total(), nil
}

// plain is the block's bytes without its breakpoint.
func (b *block) plain() []byte {
	if b.bare != nil {
		return b.bare
	}
	return b.raw
}

// anchors follows the cache breakpoints of a forwarded Messages request
// against the client's.
type anchors struct {
	forms   map[string]bool // the cache_control values the client used
	removed [][2]int        // the client's blocks (message, block) whose breakpoint went
	kept    [][2]int        // the client's blocks, not in its newest message, whose breakpoint stayed
}

// added notes a breakpoint the proxy added in forwarded message ui.
func (an *anchors) added(ui int, cc json.RawMessage, newest bool, bad func(string, ...any), ed *Edits) {
	ed.Anchored++
	if newest {
		bad("message %d: a breakpoint was added to the client's newest message", ui)
	}
	if !an.forms[string(cc)] {
		bad("message %d: a breakpoint %s in a form the client never used", ui, cc)
	}
}

// moved compares the breakpoint of forwarded block u with the client's
// block c, block at of client message j.
func (an *anchors) moved(ui, j, at int, c, u *block, newest bool, bad func(string, ...any), ed *Edits) {
	switch {
	case bytes.Equal(c.cc, u.cc):
		if c.cc != nil && !newest {
			an.kept = append(an.kept, [2]int{j, at})
		}
	case c.cc == nil:
		if c.typ == "thinking" || c.typ == "redacted_thinking" {
			bad("message %d: a breakpoint was added to a %s block", ui, c.typ)
		}
		an.added(ui, u.cc, newest, bad, ed)
	case u.cc == nil:
		ed.Unanchored++
		if newest {
			bad("message %d: the breakpoint of the client's newest message was removed", ui)
		}
		an.removed = append(an.removed, [2]int{j, at})
	default:
		bad("message %d: the client's breakpoint %s became %s", ui, c.cc, u.cc)
	}
}

// keep notes the breakpoints of client message j, forwarded as it was.
func (an *anchors) keep(j int, bs []block, newest bool) {
	if newest {
		return
	}
	for at := range bs {
		if bs[at].cc != nil {
			an.kept = append(an.kept, [2]int{j, at})
		}
	}
}

// check verifies the request's breakpoints as a whole once every message
// was compared: at most maxBreakpoints when the proxy added any, the
// client's removed only for room and oldest first.
func (an *anchors) check(upstream []byte, ed *Edits, bad func(string, ...any)) {
	if ed.Anchored == 0 && ed.Unanchored == 0 {
		return
	}
	n := len(breakpoints(upstream))
	if ed.Anchored > 0 && n > maxBreakpoints {
		bad("the forwarded request carries %d breakpoints, over the API's %d", n, maxBreakpoints)
	}
	if ed.Unanchored == 0 {
		return
	}
	if ed.Anchored == 0 || n < maxBreakpoints {
		bad("%d of the client's breakpoints removed that the room did not need (%d added, %d carried)", ed.Unanchored, ed.Anchored, n)
	}
	for _, r := range an.removed {
		for _, k := range an.kept {
			if k[0] < r[0] || k[0] == r[0] && k[1] < r[1] {
				bad("the client's breakpoint on message %d was removed before its older one on message %d", r[0], k[0])
				return
			}
		}
	}
}

// anchoredText reports whether part is a text part whose text is the JSON
// string s byte for byte with a breakpoint, and returns the breakpoint.
func anchoredText(part, s json.RawMessage) (json.RawMessage, bool) {
	var f map[string]json.RawMessage
	if json.Unmarshal(part, &f) != nil || len(f) != 3 || string(f["type"]) != `"text"` || !bytes.Equal(f["text"], s) {
		return nil, false
	}
	cc, ok := f["cache_control"]
	return cc, ok && len(cc) > 0 && cc[0] == '{'
}

// unanchored splits a content block into its bytes without its
// cache_control member (nil when it has none) and the breakpoint (nil
// when none, or null).
func unanchored(raw json.RawMessage) (json.RawMessage, json.RawMessage) {
	const key = `"cache_control"`
	if !bytes.Contains(raw, []byte(key)) {
		return nil, nil
	}
	sp, v, err := valueSpan(raw, "cache_control")
	if err != nil || v == nil {
		return nil, nil
	}
	i := sp[0] - 1
	for i > 0 && isSpace(raw[i]) {
		i--
	}
	i-- // before the ':'
	for i > 0 && isSpace(raw[i]) {
		i--
	}
	ks := i + 1 - len(key)
	j := ks - 1
	for j > 0 && isSpace(raw[j]) {
		j--
	}
	var bare []byte
	if raw[j] == ',' {
		bare = append(append(bare, raw[:j]...), raw[sp[1]:]...)
	} else {
		e := sp[1]
		for e < len(raw) && isSpace(raw[e]) {
			e++
		}
		if e < len(raw) && raw[e] == ',' {
			e++
		}
		bare = append(append(bare, raw[:ks]...), raw[e:]...)
	}
	if len(v) == 0 || v[0] != '{' {
		return bare, nil
	}
	return bare, v
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// breakpoints lists the cache_control breakpoints of a Messages request
// body, as the API counts them: the request's own (automatic caching),
// the tools', the system prompt's, and the message blocks' and theirs
// in a tool result's content.
func breakpoints(body []byte) []json.RawMessage {
	var top struct {
		CacheControl json.RawMessage   `json:"cache_control"`
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &top) != nil {
		return nil
	}
	var out []json.RawMessage
	var blocks func(list json.RawMessage, depth int)
	one := func(raw json.RawMessage, depth int) {
		var f struct {
			Type         string          `json:"type"`
			CacheControl json.RawMessage `json:"cache_control"`
			Content      json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &f) != nil {
			return
		}
		if len(f.CacheControl) > 0 && f.CacheControl[0] == '{' {
			out = append(out, f.CacheControl)
		}
		if f.Type == "tool_result" && depth == 0 {
			blocks(f.Content, 1)
		}
	}
	blocks = func(list json.RawMessage, depth int) {
		var l []json.RawMessage
		if json.Unmarshal(list, &l) != nil {
			return
		}
		for _, b := range l {
			one(b, depth)
		}
	}
	if len(top.CacheControl) > 0 && top.CacheControl[0] == '{' {
		out = append(out, top.CacheControl)
	}
	for _, t := range top.Tools {
		one(t, 1)
	}
	blocks(top.System, 1)
	for _, m := range top.Messages {
		blocks(m.Content, 0)
	}
	return out
}

// breakpointForms is the set of cache_control values body uses.
func breakpointForms(body []byte) map[string]bool {
	forms := map[string]bool{}
	for _, cc := range breakpoints(body) {
		forms[string(cc)] = true
	}
	return forms
}
