package wire

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/jsonerr"
	"github.com/ctxkit/ctxkit/llm"
)

// Anthropic Messages request body, in the field order it is written.
type aRequest struct {
	Model     string     `json:"model"`
	MaxTokens int        `json:"max_tokens"`
	System    []any      `json:"system,omitempty"`
	Tools     []aTool    `json:"tools,omitempty"`
	Messages  []aMessage `json:"messages"`
}

type aTool struct {
	Type         string          `json:"type,omitempty"` // decoding only: custom tools have none
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type aMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// Output shapes, one per block type, so that each writes exactly the
// fields the API expects in a fixed order.
type (
	aText struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	aToolUse struct {
		Type         string          `json:"type"`
		ID           string          `json:"id"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	aToolResult struct {
		Type         string          `json:"type"`
		ToolUseID    string          `json:"tool_use_id"`
		Content      any             `json:"content,omitempty"`
		IsError      bool            `json:"is_error,omitempty"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	aThinking struct {
		Type         string          `json:"type"`
		Thinking     string          `json:"thinking"`
		Signature    string          `json:"signature"` // required by the API, even empty
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	aRedacted struct {
		Type         string          `json:"type"`
		Data         string          `json:"data"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
	aImage struct {
		Type         string          `json:"type"`
		Source       json.RawMessage `json:"source"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	}
)

// EncodeAnthropic returns req as an Anthropic Messages API request body.
func EncodeAnthropic(req *llm.Request) ([]byte, error) {
	out := aRequest{Model: req.Model, MaxTokens: req.MaxTokens, Messages: []aMessage{}}
	for i := range req.System {
		b, err := encodeABlock(&req.System[i], false)
		if err != nil {
			return nil, fmt.Errorf("system[%d]: %w", i, err)
		}
		out.System = append(out.System, b)
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, aTool{Name: t.Name, Description: t.Description, InputSchema: schema, CacheControl: t.CacheControl})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		am := aMessage{Role: string(m.Role), Content: make([]any, 0, len(m.Blocks))}
		for j := range m.Blocks {
			b, err := encodeABlock(&m.Blocks[j], false)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content[%d]: %w", i, j, err)
			}
			am.Content = append(am.Content, b)
		}
		out.Messages = append(out.Messages, am)
	}
	data, err := jsonenc.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("wire: encode anthropic request: %w", err)
	}
	return data, nil
}

// encodeABlock returns the wire shape of b; inResult restricts it to what
// a tool result's content may hold.
func encodeABlock(b *conv.Block, inResult bool) (any, error) {
	if inResult && b.Type != conv.TypeText && b.Type != conv.TypeImage && b.Type != conv.TypeOpaque {
		return nil, fmt.Errorf("%w: %q block inside a tool_result", ErrUnknownType, b.Type)
	}
	cc := b.CacheControl
	switch b.Type {
	case conv.TypeText, conv.TypeSummary:
		return aText{Type: "text", Text: textOf(b), CacheControl: cc}, nil
	case conv.TypeToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return aToolUse{Type: "tool_use", ID: b.ToolUseID, Name: b.Name, Input: input, CacheControl: cc}, nil
	case conv.TypeToolResult:
		r := aToolResult{Type: "tool_result", ToolUseID: b.ToolUseID, IsError: b.IsError, CacheControl: cc}
		switch {
		case len(b.Content) > 0:
			parts := make([]any, 0, len(b.Content))
			for k := range b.Content {
				p, err := encodeABlock(&b.Content[k], true)
				if err != nil {
					return nil, err
				}
				parts = append(parts, p)
			}
			r.Content = parts
		case b.Text != "":
			r.Content = b.Text
		}
		return r, nil
	case conv.TypeThinking:
		return aThinking{Type: "thinking", Thinking: b.Text, Signature: b.Signature, CacheControl: cc}, nil
	case conv.TypeRedactedThinking:
		return aRedacted{Type: "redacted_thinking", Data: b.Data, CacheControl: cc}, nil
	case conv.TypeImage:
		return aImage{Type: "image", Source: b.ImageSource, CacheControl: cc}, nil
	case conv.TypeOpaque, conv.TypeServerToolUse:
		switch {
		case b.Provider == conv.ProviderAnthropic && len(b.Raw) > 0:
			return b.Raw, nil // byte for byte, as the API wrote it
		case b.Provider == conv.ProviderAnthropic:
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			return aToolUse{Type: "server_tool_use", ID: b.ToolUseID, Name: b.Name, Input: input}, nil
		}
		return aText{Type: "text", Text: b.NoteText(), CacheControl: cc}, nil
	}
	return nil, fmt.Errorf("%w: block type %q", ErrUnknownType, b.Type)
}

