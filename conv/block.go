package conv

import (
	"encoding/json"
	"strings"
	"time"
)

// Type is the kind of a content block, named as the Anthropic Messages API
// names it, plus "summary" for compaction output.
type Type string

const (
	TypeText       Type = "text"
	TypeToolUse    Type = "tool_use"
	TypeToolResult Type = "tool_result"
	TypeThinking   Type = "thinking"
	// TypeRedactedThinking is thinking the provider returned encrypted; it
	// must be sent back verbatim and is never shown or summarized.
	TypeRedactedThinking Type = "redacted_thinking"
	TypeImage            Type = "image"
	TypeSummary          Type = "summary"
	// TypeOpaque is a block of a type ctxkit does not understand (Claude
	// Code's tool_reference, Anthropic's web_search_tool_result, a type
	// added after this release): Raw holds its JSON exactly as the
	// provider wrote it and Provider the API it came from. It is counted
	// as its bytes, sent back byte for byte to that API (a short text note
	// to any other, see NoteText), never compressed, cleared or
	// summarized as text (a summary may name it), and never a reason to
	// drop a message.
	TypeOpaque Type = "opaque"
	// TypeServerToolUse is a tool call the provider ran itself (Anthropic's
	// server_tool_use, a Responses web_search_call): Name and Input say
	// what was called, ToolUseID its id when it has one, Raw and Provider
	// the call as recorded. No local tool_result answers it, so the
	// pairing invariant does not ask for one; whatever result the provider
	// returned with it is an opaque block of the same message, or absent.
	TypeServerToolUse Type = "server_tool_use"
)

// Providers an opaque block or a server tool call can come from: the API
// whose requests may carry its Raw bytes back.
const (
	ProviderAnthropic = "anthropic"        // the Messages API
	ProviderResponses = "openai-responses" // OpenAI's Responses API (Codex)
	ProviderOpenAI    = "openai"           // OpenAI chat completions
	ProviderGemini    = "gemini"
)

// Tier is the trust level of a block's content (seed 001 §1, 02): the lower,
// the more the harness vouches for it.
type Tier int

const (
	TierSystem Tier = 0 // harness and system prompt
	TierUser   Tier = 1 // typed by the user
	TierModel  Tier = 2 // produced by the model
	TierTool   Tier = 3 // tool output and anything derived from it (summaries too)
)

// Source says who produced a block.
type Source string

const (
	SourceSystem    Source = "system"
	SourceUser      Source = "user"
	SourceAssistant Source = "assistant"
	SourceTool      Source = "tool"
	SourceHook      Source = "hook"
	SourceReminder  Source = "reminder"
	SourceCompactor Source = "compactor"
)

// Rung is a block's place on the fidelity ladder (DESIGN.md). Blocks only
// ever move down, and only after the original is durable in the transcript.
type Rung int

const (
	RungFull        Rung = 0 // as produced
	RungCompressed  Rung = 1 // per-tool compressed form
	RungPlaceholder Rung = 2 // one line naming the tool, its argument and the recall id
	RungSummarized  Rung = 3 // folded into a summary block
)

// ImageTokens is the fixed token cost charged for an image block, which is
// kept as a reference and never measured.
const ImageTokens = 2000

