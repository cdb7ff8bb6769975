package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sort"
	"strings"
)

// request is the proxy's view of a client's request body: where its parts
// are (byte spans into Body) and the content hash of each message and
// block. It never holds a second copy of the body.
type request struct {
	Body     []byte
	Provider string // "anthropic", "openai" or "gemini"
	API      string // the endpoint: "messages", "chat", "responses" or "gemini"
	Model    string
	Stream   bool
	MaxOut   int
	// MaxSpan is the value MaxOut was read from (max_tokens,
	// max_completion_tokens, max_output_tokens), if any; Thinking is an
	// Anthropic request's thinking budget_tokens, which max_tokens must
	// stay above.
	MaxSpan  span
	Thinking int
	System   span // the system value (Anthropic; Gemini's systemInstruction), if any
	// Instructions is a Responses request's instructions value, if any:
	// counted with the system prompt, never part of the session's key.
	Instructions span
	UserID       string
	CacheKey     string // OpenAI prompt_cache_key
	Tools        []string
	ToolsSpan    span // the tools value, if any
	Messages     []message
	MsgsSpan     span // the messages array
	// AutoCache is the top-level cache_control value (Anthropic's
	// automatic caching: a breakpoint on the last block), if any.
	AutoCache span
	// Fixed: messages [0, Fixed) are history the client compacted itself,
	// up to its last compaction item (Codex's: what it holds is
	// encrypted, so no summary could carry it). The engine counts them
	// as it counts the system prompt and never changes or summarizes
	// them.
	Fixed int
}

// fixed reports whether message i is outside the engine's conversation:
// a system or developer message, or the client's compacted history.
func (r *request) fixed(i int) bool {
	return i < r.Fixed || roleOf(r.Messages[i].Role) == ""
}

// systemMessages are the indexes of req's system and developer messages
// after the client's compacted history: with the system value, its system
// prompt.
func (r *request) systemMessages() []int {
	var out []int
	for i := r.Fixed; i < len(r.Messages); i++ {
		if roleOf(r.Messages[i].Role) == "" {
			out = append(out, i)
		}
	}
	return out
}

// pinnedItem reports whether m is an opaque item a summary may not
// replace: one that is neither the user's nor the assistant's (Codex's
// compaction item), as the parsers mark it.
func pinnedItem(m message) bool {
	return m.Role == "system" && len(m.Blocks) == 1 && m.Blocks[0].Type == blockOpaque
}

type message struct {
	Span    span
	Role    string
	Content span // the content value
	Str     bool // content is a string
	Blocks  []block
	Hash    string
	Bytes   int // raw size
}

type block struct {
	Span      span
	Type      string // the provider's block type, or blockOpaque
	Hash      string
	ToolUseID string // tool_result: the call it answers; tool_use: its id
	Content   span   // tool_result: the content value (OpenAI tool message: content)
	Name      string // tool_use name, or for a tool_result the tool it answers
	Input     span   // tool_use input
	// Sealed: the block carries a signature over its bytes (a Gemini
	// part's thoughtSignature) and goes upstream byte for byte: never cut.
	Sealed bool
	// CC is the block's own cache_control value (Anthropic), if any;
	// Nested counts the breakpoints on the blocks of a tool result's
	// content (anchor.go).
	CC     span
	Nested int
}

// blockOpaque is the Type of a block the proxy must send upstream byte for
// byte and never cut or clear: an encrypted reasoning item, a Codex
// compaction item, a Gemini part that carries a thought signature. It
// leaves the request only with the message that holds it.
const blockOpaque = "opaque"

// hashLen is how many hex digits of SHA-256 name content (64 bits).
const hashLen = 16

func sum(h hash.Hash) string {
	var buf [sha256.Size]byte
	return hex.EncodeToString(h.Sum(buf[:0]))[:hashLen]
}