// aBlockIn is any Anthropic content block, for decoding.
type aBlockIn struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	Source       json.RawMessage `json:"source"`
	CacheControl json.RawMessage `json:"cache_control"`

	// raw is the block's JSON, kept for the types decodeABlock does not
	// read field by field (an opaque block, a server tool call).
	raw json.RawMessage
}

// aRead are the block types decodeABlock reads field by field; any other
// is kept whole, as an opaque block.
var aRead = map[string]bool{"text": true, "tool_use": true, "tool_result": true, "thinking": true, "redacted_thinking": true, "image": true}

func (in *aBlockIn) UnmarshalJSON(data []byte) error {
	type plain aBlockIn
	if err := json.Unmarshal(data, (*plain)(in)); err != nil {
		return err
	}
	if !aRead[in.Type] {
		in.raw = append(json.RawMessage(nil), data...)
	}
	return nil
}

type aRequestIn struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	System    json.RawMessage   `json:"system"`
	Tools     []aTool           `json:"tools"`
	Messages  []json.RawMessage `json:"messages"`
}

// DecodeAnthropic parses an Anthropic Messages API request body.
func DecodeAnthropic(data []byte) (*llm.Request, error) {
	var in aRequestIn
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
	}
	req := &llm.Request{Model: in.Model, MaxTokens: in.MaxTokens}
	sys, err := decodeAContent(in.System, conv.SourceSystem)
	if err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	req.System = sys
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, fmt.Errorf("tools[%d] %q: %w: tool type %q", i, t.Name, ErrUnknownType, t.Type)
		}
		schema, err := raw(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tools[%d] %q: %w: input_schema: %v", i, t.Name, ErrInvalid, err)
		}
		cc, err := raw(t.CacheControl)
		if err != nil {
			return nil, fmt.Errorf("tools[%d] %q: %w: cache_control: %v", i, t.Name, ErrInvalid, err)
		}
		req.Tools = append(req.Tools, conv.Tool{Name: t.Name, Description: t.Description, InputSchema: schema, CacheControl: cc})
	}
	for i, rm := range in.Messages {
		m, err := DecodeAnthropicMessage(rm)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		req.Messages = append(req.Messages, m)
	}
	fillNames(req.Messages)
	return req, nil
}

// DecodeAnthropicMessage parses one Messages API message ({role,
// content}).
func DecodeAnthropicMessage(data []byte) (conv.Message, error) {
	var in struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return conv.Message{}, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
	}
	role := conv.Role(in.Role)
	if role != conv.RoleUser && role != conv.RoleAssistant {
		return conv.Message{}, fmt.Errorf("%w: role %q", ErrUnknownType, in.Role)
	}
	blocks, err := DecodeAnthropicContent(role, in.Content)
	if err != nil {
		return conv.Message{}, err
	}
	return conv.Message{Role: role, Blocks: blocks}, nil
}

// DecodeAnthropicContent parses a message's content (a string or a list
// of blocks), as recorded in Claude Code session logs. Tool results' Name
// is left for the caller, who knows the calls before this message.
func DecodeAnthropicContent(role conv.Role, content json.RawMessage) ([]conv.Block, error) {
	blocks, err := decodeAContent(content, sourceOf(role))
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return blocks, nil
}