// Meta is what the engine knows about a block beyond its content.
type Meta struct {
	Tier      Tier      `json:"tier"`
	Source    Source    `json:"source"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Tokens caches the block's token count; 0 means not counted yet. Any
	// change of content must reset it (see Block.SetText).
	Tokens      int  `json:"tokens,omitempty"`
	Pinned      bool `json:"pinned,omitempty"`
	Compactable bool `json:"compactable,omitempty"`
	Rung        Rung `json:"rung,omitempty"`
}

// Span is the range of turns a summary covers, inclusive.
type Span struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

// Block is one content block of a message. Which fields are used depends on
// Type; the rest stay zero.
type Block struct {
	// ID is stable for the life of the session: it names the block in the
	// transcript and is the recall id of a cleared block.
	ID   string `json:"id"`
	Type Type   `json:"type"`

	// Text holds text, thinking, summary text, and a tool result whose
	// content is a plain string.
	Text string `json:"text,omitempty"`

	// ToolUseID is the id of a tool_use, or for a tool_result the id of the
	// tool_use it answers. Name is the tool's name on both.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Name      string `json:"name,omitempty"`
	// Input is a tool_use's input exactly as the model produced it; kept as
	// bytes so that re-serialization never reorders keys.
	Input json.RawMessage `json:"input,omitempty"`

	// Content holds a tool result given as a list of blocks (text, image).
	// When it is set, Text is empty.
	Content []Block `json:"content,omitempty"`
	IsError bool    `json:"is_error,omitempty"`
	// Structured is the structured form of a result from one of ctxkit's
	// own tools ({"status","data","text","stats","error"}), kept beside the
	// text the model saw so that compressors need not parse that text. It
	// never goes to the wire.
	Structured json.RawMessage `json:"structured,omitempty"`

	// Signature is a thinking block's signature; Data a redacted thinking
	// block's payload.
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`

	// Source of an image, kept verbatim (base64 or URL) as a reference.
	ImageSource json.RawMessage `json:"image_source,omitempty"`

	// Span is the turn range a summary block covers; Merged marks a summary
	// produced by merging earlier summaries (the one case where a summary
	// is an input to another).
	Span   *Span `json:"span,omitempty"`
	Merged bool  `json:"merged,omitempty"`

	// CacheControl is a cache_control object carried by an imported request,
	// kept so codecs round-trip losslessly. Assembly places its own anchors
	// on the request, never here.
	CacheControl json.RawMessage `json:"cache_control,omitempty"`

	// Raw is an opaque block's JSON, or a server tool call's as recorded,
	// byte for byte; Provider names the API it belongs to (ProviderAnthropic,
	// ProviderResponses, …).
	Raw      json.RawMessage `json:"raw,omitempty"`
	Provider string          `json:"provider,omitempty"`

	Meta Meta `json:"meta"`
}

// DefaultMeta is the metadata a new block from src gets: tier by source, and
// compactable unless it is user text, assistant text or a summary (seed 001
// §3.2: user words and the model's own statements are never compacted).
func DefaultMeta(t Type, src Source) Meta {
	m := Meta{Source: src, Compactable: true}
	switch src {
	case SourceSystem:
		m.Tier, m.Pinned, m.Compactable = TierSystem, true, false
	case SourceUser:
		m.Tier = TierUser
	case SourceAssistant:
		m.Tier = TierModel
	case SourceHook, SourceReminder:
		m.Tier = TierSystem
	default: // tool, compactor
		m.Tier = TierTool
	}
	switch {
	case t == TypeSummary:
		m.Pinned, m.Compactable = true, false
	case t == TypeText && (src == SourceUser || src == SourceAssistant):
		m.Compactable = false
	case t == TypeOpaque || t == TypeServerToolUse:
		m.Compactable = false // never rewritten as text ctxkit understood
	}
	return m
}

// NewText returns a text block from src.
func NewText(src Source, text string) Block {
	return Block{Type: TypeText, Text: text, Meta: DefaultMeta(TypeText, src)}
}

// NewToolUse returns a tool_use block. input must be a JSON object.
func NewToolUse(id, name string, input json.RawMessage) Block {
	return Block{Type: TypeToolUse, ToolUseID: id, Name: name, Input: input, Meta: DefaultMeta(TypeToolUse, SourceAssistant)}
}

// NewToolResult returns a tool_result answering the tool_use id of tool name.
func NewToolResult(toolUseID, name, text string, isError bool) Block {
	return Block{Type: TypeToolResult, ToolUseID: toolUseID, Name: name, Text: text, IsError: isError, Meta: DefaultMeta(TypeToolResult, SourceTool)}
}

// NewThinking returns a thinking block with its signature.
func NewThinking(text, signature string) Block {
	return Block{Type: TypeThinking, Text: text, Signature: signature, Meta: DefaultMeta(TypeThinking, SourceAssistant)}
}

// NewSummary returns a pinned summary block covering span.
func NewSummary(text string, span Span) Block {
	b := Block{Type: TypeSummary, Text: text, Span: &span, Meta: DefaultMeta(TypeSummary, SourceCompactor)}
	b.Meta.Rung = RungSummarized
	return b
}

// NewOpaque returns an opaque block holding raw, a JSON object of a type
// ctxkit does not know, from provider's API, in a message of src.
func NewOpaque(provider string, raw json.RawMessage, src Source) Block {
	return Block{Type: TypeOpaque, Raw: raw, Provider: provider, Meta: DefaultMeta(TypeOpaque, src)}
}

