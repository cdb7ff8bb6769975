package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/jsonerr"
	"github.com/ctxkit/ctxkit/llm"
)

// OpenAI chat completions request body, in the field order it is written.
type oRequest struct {
	Model               string     `json:"model"`
	Messages            []oMessage `json:"messages"`
	Tools               []oTool    `json:"tools,omitempty"`
	MaxCompletionTokens int        `json:"max_completion_tokens,omitempty"`
}

type oMessage struct {
	Role string `json:"role"`
	// Content is a string or a list of parts; absent on an assistant
	// message that only calls tools.
	Content    any         `json:"content,omitempty"`
	ToolCalls  []oToolCall `json:"tool_calls,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
}

type oToolCall struct {
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Function oFunction `json:"function"`
}

type oFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oTool struct {
	Type     string    `json:"type"`
	Function oToolFunc `json:"function"`
}

type oToolFunc struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type (
	oTextPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	oImagePart struct {
		Type     string    `json:"type"`
		ImageURL oImageURL `json:"image_url"`
	}
	oImageURL struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	}
)

// Markers for what chat completions has no field for (see the package doc).
const (
	errorMarker   = "[tool error]"
	thinkingOpen  = "<thinking>"
	thinkingClose = "</thinking>"
	rawArgsKey    = "_raw_arguments"
)

// EncodeOpenAI returns req as an OpenAI chat completions request body.
func EncodeOpenAI(req *llm.Request) ([]byte, error) {
	out := oRequest{Model: req.Model, MaxCompletionTokens: req.MaxTokens, Messages: []oMessage{}}
	for i := range req.System {
		b := &req.System[i]
		if b.Type != conv.TypeText && b.Type != conv.TypeSummary {
			return nil, fmt.Errorf("system[%d]: %w: %q block in the system prompt", i, ErrUnknownType, b.Type)
		}
		out.Messages = append(out.Messages, oMessage{Role: "system", Content: textOf(b)})
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, oTool{Type: "function", Function: oToolFunc{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	for i := range req.Messages {
		var ms []oMessage
		var err error
		if req.Messages[i].Role == conv.RoleAssistant {
			ms, err = encodeOAssistant(&req.Messages[i])
		} else {
			ms, err = encodeOUser(&req.Messages[i])
		}
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		out.Messages = append(out.Messages, ms...)
	}
	data, err := jsonenc.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("wire: encode openai request: %w", err)
	}
	return data, nil
}

func encodeOAssistant(m *conv.Message) ([]oMessage, error) {
	om := oMessage{Role: "assistant"}
	var parts []oTextPart
	for j := range m.Blocks {
		b := &m.Blocks[j]
		switch b.Type {
		case conv.TypeText, conv.TypeSummary:
			parts = append(parts, oTextPart{Type: "text", Text: textOf(b)})
		case conv.TypeThinking:
			parts = append(parts, oTextPart{Type: "text", Text: thinkingOpen + b.Text + thinkingClose})
		case conv.TypeRedactedThinking:
			// Opaque to anyone but Anthropic.
		case conv.TypeOpaque, conv.TypeServerToolUse:
			parts = append(parts, oTextPart{Type: "text", Text: b.NoteText()})
		case conv.TypeToolUse:
			om.ToolCalls = append(om.ToolCalls, oToolCall{ID: b.ToolUseID, Type: "function", Function: oFunction{Name: b.Name, Arguments: arguments(b)}})
		default:
			return nil, fmt.Errorf("content[%d]: %w: %q block in an assistant message", j, ErrUnknownType, b.Type)
		}
	}
	switch {
	case len(parts) == 1:
		om.Content = parts[0].Text
	case len(parts) > 1:
		om.Content = parts
	case len(om.ToolCalls) == 0:
		om.Content = "" // nothing representable left; keep the turn
	}
	return []oMessage{om}, nil
}

func encodeOUser(m *conv.Message) ([]oMessage, error) {
	var out []oMessage
	var rest []any // user content after the tool messages
	for j := range m.Blocks {
		b := &m.Blocks[j]
		switch b.Type {
		case conv.TypeToolResult:
			tm := oMessage{Role: "tool", ToolCallID: b.ToolUseID}
			if len(b.Content) == 0 {
				text := b.Text
				if b.IsError {
					text = withErrorMarker(text)
				}
				tm.Content = text
			} else {
				var parts []oTextPart
				if b.IsError {
					parts = append(parts, oTextPart{Type: "text", Text: errorMarker})
				}
				for k := range b.Content {
					c := &b.Content[k]
					switch c.Type {
					case conv.TypeText:
						parts = append(parts, oTextPart{Type: "text", Text: c.Text})
					case conv.TypeImage:
						rest = append(rest, imagePart(c))
					case conv.TypeOpaque:
						parts = append(parts, oTextPart{Type: "text", Text: c.NoteText()})
					default:
						return nil, fmt.Errorf("content[%d]: %w: %q block inside a tool_result", j, ErrUnknownType, c.Type)
					}
				}
				if len(parts) == 0 {
					tm.Content = ""
				} else {
					tm.Content = parts
				}
			}
			out = append(out, tm)
		case conv.TypeText, conv.TypeSummary:
			rest = append(rest, oTextPart{Type: "text", Text: textOf(b)})
		case conv.TypeImage:
			rest = append(rest, imagePart(b))
		case conv.TypeOpaque:
			rest = append(rest, oTextPart{Type: "text", Text: b.NoteText()})
		default:
			return nil, fmt.Errorf("content[%d]: %w: %q block in a user message", j, ErrUnknownType, b.Type)
		}
	}
	if len(rest) > 0 || len(out) == 0 {
		um := oMessage{Role: "user", Content: rest}
		if len(rest) == 1 {
			if t, ok := rest[0].(oTextPart); ok {
				um.Content = t.Text
			}
		} else if len(rest) == 0 {
			um.Content = ""
		}
		out = append(out, um)
	}
	return out, nil
}

// arguments is a tool call's input as OpenAI's arguments string: the input,
// or the arguments kept as they were when they were not a JSON object.
func arguments(b *conv.Block) string {
	if s, ok := rawArguments(b.Input); ok {
		return s
	}
	if len(b.Input) == 0 {
		return "{}"
	}
	return string(b.Input)
}

func withErrorMarker(text string) string {
	if text == "" {
		return errorMarker
	}
	return errorMarker + "\n" + text
}

// rawArguments returns the original arguments string of a tool_use input
// that DecodeOpenAI had to wrap because it was not a JSON object.
func rawArguments(input json.RawMessage) (string, bool) {
	var w map[string]json.RawMessage
	if json.Unmarshal(input, &w) != nil || len(w) != 1 {
		return "", false
	}
	var s string
	if json.Unmarshal(w[rawArgsKey], &s) != nil {
		return "", false
	}
	return s, true
}

// imagePart returns an image as an image_url part: a base64 source as a
// data URL, a URL source as is, anything else as a text note.
func imagePart(b *conv.Block) any {
	src := ImageSourceOf(b)
	if u, ok := src.AsURL(); ok {
		return oImagePart{Type: "image_url", ImageURL: oImageURL{URL: u}}
	}
	return oTextPart{Type: "text", Text: src.note("chat completions")}
}

// Decoding shapes.
type (
	oRequestIn struct {
		Model               string       `json:"model"`
		Messages            []oMessageIn `json:"messages"`
		Tools               []oTool      `json:"tools"`
		MaxTokens           int          `json:"max_tokens"`
		MaxCompletionTokens int          `json:"max_completion_tokens"`
	}
	oMessageIn struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []oToolCall     `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	}
	oPartIn struct {
		Type     string     `json:"type"`
		Text     string     `json:"text"`
		Refusal  string     `json:"refusal"`
		ImageURL *oImageURL `json:"image_url"`
	}
)