// decodeAContent decodes a content field (string, block list or absent)
// whose blocks were said by src.
func decodeAContent(data json.RawMessage, src conv.Source) ([]conv.Block, error) {
	text, ins, err := textOrList[aBlockIn](data, src, "", "blocks")
	if err != nil || ins == nil {
		return text, err
	}
	out := make([]conv.Block, 0, len(ins))
	for i := range ins {
		b, err := decodeABlock(&ins[i], src)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func decodeABlock(in *aBlockIn, src conv.Source) (conv.Block, error) {
	cc, err := raw(in.CacheControl)
	if err != nil {
		return conv.Block{}, fmt.Errorf("%w: cache_control: %s", ErrInvalid, jsonerr.What(err))
	}
	var b conv.Block
	switch in.Type {
	case "text":
		b = newText(src, in.Text)
	case "tool_use":
		input, err := raw(in.Input)
		if err != nil {
			return conv.Block{}, fmt.Errorf("%w: tool_use %s input: %v", ErrInvalid, in.ID, err)
		}
		if input == nil {
			input = json.RawMessage("{}")
		}
		if !isObject(input) {
			return conv.Block{}, fmt.Errorf("%w: tool_use %s input is not a JSON object", ErrInvalid, in.ID)
		}
		b = conv.NewToolUse(in.ID, in.Name, input)
	case "tool_result":
		b = conv.NewToolResult(in.ToolUseID, "", "", in.IsError)
		content := present(in.Content)
		if len(content) > 0 && content[0] == '"' {
			if err := json.Unmarshal(content, &b.Text); err != nil {
				return conv.Block{}, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
			}
		} else if len(content) > 0 {
			var parts []aBlockIn
			if err := json.Unmarshal(content, &parts); err != nil {
				return conv.Block{}, fmt.Errorf("%w: tool_result %s content: %v", ErrInvalid, in.ToolUseID, err)
			}
			for k := range parts {
				switch parts[k].Type {
				case "text", "image":
				case "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use":
					return conv.Block{}, fmt.Errorf("%w: %q block inside tool_result %s", ErrUnknownType, parts[k].Type, in.ToolUseID)
				}
				p, err := decodeABlock(&parts[k], conv.SourceTool)
				if err != nil {
					return conv.Block{}, err
				}
				if p.Type == conv.TypeOpaque {
					// What the result holds beside text (tool search's
					// tool_reference) cannot be cleared to a placeholder
					// or cut to fit: the result goes as it is.
					b.Meta.Pinned, b.Meta.Compactable = true, false
				}
				b.Content = append(b.Content, p)
			}
		}
	case "thinking":
		b = conv.NewThinking(in.Thinking, in.Signature)
	case "redacted_thinking":
		b = conv.Block{Type: conv.TypeRedactedThinking, Data: in.Data, Meta: conv.DefaultMeta(conv.TypeRedactedThinking, src)}
	case "image":
		source, err := raw(in.Source)
		if err != nil {
			return conv.Block{}, fmt.Errorf("%w: image source: %s", ErrInvalid, jsonerr.What(err))
		}
		if err := checkImageSource(source); err != nil {
			return conv.Block{}, err
		}
		b = conv.Block{Type: conv.TypeImage, ImageSource: source, Meta: conv.DefaultMeta(conv.TypeImage, src)}
	case "server_tool_use":
		// A tool the API ran itself (web search): no local result.
		input, err := raw(in.Input)
		if err != nil || input != nil && !isObject(input) {
			return conv.Block{}, fmt.Errorf("%w: server_tool_use %s input is not a JSON object", ErrInvalid, in.ID)
		}
		return conv.NewServerToolUse(conv.ProviderAnthropic, in.ID, in.Name, input, in.raw), nil
	default:
		if in.Type == "" || !isObject(in.raw) {
			return conv.Block{}, fmt.Errorf("%w: a content block without a type", ErrInvalid)
		}
		// A type this release does not know (tool search's
		// tool_reference, web_search_tool_result, newer ones): kept whole.
		return conv.NewOpaque(conv.ProviderAnthropic, in.raw, src), nil
	}
	b.CacheControl = cc
	return b, nil
}