// NewServerToolUse returns a tool call the provider ran itself: name and
// input say what it did, raw is the call as provider's API recorded it.
func NewServerToolUse(provider, id, name string, input, raw json.RawMessage) Block {
	return Block{Type: TypeServerToolUse, ToolUseID: id, Name: name, Input: input, Raw: raw, Provider: provider,
		Meta: DefaultMeta(TypeServerToolUse, SourceAssistant)}
}

// Opaque counts the conversation's opaque blocks (tool results' content
// included) and server tool calls.
func (c *Conversation) Opaque() (blocks, serverCalls int) {
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			b := &c.Messages[i].Blocks[j]
			switch b.Type {
			case TypeOpaque:
				blocks++
			case TypeServerToolUse:
				serverCalls++
			}
			for k := range b.Content {
				if b.Content[k].Type == TypeOpaque {
					blocks++
				}
			}
		}
	}
	return blocks, serverCalls
}

// RawType is the "type" member of Raw: the provider's name for an opaque
// block or a server tool call ("" when Raw has none).
func (b *Block) RawType() string {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b.Raw, &head) != nil {
		return ""
	}
	return head.Type
}

// NoteText is what stands for an opaque block or a server tool call in a
// request to an API other than its Provider's, which could not read its
// bytes: one line naming it.
func (b *Block) NoteText() string {
	if b.Type == TypeServerToolUse {
		return "[" + b.Name + " run by the provider: " + string(b.Input) + "]"
	}
	t := b.RawType()
	if t == "" {
		t = "unknown"
	}
	return "[" + t + " block from " + b.Provider + ", not shown]"
}

// ResultText is the text of a tool result: Text, or the text parts of
// Content joined by newlines (an opaque part as its NoteText).
func (b *Block) ResultText() string {
	if len(b.Content) == 0 {
		return b.Text
	}
	var sb strings.Builder
	for i := range b.Content {
		p := &b.Content[i]
		if p.Type != TypeText && p.Type != TypeOpaque {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.PlainText())
	}
	return sb.String()
}

// PlainText is what a reader (or a counter) sees of the block as text:
// text, thinking and summary text, a tool result's text, a tool call as
// its name and input.
func (b *Block) PlainText() string {
	switch b.Type {
	case TypeToolUse:
		return b.Name + " " + string(b.Input)
	case TypeToolResult:
		return b.ResultText()
	case TypeRedactedThinking:
		return b.Data
	case TypeOpaque, TypeServerToolUse:
		return b.NoteText()
	default:
		return b.Text
	}
}

// SetText replaces a block's content with text (a tool result loses its
// list content), records its new rung and drops the cached token count.
func (b *Block) SetText(text string, r Rung) {
	b.Text = text
	b.Content = nil
	b.Meta.Rung = r
	b.Meta.Tokens = 0
}

// Empty reports whether the block carries no content the API would accept.
func (b *Block) Empty() bool {
	switch b.Type {
	case TypeText, TypeSummary:
		return strings.TrimSpace(b.Text) == ""
	case TypeThinking:
		return b.Text == "" && b.Signature == ""
	case TypeRedactedThinking:
		return b.Data == ""
	case TypeToolUse:
		return b.ToolUseID == "" || b.Name == ""
	case TypeToolResult:
		return b.ToolUseID == ""
	case TypeImage:
		return len(b.ImageSource) == 0
	case TypeOpaque:
		return len(b.Raw) == 0
	case TypeServerToolUse:
		return b.Name == ""
	}
	return true
}

// Clone returns a deep copy of the block.
func (b Block) Clone() Block {
	c := b
	c.Input = cloneRaw(b.Input)
	c.Structured = cloneRaw(b.Structured)
	c.ImageSource = cloneRaw(b.ImageSource)
	c.CacheControl = cloneRaw(b.CacheControl)
	c.Raw = cloneRaw(b.Raw)
	if b.Span != nil {
		s := *b.Span
		c.Span = &s
	}
	if b.Content != nil {
		c.Content = make([]Block, len(b.Content))
		for i := range b.Content {
			c.Content[i] = b.Content[i].Clone()
		}
	}
	return c
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return append(json.RawMessage(nil), r...)
}
