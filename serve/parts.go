package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// The parts of a message: what the engine sees of a client's message, one
// conv block per part, and where each part's bytes are, so the engine's
// edits can be spliced back into them. Parts are read off the parsed
// model (request.go, openai.go) whatever the provider: a message's content
// is a string (one text part) or a list of parts, and its blocks — tool
// calls and results, which some providers keep outside the content —
// follow.

// partKind is what a part is to the engine.
type partKind uint8

const (
	partText partKind = iota
	partImage
	partToolUse
	partToolResult
	partThinking
	partRedacted
	partOpaque // anything else: counted, never changed
	// partSealed is a block the parser marked opaque (blockOpaque): a
	// Responses reasoning item with its encrypted content, another output
	// item, a Gemini part the proxy does not know. It goes upstream byte
	// for byte and leaves the request only with its turn.
	partSealed
)

// part is one content part of a wire message.
type part struct {
	kind  partKind
	whole span   // the part's element (an object), or the message's string content
	val   span   // text: the text string; tool_result: its content; tool_use: its input
	str   bool   // whole is the message's string content
	blk   int    // index into message.Blocks, -1 when the part is not a block
	typ   string // the part's type as the client wrote it
}

var (
	kText      = []byte(`"text"`)
	kIsError   = []byte(`"is_error"`)
	kThinking  = []byte(`"thinking"`)
	kInputText = "input_text"
	kAction    = []byte(`"action"`)
)

// kindOf classifies a part type.
func kindOf(typ string) partKind {
	switch typ {
	case "text", "input_text", "output_text":
		return partText
	case "image", "image_url", "input_image", "inline_data":
		return partImage
	case "tool_use":
		return partToolUse
	case "tool_result":
		return partToolResult
	case "thinking":
		return partThinking
	case "redacted_thinking":
		return partRedacted
	case blockOpaque:
		return partSealed
	}
	return partOpaque
}

// partsOf lists m's parts in order.
func partsOf(body []byte, m message) []part {
	var out []part
	inContent := func(sp span) bool { return m.Content.ok() && sp.s >= m.Content.s && sp.e <= m.Content.e }
	covered := false // a block covers the whole content (a tool message)
	for _, b := range m.Blocks {
		if b.Type == "tool_result" && b.Content == m.Content {
			covered = true
		}
	}
	switch {
	case !m.Content.ok() || covered:
	case body[m.Content.s] == '"':
		out = append(out, part{kind: partText, whole: m.Content, val: m.Content, str: true, blk: -1, typ: "text"})
	case body[m.Content.s] == '[':
		at := 0 // the next block of m.Blocks that may be a content element
		elems(body, m.Content, func(_ int, e span) error {
			for at < len(m.Blocks) && m.Blocks[at].Span.s < e.s {
				at++
			}
			if at < len(m.Blocks) && m.Blocks[at].Span == e {
				out = append(out, blockPart(body, m.Blocks[at], at))
				at++
				return nil
			}
			out = append(out, elemPart(body, e))
			return nil
		})
	}
	for i, b := range m.Blocks {
		if !inContent(b.Span) {
			out = append(out, blockPart(body, b, i))
		}
	}
	return out
}

// blockPart is the part of a parsed block.
func blockPart(body []byte, b block, i int) part {
	p := part{kind: kindOf(b.Type), whole: b.Span, blk: i, typ: b.Type}
	switch p.kind {
	case partToolResult:
		p.val = b.Content
	case partToolUse:
		p.val = b.Input
	case partText:
		p.val = member(body, b.Span, kText)
	}
	return p
}

// elemPart is the part of a content element the parser did not read as a
// block (an OpenAI message's parts).
func elemPart(body []byte, e span) part {
	p := part{kind: partOpaque, whole: e, blk: -1}
	if body[e.s] != '{' {
		return p
	}
	var text span
	members(body, e, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kType):
			p.typ = str(body, v)
		case bytes.Equal(k, kText) && body[v.s] == '"':
			text = v
		}
		return nil
	})
	p.kind = kindOf(p.typ)
	switch p.kind {
	case partText:
		if !text.ok() {
			p.kind = partOpaque
		}
		p.val = text
	case partToolUse, partToolResult, partThinking, partRedacted, partSealed:
		p.kind = partOpaque // only blocks the parser read are edited
	}
	return p
}

// member is the value of key in the object at sp.
func member(body []byte, sp span, key []byte) span {
	var out span
	if body[sp.s] != '{' {
		return out
	}
	members(body, sp, func(k []byte, v span) error {
		if bytes.Equal(k, key) {
			out = v
		}
		return nil
	})
	return out
}

// convBlock is the engine's block for part p of message m (role is the
// engine's: user or assistant). A sealed part (a Gemini part with a
// thoughtSignature) is pinned: the engine never cuts or clears it, though
// it leaves the context with its turn.
func convBlock(body []byte, m message, p part, role conv.Role) conv.Block {
	b := convBlockOf(body, m, p, role)
	if p.blk >= 0 && m.Blocks[p.blk].Sealed {
		b.Meta.Pinned, b.Meta.Compactable = true, false
	}
	return b
}