var (
	kType         = []byte(`"type"`)
	kRole         = []byte(`"role"`)
	kContent      = []byte(`"content"`)
	kCacheControl = []byte(`"cache_control"`)
	kMessages     = []byte(`"messages"`)
	kModel        = []byte(`"model"`)
	kStream       = []byte(`"stream"`)
	kSystem       = []byte(`"system"`)
	kTools        = []byte(`"tools"`)
	kName         = []byte(`"name"`)
	kID           = []byte(`"id"`)
	kInput        = []byte(`"input"`)
	kToolUseID    = []byte(`"tool_use_id"`)
	kMetadata     = []byte(`"metadata"`)
	kUserID       = []byte(`"user_id"`)
	kMaxTokens    = []byte(`"max_tokens"`)
	kBudgetTokens = []byte(`"budget_tokens"`)
	kMaxCompl     = []byte(`"max_completion_tokens"`)
	kCacheKey     = []byte(`"prompt_cache_key"`)
	kFunction     = []byte(`"function"`)
	kToolCalls    = []byte(`"tool_calls"`)
	kToolCallID   = []byte(`"tool_call_id"`)
)

// maxDepth is the deepest nesting of arrays and objects hashValue reads:
// far beyond any real request's, and a body nested deeper is not one the
// proxy changes (it goes upstream as it came).
const maxDepth = 512

var errTooDeep = fmt.Errorf("%w: nested deeper than %d levels", errSyntax, maxDepth)

// hashValue writes the value at sp to h, leaving out every
// "cache_control" member of objects at any depth: clients move their cache
// breakpoints from turn to turn, and a moved breakpoint must not make the
// same content look new. A value with a breakpoint is written member by
// member, compactly, which for a compactly serialized body (as clients
// send) is exactly the bytes the value has without its breakpoint.
//
// The work is linear in the value's size whatever its nesting: one pass
// finds the containers that hold a breakpoint (only those are written
// member by member), a second writes, each byte read a bounded number of
// times, with an explicit stack no deeper than maxDepth.
func hashValue(h hash.Hash, b []byte, sp span) error {
	v := b[sp.s:sp.e]
	if !bytes.Contains(v, kCacheControl) {
		h.Write(v)
		return nil
	}
	if c := b[sp.s]; c != '{' && c != '[' {
		h.Write(v)
		return nil
	}
	open, err := breakpointHolders(b, sp)
	if err != nil {
		return err
	}
	type frame struct {
		obj  bool
		i, e int // next byte to read; the container's end
		n    int // members written
	}
	stack := make([]frame, 0, 16)
	// Small pieces (brackets, commas, keys, short values) gather in out
	// and reach h in large writes.
	out := make([]byte, 0, 8<<10)
	write := func(p []byte) {
		if len(out)+len(p) > cap(out) {
			h.Write(out)
			out = out[:0]
			if len(p) > cap(out) {
				h.Write(p)
				return
			}
		}
		out = append(out, p...)
	}
	push := func(s int) {
		stack = append(stack, frame{obj: b[s] == '{', i: s + 1, e: open[s]})
		write(b[s : s+1])
	}
	push(sp.s)
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		i := skipWS(b, f.i)
		if i < f.e && b[i] == ',' {
			i = skipWS(b, i+1)
		}
		if i >= f.e-1 {
			if f.obj {
				out = append(write0(out, h), '}')
			} else {
				out = append(write0(out, h), ']')
			}
			stack = stack[:len(stack)-1]
			continue
		}
		var key []byte
		if f.obj {
			ke, err := stringEnd(b, i)
			if err != nil || b[i] != '"' {
				return fmt.Errorf("%w: want a key at byte %d", errSyntax, i)
			}
			key = b[i:ke]
			i = skipWS(b, ke)
			if i >= f.e || b[i] != ':' {
				return fmt.Errorf("%w: want ':' at byte %d", errSyntax, i)
			}
			i = skipWS(b, i+1)
		}
		ve, nested := open[i]
		if !nested {
			if ve, err = valueEnd(b, i); err != nil {
				return err
			}
		}
		if ve > f.e {
			return fmt.Errorf("%w: a value runs past its container at byte %d", errSyntax, i)
		}
		f.i = ve
		if bytes.Equal(key, kCacheControl) {
			continue
		}
		if f.n > 0 {
			out = append(write0(out, h), ',')
		}
		f.n++
		if f.obj {
			write(key)
			out = append(write0(out, h), ':')
		}
		if nested {
			push(i) // f is not used after this
			continue
		}
		write(b[i:ve])
	}
	h.Write(out)
	return nil
}

