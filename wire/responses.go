package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/llm"
)

// OpenAI Responses API request body (stateless: the whole history in
// input, as Codex sends it with store:false), in the field order it is
// written.
type rRequest struct {
	Model           string  `json:"model"`
	Instructions    string  `json:"instructions,omitempty"`
	Input           []any   `json:"input"`
	Tools           []rTool `json:"tools,omitempty"`
	Store           bool    `json:"store"`
	MaxOutputTokens int     `json:"max_output_tokens,omitempty"`
}

type (
	rTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	rMessage struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []any  `json:"content"`
	}
	rPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	rCall struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	rOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	rReasoning struct {
		Type             string `json:"type"`
		Summary          []any  `json:"summary"`
		EncryptedContent string `json:"encrypted_content"`
	}
)

// EncodeResponses returns req as an OpenAI Responses API request body with
// the whole history as input items (store:false), as Codex sends it.
func EncodeResponses(req *llm.Request) ([]byte, error) {
	out := rRequest{Model: req.Model, Input: []any{}, MaxOutputTokens: req.MaxTokens}
	var sys []string
	for i := range req.System {
		sys = append(sys, req.System[i].PlainText())
	}
	out.Instructions = strings.Join(sys, "\n\n")
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, rTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	for i := range req.Messages {
		items, err := responsesItems(&req.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("messages[%d].%w", i, err)
		}
		out.Input = append(out.Input, items...)
	}
	data, err := jsonenc.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("wire: encode responses request: %w", err)
	}
	return data, nil
}

// responsesItems are the input items of one message: its content as
// message items, split around the calls, reasoning, results and server
// calls that are items of their own.
func responsesItems(m *conv.Message) ([]any, error) {
	var items []any
	var parts []any
	textType := "input_text"
	if m.Role == conv.RoleAssistant {
		textType = "output_text"
	}
	flush := func() {
		if len(parts) > 0 {
			items = append(items, rMessage{Type: "message", Role: string(m.Role), Content: parts})
			parts = nil
		}
	}
	item := func(v any) {
		flush()
		items = append(items, v)
	}
	for j := range m.Blocks {
		b := &m.Blocks[j]
		switch b.Type {
		case conv.TypeText, conv.TypeSummary:
			parts = append(parts, rPart{Type: textType, Text: textOf(b)})
		case conv.TypeImage:
			if m.Role == conv.RoleUser {
				parts = append(parts, responsesImage(b))
			}
		case conv.TypeThinking:
			// Plain thinking has no input form; the encrypted kind does.
		case conv.TypeRedactedThinking:
			item(rReasoning{Type: "reasoning", Summary: []any{}, EncryptedContent: b.Data})
		case conv.TypeToolUse:
			item(rCall{Type: "function_call", CallID: b.ToolUseID, Name: b.Name, Arguments: arguments(b)})
		case conv.TypeToolResult:
			text := b.ResultText()
			if b.IsError {
				text = withErrorMarker(text)
			}
			item(rOutput{Type: "function_call_output", CallID: b.ToolUseID, Output: text})
		case conv.TypeServerToolUse, conv.TypeOpaque:
			switch {
			case b.Provider == conv.ProviderResponses && len(b.Raw) > 0 && b.Type == conv.TypeServerToolUse:
				item(b.Raw) // the item as recorded (a web_search_call)
			case b.Provider == conv.ProviderResponses && len(b.Raw) > 0:
				parts = append(parts, b.Raw) // a content part as recorded
			default:
				parts = append(parts, rPart{Type: textType, Text: b.NoteText()})
			}
		default:
			return nil, fmt.Errorf("content[%d]: %w: block type %q", j, ErrUnknownType, b.Type)
		}
	}
	flush()
	return items, nil
}

// responsesImage is an image as an input_image part (a data URL for a
// base64 source), or a note for a source the API cannot take.
func responsesImage(b *conv.Block) any {
	switch p := imagePart(b).(type) {
	case oImagePart:
		return rPart{Type: "input_image", ImageURL: p.ImageURL.URL}
	case oTextPart:
		return rPart{Type: "input_text", Text: p.Text}
	}
	return nil
}