func convBlockOf(body []byte, m message, p part, role conv.Role) conv.Block {
	src := conv.SourceUser
	if role == conv.RoleAssistant {
		src = conv.SourceAssistant
	}
	raw := string(body[p.whole.s:p.whole.e])
	switch p.kind {
	case partText:
		return wire.Text(src, str(body, p.val))
	case partImage:
		b := conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"client"}`), Meta: conv.DefaultMeta(conv.TypeImage, src)}
		return b
	case partToolUse:
		b := m.Blocks[p.blk]
		var in json.RawMessage
		if p.val.ok() {
			in = json.RawMessage(body[p.val.s:p.val.e])
			if in[0] == '"' { // OpenAI: the arguments are a string holding JSON
				s := str(body, p.val)
				in = json.RawMessage(s)
				if !json.Valid(in) {
					in, _ = json.Marshal(map[string]string{"_raw_arguments": s})
				}
			}
		} else {
			in = json.RawMessage(`{}`)
		}
		return conv.NewToolUse(b.ToolUseID, b.Name, in)
	case partToolResult:
		b := m.Blocks[p.blk]
		isErr := false
		if body[b.Span.s] == '{' {
			if v := member(body, b.Span, kIsError); v.ok() {
				isErr = string(body[v.s:v.e]) == "true"
			}
		}
		if !p.val.ok() {
			// A result whose content the proxy cannot replace (a Gemini
			// response of another shape): counted as its bytes, never
			// changed.
			nb := conv.NewToolResult(b.ToolUseID, b.Name, raw, isErr)
			nb.Meta.Pinned, nb.Meta.Compactable = true, false
			return nb
		}
		nb := conv.NewToolResult(b.ToolUseID, b.Name, textOf(body, p.val), isErr)
		if body[p.val.s] == '[' && holdsOpaque(body, p.val) {
			// A result holding a part the proxy does not read (tool
			// search's tool_reference): never cleared, which would lose it.
			nb.Meta.Pinned, nb.Meta.Compactable = true, false
		}
		if p.val.ok() && body[p.val.s] == '[' && bytes.Contains(body[p.val.s:p.val.e], []byte(`image`)) {
			// A result with images: its text, and each image at its
			// fixed cost.
			nb.Content = append(nb.Content, conv.NewText(conv.SourceTool, nb.Text))
			elems(body, p.val, func(_ int, e span) error {
				if body[e.s] == '{' && kindOf(str(body, member(body, e, kType))) == partImage {
					nb.Content = append(nb.Content, conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"client"}`), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceTool)})
				}
				return nil
			})
			nb.Text = ""
		}
		return nb
	case partThinking:
		text := raw
		if v := member(body, p.whole, kThinking); v.ok() {
			text = str(body, v)
		}
		return conv.NewThinking(text, "client")
	case partRedacted:
		return conv.Block{Type: conv.TypeRedactedThinking, Data: raw, Meta: conv.DefaultMeta(conv.TypeRedactedThinking, src)}
	case partSealed:
		if role == conv.RoleAssistant && body[p.whole.s] == '{' && str(body, member(body, p.whole, kType)) == "web_search_call" {
			// A search the provider ran (Responses, Codex 0.117+): a
			// server tool call, which no result answers; its bytes go
			// upstream as the client wrote them.
			action := json.RawMessage(`{}`)
			if v := member(body, p.whole, kAction); v.ok() && body[v.s] == '{' {
				action = json.RawMessage(body[v.s:v.e])
			}
			b := conv.NewServerToolUse(providerClient, str(body, member(body, p.whole, kID)), "web_search", action, json.RawMessage(raw))
			b.Meta.Pinned = true
			return b
		}
		if role == conv.RoleAssistant {
			// The engine's encrypted thinking: counted as its bytes, never
			// edited, dropped (not summarized) with the turn it belongs to,
			// and, being in the same conv message as the items after it,
			// never parted from them.
			b := conv.Block{Type: conv.TypeRedactedThinking, Data: raw, Meta: conv.DefaultMeta(conv.TypeRedactedThinking, src)}
			b.Meta.Pinned, b.Meta.Compactable = true, false
			return b
		}
	}
	if p.kind == partOpaque && p.whole.ok() && body[p.whole.s] == '{' {
		// A block the proxy does not read (tool search's tool_reference,
		// a newer type): an opaque block of the client's own format,
		// counted as its bytes, never changed, sent as the client wrote it.
		b := conv.NewOpaque(providerClient, json.RawMessage(raw), src)
		b.Meta.Pinned = true
		return b
	}
	// Anything else is counted as its JSON and never changed.
	b := conv.NewText(src, raw)
	b.Meta.Pinned, b.Meta.Compactable = true, false
	return b
}

// providerClient is the Provider of the opaque blocks the proxy reads off
// a client's request: their bytes are in the client's own wire format, and
// only the client's request, which keeps them, carries them upstream.
const providerClient = "client"

// holdsOpaque reports whether the list at sp has an element of a type
// the proxy does not read.
func holdsOpaque(body []byte, sp span) bool {
	found := false
	elems(body, sp, func(_ int, e span) error {
		if body[e.s] == '{' {
			k := kindOf(str(body, member(body, e, kType)))
			found = found || k != partText && k != partImage
		}
		return nil
	})
	return found
}

// partHash names a part by its bytes, cache_control left out.
func partHash(body []byte, m message, p part) string {
	if p.blk >= 0 && m.Blocks[p.blk].Hash != "" && m.Blocks[p.blk].Span == p.whole {
		return m.Blocks[p.blk].Hash
	}
	h := sha256.New()
	if p.str {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
	}
	if err := hashValue(h, body, p.whole); err != nil {
		h.Write(body[p.whole.s:p.whole.e])
	}
	return sum(h)
}