// DecodeOpenAI parses an OpenAI chat completions request body.
func DecodeOpenAI(data []byte) (*llm.Request, error) {
	var in oRequestIn
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
	}
	req := &llm.Request{Model: in.Model, MaxTokens: in.MaxCompletionTokens}
	if req.MaxTokens == 0 {
		req.MaxTokens = in.MaxTokens
	}
	for i, t := range in.Tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("tools[%d]: %w: tool type %q", i, ErrUnknownType, t.Type)
		}
		schema, err := raw(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tools[%d] %q: %w: parameters: %v", i, t.Function.Name, ErrInvalid, err)
		}
		req.Tools = append(req.Tools, conv.Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	ms, sys, err := decodeOMessages(in.Messages)
	if err != nil {
		return nil, err
	}
	req.System, req.Messages = sys, ms
	return req, nil
}

// decodeOMessages turns chat messages into conversation messages and the
// system blocks that lead them. Consecutive tool messages and the user
// message right after them become one user message; a system message after
// the first other message becomes SourceSystem text of the user message it
// precedes.
func decodeOMessages(in []oMessageIn) (msgs []conv.Message, system []conv.Block, err error) {
	leading := true
	open := false // the last message is a user message that still takes content
	add := func(bs []conv.Block, keepOpen bool) {
		if n := len(msgs); open && n > 0 && msgs[n-1].Role == conv.RoleUser {
			msgs[n-1].Blocks = append(msgs[n-1].Blocks, bs...)
		} else {
			msgs = append(msgs, conv.Message{Role: conv.RoleUser, Blocks: bs})
		}
		open = keepOpen
	}
	for i := range in {
		m := &in[i]
		var err error
		switch m.Role {
		case "system", "developer":
			var bs []conv.Block
			if bs, err = decodeOContent(m.Content, conv.SourceSystem); err == nil {
				if leading {
					system = append(system, bs...)
				} else {
					add(bs, true)
				}
			}
		case "user":
			leading = false
			var bs []conv.Block
			if bs, err = decodeOContent(m.Content, conv.SourceUser); err == nil {
				add(bs, false)
			}
		case "tool":
			leading = false
			var b conv.Block
			if b, err = decodeOToolResult(m); err == nil {
				add([]conv.Block{b}, true)
			}
		case "assistant":
			leading, open = false, false
			var am conv.Message
			if am, err = decodeOAssistant(m); err == nil {
				msgs = append(msgs, am)
			}
		default:
			err = fmt.Errorf("%w: role %q", ErrUnknownType, m.Role)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	fillNames(msgs)
	return msgs, system, nil
}

// decodeOContent decodes a message's content (string, parts or null) said
// by src.
func decodeOContent(data json.RawMessage, src conv.Source) ([]conv.Block, error) {
	text, parts, err := textOrList[oPartIn](data, src, "content: ", "parts")
	if err != nil || parts == nil {
		return text, err
	}
	out := make([]conv.Block, 0, len(parts))
	for k := range parts {
		p := &parts[k]
		switch p.Type {
		case "text":
			out = append(out, newText(src, p.Text))
		case "refusal":
			out = append(out, conv.NewText(src, p.Refusal))
		case "image_url":
			if p.ImageURL == nil {
				return nil, fmt.Errorf("%w: content[%d]: image_url part without image_url", ErrInvalid, k)
			}
			b, err := ImageFromURL(p.ImageURL.URL, src)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", k, err)
			}
			out = append(out, b)
		default:
			return nil, fmt.Errorf("content[%d]: %w: part type %q", k, ErrUnknownType, p.Type)
		}
	}
	return out, nil
}

// unmarkError reads the marker withErrorMarker puts before a failed tool
// result's text: the result is an error, its text what follows.
func unmarkError(b *conv.Block) {
	if b.Text == errorMarker {
		b.Text, b.IsError = "", true
	} else if t, ok := strings.CutPrefix(b.Text, errorMarker+"\n"); ok {
		b.Text, b.IsError = t, true
	}
}

func decodeOToolResult(m *oMessageIn) (conv.Block, error) {
	b := conv.NewToolResult(m.ToolCallID, "", "", false)
	data := present(m.Content)
	if len(data) > 0 && data[0] == '"' {
		if err := json.Unmarshal(data, &b.Text); err != nil {
			return b, fmt.Errorf("%w: content: %s", ErrInvalid, jsonerr.What(err))
		}
		unmarkError(&b)
		return b, nil
	}
	parts, err := decodeOContent(data, conv.SourceTool)
	if err != nil {
		return b, err
	}
	if len(parts) > 0 && parts[0].Type == conv.TypeText && parts[0].Text == errorMarker {
		parts, b.IsError = parts[1:], true
	}
	if len(parts) > 0 {
		b.Content = parts
	}
	return b, nil
}

func decodeOAssistant(m *oMessageIn) (conv.Message, error) {
	bs, err := decodeOContent(m.Content, conv.SourceAssistant)
	if err != nil {
		return conv.Message{}, err
	}
	for k := range bs {
		b := &bs[k]
		if t, ok := strings.CutPrefix(b.Text, thinkingOpen); ok && b.Type == conv.TypeText {
			if t, ok := strings.CutSuffix(t, thinkingClose); ok {
				*b = conv.NewThinking(t, "")
			}
		}
	}
	for k, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return conv.Message{}, fmt.Errorf("tool_calls[%d]: %w: tool call type %q", k, ErrUnknownType, tc.Type)
		}
		bs = append(bs, conv.NewToolUse(tc.ID, tc.Function.Name, Arguments(tc.Function.Arguments)))
	}
	return conv.Message{Role: conv.RoleAssistant, Blocks: bs}, nil
}

// Arguments turns a function call's arguments string into a tool_use
// input: a JSON object compacted, an empty string as {}, anything else
// wrapped as {"_raw_arguments": "…"} so that it is kept, and written back
// as it was by EncodeOpenAI.
func Arguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	if r, err := raw(json.RawMessage(s)); err == nil && isObject(r) {
		return r
	}
	b, _ := jsonenc.Marshal(map[string]string{rawArgsKey: s})
	return b
}