// write0 makes room for one byte in out, flushing it to h when full.
func write0(out []byte, h hash.Hash) []byte {
	if len(out) == cap(out) {
		h.Write(out)
		return out[:0]
	}
	return out
}

// breakpointHolders returns the arrays and objects in b[sp] whose bytes
// hold "cache_control", each start mapped to its end, in one pass with an
// explicit stack (errTooDeep past maxDepth).
func breakpointHolders(b []byte, sp span) (map[int]int, error) {
	var at []int // where "cache_control" occurs, ascending
	for i := sp.s; ; {
		k := bytes.Index(b[i:sp.e], kCacheControl)
		if k < 0 {
			break
		}
		at = append(at, i+k)
		i += k + 1
	}
	holds := func(s, e int) bool {
		j := sort.SearchInts(at, s)
		return j < len(at) && at[j]+len(kCacheControl) <= e
	}
	out := map[int]int{}
	stack := make([]int, 0, 16)
	for i := sp.s; i < sp.e; i++ {
		switch b[i] {
		case '"':
			e, err := stringEnd(b, i)
			if err != nil {
				return nil, err
			}
			i = e - 1
		case '{', '[':
			if len(stack) >= maxDepth {
				return nil, errTooDeep
			}
			stack = append(stack, i)
		case '}', ']':
			if len(stack) == 0 {
				return nil, fmt.Errorf("%w: unbalanced %c at byte %d", errSyntax, b[i], i)
			}
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if holds(s, i+1) {
				out[s] = i + 1
			}
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%w: unclosed value at byte %d", errSyntax, stack[len(stack)-1])
	}
	return out, nil
}

// parseAnthropic reads a Messages API request body.
func parseAnthropic(body []byte) (*request, error) { return (*parseCache)(nil).anthropic(body) }

// anthropic reads a Messages API request body, reusing pc's parse of every
// message it has seen before.
func (pc *parseCache) anthropic(body []byte) (*request, error) {
	r := &request{Body: body, Provider: providerAnthropic, API: "messages"}
	top := span{skipWS(body, 0), len(body)}
	if top.s >= len(body) || body[top.s] != '{' {
		return nil, fmt.Errorf("%w: the body is not a JSON object", errSyntax)
	}
	var spans []span // the messages
	err := membersScan(body, top, arrayOf(body, kMessages, &spans), func(key []byte, val span) error {
		switch {
		case bytes.Equal(key, kModel):
			r.Model = str(body, val)
		case bytes.Equal(key, kStream):
			r.Stream = string(body[val.s:val.e]) == "true"
		case bytes.Equal(key, kMaxTokens):
			fmt.Sscan(string(body[val.s:val.e]), &r.MaxOut)
			r.MaxSpan = val
		case bytes.Equal(key, kThinking) && body[val.s] == '{':
			if v := member(body, val, kBudgetTokens); v.ok() {
				fmt.Sscan(string(body[v.s:v.e]), &r.Thinking)
			}
		case bytes.Equal(key, kSystem):
			r.System = val
		case bytes.Equal(key, kMessages):
			r.MsgsSpan = val
		case bytes.Equal(key, kCacheControl):
			r.AutoCache = val
		case bytes.Equal(key, kTools):
			r.ToolsSpan = val
			return toolNames(body, val, &r.Tools)
		case bytes.Equal(key, kMetadata):
			if body[val.s] == '{' {
				return members(body, val, func(k []byte, v span) error {
					if bytes.Equal(k, kUserID) {
						r.UserID = str(body, v)
					}
					return nil
				})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !r.MsgsSpan.ok() || body[r.MsgsSpan.s] != '[' {
		return nil, fmt.Errorf("%w: no messages array", errSyntax)
	}
	r.Messages, err = pc.messages(kindAnthropic, body, spans, parseAnthropicMessage)
	return r, err
}

// parseAnthropicMessage reads one message of a Messages API request.
func parseAnthropicMessage(body []byte, msp span) (message, error) {
	m := message{Span: msp, Bytes: msp.e - msp.s}
	if body[msp.s] != '{' {
		return m, fmt.Errorf("%w: a message is not an object", errSyntax)
	}
	if err := members(body, msp, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kRole):
			m.Role = str(body, v)
		case bytes.Equal(k, kContent):
			m.Content = v
		}
		return nil
	}); err != nil {
		return m, err
	}
	h := sha256.New()
	h.Write([]byte(m.Role))
	h.Write([]byte{0})
	switch {
	case !m.Content.ok():
	case body[m.Content.s] == '"':
		m.Str = true
		h.Write(body[m.Content.s:m.Content.e])
	case body[m.Content.s] == '[':
		if err := elems(body, m.Content, func(_ int, bsp span) error {
			b, err := parseAnthropicBlock(body, bsp)
			if err != nil {
				return err
			}
			m.Blocks = append(m.Blocks, b)
			h.Write([]byte(b.Hash))
			return nil
		}); err != nil {
			return m, err
		}
	default:
		return m, fmt.Errorf("%w: message content is neither a string nor a list", errSyntax)
	}
	m.Hash = sum(h)
	return m, nil
}

// parseAnthropicBlock reads one content block. A tool_result's Name and
// Input are its call's, filled in by link.
func parseAnthropicBlock(body []byte, bsp span) (block, error) {
	b := block{Span: bsp}
	if body[bsp.s] != '{' {
		return b, fmt.Errorf("%w: a content block is not an object", errSyntax)
	}
	if err := members(body, bsp, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kType):
			b.Type = str(body, v)
		case bytes.Equal(k, kToolUseID):
			b.ToolUseID = str(body, v)
		case bytes.Equal(k, kID):
			b.ToolUseID = str(body, v)
		case bytes.Equal(k, kContent):
			b.Content = v
		case bytes.Equal(k, kName):
			b.Name = str(body, v)
		case bytes.Equal(k, kInput):
			b.Input = v
		case bytes.Equal(k, kCacheControl):
			b.CC = v
		}
		return nil
	}); err != nil {
		return b, err
	}
	if b.Content.ok() && body[b.Content.s] == '[' && bytes.Contains(body[b.Content.s:b.Content.e], kCacheControl) {
		b.Nested = breakpointsIn(body, b.Content)
	}
	h := sha256.New()
	if err := hashValue(h, body, bsp); err != nil {
		return b, err
	}
	b.Hash = sum(h)
	return b, nil
}

// textOf returns the text of a tool result's content value: the string, or
// the text of its text blocks joined by newlines.
func textOf(body []byte, sp span) string {
	if !sp.ok() {
		return ""
	}
	switch body[sp.s] {
	case '"':
		return str(body, sp)
	case '[':
		var sb strings.Builder
		elems(body, sp, func(i int, v span) error {
			if body[v.s] != '{' {
				return nil
			}
			var typ, text string
			members(body, v, func(k []byte, x span) error {
				switch {
				case bytes.Equal(k, kType):
					typ = str(body, x)
				case bytes.Equal(k, []byte(`"text"`)):
					text = str(body, x)
				}
				return nil
			})
			if typ == "text" {
				if sb.Len() > 0 {
					sb.WriteByte('\n')
				}
				sb.WriteString(text)
			}
			return nil
		})
		return sb.String()
	}
	return ""
}
