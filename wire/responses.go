package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/jsonerr"
	"github.com/ctxkit/ctxkit/llm"
)

// The OpenAI Responses API request (POST /v1/responses) as a stateless
// client sends it: the whole history as input items every turn.

// ResponsesOptions are what a Responses request carries besides the
// conversation: how its client sends the system prompt and the fields it
// sets.
type ResponsesOptions struct {
	// Developer sends the system prompt as a developer message at the
	// start of input (as Codex CLI does) instead of instructions.
	Developer bool
	// Stream, Store and Include are the request's fields of those names;
	// CacheKey is prompt_cache_key. ToolChoice and Parallel set
	// tool_choice "auto" and parallel_tool_calls.
	Stream   bool
	Store    bool
	Include  []string
	CacheKey string
	Parallel bool
	// Reasoning is the reasoning field, written as is when set.
	Reasoning json.RawMessage
}

type (
	rRequest struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions,omitempty"`
		Input        []any           `json:"input"`
		Tools        []any           `json:"tools,omitempty"`
		ToolChoice   string          `json:"tool_choice,omitempty"`
		Parallel     bool            `json:"parallel_tool_calls"`
		Reasoning    json.RawMessage `json:"reasoning,omitempty"`
		Store        bool            `json:"store"`
		Stream       bool            `json:"stream"`
		Include      []string        `json:"include,omitempty"`
		CacheKey     string          `json:"prompt_cache_key,omitempty"`
		MaxOutput    int             `json:"max_output_tokens,omitempty"`
	}
	rMessage struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []any  `json:"content"` // rPart, or a part as recorded (json.RawMessage)
	}
	rPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	rReasoning struct {
		Type      string  `json:"type"`
		Summary   []rPart `json:"summary"`
		Encrypted string  `json:"encrypted_content,omitempty"`
	}
	rCall struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
	}
	rCustomCall struct {
		Type   string `json:"type"`
		Name   string `json:"name"`
		Input  string `json:"input"`
		CallID string `json:"call_id"`
	}
	rOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	rFunctionTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Strict      bool            `json:"strict"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	rCustomTool struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
	}
)

// customInput is the text of a freeform (custom tool) call's input: a
// tool_use input of exactly {"input": "…"}, the shape the Codex importer
// and DecodeResponses give it.
func customInput(in json.RawMessage) (string, bool) {
	var w map[string]json.RawMessage
	if json.Unmarshal(in, &w) != nil || len(w) != 1 {
		return "", false
	}
	var s string
	if json.Unmarshal(w["input"], &s) != nil {
		return "", false
	}
	return s, true
}

// customTools are the tools every call of which has a freeform input:
// Codex's apply_patch, sent as custom tools and custom_tool_call items.
func customTools(ms []conv.Message) map[string]bool {
	custom := map[string]bool{}
	for i := range ms {
		for j := range ms[i].Blocks {
			b := &ms[i].Blocks[j]
			if b.Type != conv.TypeToolUse {
				continue
			}
			_, ok := customInput(b.Input)
			if was, seen := custom[b.Name]; seen {
				ok = ok && was
			}
			custom[b.Name] = ok
		}
	}
	return custom
}

// EncodeResponses returns req as a Responses API request body. A tool
// whose every call has an input of exactly {"input": "…"} is a custom
// (freeform) tool, its calls custom_tool_call items; thinking becomes a
// reasoning item whose summary is the text and whose encrypted_content is
// the signature; redacted thinking a reasoning item with no summary whose
// encrypted_content is its data.
func EncodeResponses(req *llm.Request, opt ResponsesOptions) ([]byte, error) {
	out := rRequest{Model: req.Model, Input: []any{}, Parallel: opt.Parallel, Reasoning: opt.Reasoning,
		Store: opt.Store, Stream: opt.Stream, Include: opt.Include, CacheKey: opt.CacheKey, MaxOutput: req.MaxTokens}
	var sys []string
	for i := range req.System {
		b := &req.System[i]
		if b.Type != conv.TypeText && b.Type != conv.TypeSummary {
			return nil, fmt.Errorf("system[%d]: %w: %q block in the system prompt", i, ErrUnknownType, b.Type)
		}
		sys = append(sys, textOf(b))
	}
	if opt.Developer {
		for _, s := range sys {
			out.Input = append(out.Input, rMessage{Type: "message", Role: "developer", Content: []any{rPart{Type: "input_text", Text: s}}})
		}
	} else {
		out.Instructions = strings.Join(sys, "\n\n")
	}
	custom := customTools(req.Messages)
	for _, t := range req.Tools {
		if custom[t.Name] {
			out.Tools = append(out.Tools, rCustomTool{Type: "custom", Name: t.Name, Description: t.Description})
			continue
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, rFunctionTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	if len(out.Tools) > 0 {
		out.ToolChoice = "auto"
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		var parts []any // the user or assistant message being built
		role, partType := "user", "input_text"
		if m.Role == conv.RoleAssistant {
			role, partType = "assistant", "output_text"
		}
		flush := func() {
			if len(parts) > 0 {
				out.Input = append(out.Input, rMessage{Type: "message", Role: role, Content: parts})
				parts = nil
			}
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			switch b.Type {
			case conv.TypeText, conv.TypeSummary:
				parts = append(parts, rPart{Type: partType, Text: textOf(b)})
				if m.Role == conv.RoleAssistant {
					flush() // one message item per text, as a model outputs them
				}
			case conv.TypeImage:
				if m.Role == conv.RoleAssistant {
					return nil, fmt.Errorf("messages[%d].content[%d]: %w: an image in an assistant message", i, j, ErrUnknownType)
				}
				src := ImageSourceOf(b)
				if u, ok := src.AsURL(); ok {
					parts = append(parts, rPart{Type: "input_image", ImageURL: u})
				} else {
					parts = append(parts, rPart{Type: partType, Text: src.note("the Responses API")})
				}
			case conv.TypeThinking:
				flush()
				out.Input = append(out.Input, rReasoning{Type: "reasoning", Summary: []rPart{{Type: "summary_text", Text: b.Text}}, Encrypted: b.Signature})
			case conv.TypeRedactedThinking:
				flush()
				out.Input = append(out.Input, rReasoning{Type: "reasoning", Summary: []rPart{}, Encrypted: b.Data})
			case conv.TypeToolUse:
				flush()
				if in, ok := customInput(b.Input); ok && custom[b.Name] {
					out.Input = append(out.Input, rCustomCall{Type: "custom_tool_call", Name: b.Name, Input: in, CallID: b.ToolUseID})
					continue
				}
				args, ok := rawArguments(b.Input)
				if !ok {
					args = string(b.Input)
				}
				out.Input = append(out.Input, rCall{Type: "function_call", Name: b.Name, Arguments: args, CallID: b.ToolUseID})
			case conv.TypeToolResult:
				flush()
				text := b.ResultText()
				if b.IsError {
					text = withErrorMarker(text)
				}
				typ := "function_call_output"
				if custom[b.Name] {
					typ = "custom_tool_call_output"
				}
				out.Input = append(out.Input, rOutput{Type: typ, CallID: b.ToolUseID, Output: text})
			case conv.TypeServerToolUse, conv.TypeOpaque:
				// What the provider ran itself, or a part ctxkit does not
				// read: byte for byte to its own API, a note to another.
				switch {
				case b.Provider == conv.ProviderResponses && len(b.Raw) > 0 && b.Type == conv.TypeServerToolUse:
					flush()
					out.Input = append(out.Input, b.Raw) // the item as recorded (a web_search_call)
				case b.Provider == conv.ProviderResponses && len(b.Raw) > 0:
					parts = append(parts, b.Raw) // a content part as recorded
				default:
					parts = append(parts, rPart{Type: partType, Text: b.NoteText()})
				}
			default:
				return nil, fmt.Errorf("messages[%d].content[%d]: %w: %q block", i, j, ErrUnknownType, b.Type)
			}
		}
		flush()
	}
	data, err := jsonenc.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("wire: encode responses request: %w", err)
	}
	return data, nil
}

// Decoding shapes.
type (
	rRequestIn struct {
		Model        string            `json:"model"`
		Instructions string            `json:"instructions"`
		Input        json.RawMessage   `json:"input"`
		Tools        []json.RawMessage `json:"tools"`
		MaxOutput    int               `json:"max_output_tokens"`
	}
	rToolIn struct {
		Type        string            `json:"type"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Parameters  json.RawMessage   `json:"parameters"`
		Tools       []json.RawMessage `json:"tools"` // a namespace's
	}
	rItemIn struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Summary   []rPart         `json:"summary"`
		Encrypted string          `json:"encrypted_content"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		CallID    string          `json:"call_id"`
		ID        string          `json:"id"`
		Output    json.RawMessage `json:"output"`
		Action    json.RawMessage `json:"action"`
	}
)

// customSchema is the input schema a custom tool decodes with.
var customSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}},"required":["input"]}`)

// DecodeResponses parses a Responses API request body. Instructions and
// system or developer messages become the system prompt; consecutive
// output items (assistant messages, reasoning, calls) one assistant
// message, and user messages with the call outputs around them user
// messages. A reasoning item with summary text decodes to thinking (the
// encrypted content its signature), one without to redacted thinking;
// a compaction item to redacted thinking too (opaque to all but its
// provider). Custom tool calls get the input {"input": "…"}. Items the
// provider ran itself (web search and the like) and other item types
// decode as text of their JSON, on the side that sent them.
func DecodeResponses(data []byte) (*llm.Request, error) {
	var in rRequestIn
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
	}
	req := &llm.Request{Model: in.Model, MaxTokens: in.MaxOutput}
	if in.Instructions != "" {
		req.System = append(req.System, conv.NewText(conv.SourceSystem, in.Instructions))
	}
	tools := in.Tools
	for i := 0; i < len(tools); i++ {
		var t rToolIn
		if err := json.Unmarshal(tools[i], &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w: %s", i, ErrInvalid, jsonerr.What(err))
		}
		switch t.Type {
		case "function":
			schema, err := raw(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("tools[%d] %q: %w: parameters: %v", i, t.Name, ErrInvalid, err)
			}
			req.Tools = append(req.Tools, conv.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
		case "custom":
			req.Tools = append(req.Tools, conv.Tool{Name: t.Name, Description: t.Description, InputSchema: customSchema})
		case "namespace":
			tools = append(tools, t.Tools...)
		}
	}
	var recorded []json.RawMessage // each item's bytes
	switch d := present(in.Input); {
	case len(d) == 0:
	case d[0] == '"':
		var s string
		if err := json.Unmarshal(d, &s); err != nil {
			return nil, fmt.Errorf("%w: input: %s", ErrInvalid, jsonerr.What(err))
		}
		req.Messages = []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{newText(conv.SourceUser, s)}}}
	default:
		if err := json.Unmarshal(d, &recorded); err != nil {
			return nil, fmt.Errorf("%w: input is neither a string nor a list of items: %s", ErrInvalid, jsonerr.What(err))
		}
	}
	add := func(role conv.Role, bs ...conv.Block) {
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == role {
			req.Messages[n-1].Blocks = append(req.Messages[n-1].Blocks, bs...)
			return
		}
		req.Messages = append(req.Messages, conv.Message{Role: role, Blocks: bs})
	}
	for i := range recorded {
		at := func(err error) error { return fmt.Errorf("input[%d]: %w", i, err) }
		it, err := DecodeResponsesItem(recorded[i])
		switch {
		case errors.Is(err, ErrUnknownType):
			// An item type ctxkit does not read: text of its content, on
			// the side that sent it.
			var o struct {
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(recorded[i], &o)
			r, err := raw(o.Content)
			if err != nil {
				return nil, at(fmt.Errorf("%w: %v", ErrInvalid, err))
			}
			text := "[" + it.Type + "]"
			if len(r) > 0 {
				text += " " + string(r)
			}
			if strings.HasSuffix(it.Type, "_call") {
				add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, text))
			} else {
				add(conv.RoleUser, conv.NewText(conv.SourceUser, text))
			}
			continue
		case err != nil:
			return nil, at(err)
		}
		switch it.Type {
		case "", "message":
			if !responsesRoles[it.Role] {
				return nil, at(fmt.Errorf("%w: role %q", ErrUnknownType, it.Role))
			}
			for k := range it.Blocks {
				if b := &it.Blocks[k]; b.Type == conv.TypeText {
					*b = newText(b.Meta.Source, b.Text) // a summary or reminder ctxkit wrote
				}
			}
			switch it.Role {
			case "system", "developer":
				req.System = append(req.System, it.Blocks...)
			case "assistant":
				add(conv.RoleAssistant, it.Blocks...)
			default:
				add(conv.RoleUser, it.Blocks...)
			}
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			for k := range it.Blocks {
				unmarkError(&it.Blocks[k])
			}
			add(conv.RoleUser, it.Blocks...)
		default: // the model's output: reasoning, calls
			add(conv.RoleAssistant, it.Blocks...)
		}
	}
	fillNames(req.Messages)
	return req, nil
}

// responsesRoles are the roles of a Responses message item.
var responsesRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// ResponsesItem is one Responses API item decoded into conv blocks.
type ResponsesItem struct {
	// Type is the item's type as written: empty for a message in the
	// API's short form, without one.
	Type string
	// Role is a message's role as written (user, assistant, system,
	// developer); empty for other items.
	Role string
	// Blocks hold what the item says. A message's text, images and parts
	// of other types (opaque) are said by its role: SourceAssistant,
	// SourceSystem for system and developer, SourceUser otherwise; a
	// caller that knows better sets Meta itself. Every other item is one
	// block: a reasoning item with summary text is thinking (the summary
	// its text, the encrypted content its signature), one with encrypted
	// content only is redacted thinking, as is a compaction item (opaque to
	// all but its provider), and one with neither (a reference to
	// reasoning the provider stores) a server tool call that keeps the
	// item's bytes; function_call, custom_tool_call (input {"input": "…"})
	// and local_shell_call (input its action) are tool_use; their outputs
	// tool_result, with the text of the output's parts one a line and
	// is_error when a {content, success} output says success false; a
	// web_search_call, run by the provider, is a server tool call that
	// keeps the item's bytes.
	Blocks []conv.Block
}

// DecodeResponsesItem decodes one item of a Responses API request's input,
// or of a response's output: the items Codex CLI records in its rollouts.
// An item of a type it does not read fails with ErrUnknownType, its Type
// set; what to do with it is the caller's. Texts are plain text blocks:
// DecodeResponses then reads the summaries and reminders ctxkit writes.
func DecodeResponsesItem(data json.RawMessage) (ResponsesItem, error) {
	var in rItemIn
	if err := json.Unmarshal(data, &in); err != nil {
		return ResponsesItem{}, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
	}
	it := ResponsesItem{Type: in.Type, Role: in.Role}
	one := func(b conv.Block) (ResponsesItem, error) {
		it.Blocks = []conv.Block{b}
		return it, nil
	}
	switch in.Type {
	case "", "message":
		src := conv.SourceUser
		switch in.Role {
		case "assistant":
			src = conv.SourceAssistant
		case "system", "developer":
			src = conv.SourceSystem
		}
		bs, err := decodeRContent(in.Content, src)
		it.Blocks = bs
		return it, err
	case "reasoning":
		var sb strings.Builder
		for _, p := range in.Summary {
			sb.WriteString(p.Text)
		}
		if sb.Len() > 0 {
			return one(conv.NewThinking(sb.String(), in.Encrypted))
		}
		if in.Encrypted == "" {
			// Neither summary nor content: a reference to reasoning the
			// provider stores (store: true, by its id). Kept as recorded,
			// to go back to its provider as this item.
			return one(conv.NewServerToolUse(conv.ProviderResponses, in.ID, "reasoning", json.RawMessage("{}"), append(json.RawMessage(nil), data...)))
		}
		return one(redactedThinking(in.Encrypted))
	case "compaction":
		return one(redactedThinking(in.Encrypted))
	case "function_call":
		return one(conv.NewToolUse(in.CallID, in.Name, Arguments(in.Arguments)))
	case "custom_tool_call":
		input, _ := jsonenc.Marshal(map[string]string{"input": in.Input})
		return one(conv.NewToolUse(in.CallID, in.Name, input))
	case "local_shell_call":
		id := in.CallID
		if id == "" {
			id = in.ID
		}
		return one(conv.NewToolUse(id, "local_shell", objectOr(in.Action)))
	case "web_search_call":
		// Run by the provider: a call that needs no result, kept as
		// recorded to go back to its provider as this item.
		return one(conv.NewServerToolUse(conv.ProviderResponses, in.ID, "web_search", objectOr(in.Action), append(json.RawMessage(nil), data...)))
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		text, isErr, err := decodeROutput(in.Output)
		if err != nil {
			return it, err
		}
		return one(conv.NewToolResult(in.CallID, "", text, isErr))
	}
	return it, fmt.Errorf("%w: item type %q", ErrUnknownType, in.Type)
}

// objectOr is r compacted when it is a JSON object, else {}.
func objectOr(r json.RawMessage) json.RawMessage {
	if r, err := raw(r); err == nil && isObject(r) {
		return r
	}
	return json.RawMessage("{}")
}

// redactedThinking is reasoning only its provider can read.
func redactedThinking(data string) conv.Block {
	return conv.Block{Type: conv.TypeRedactedThinking, Data: data, Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)}
}

// decodeROutput reads a tool call's output: a string, a list of content
// parts (their texts one a line, parts without text left out), or
// {content, success} (Codex's rollouts before 0.3x), whose success false
// marks an error.
func decodeROutput(data json.RawMessage) (text string, isErr bool, err error) {
	data = present(data)
	if len(data) > 0 && data[0] == '{' {
		var o struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		if err := json.Unmarshal(data, &o); err != nil {
			return "", false, fmt.Errorf("%w: output: %s", ErrInvalid, jsonerr.What(err))
		}
		text, _, err = decodeROutput(o.Content)
		return text, o.Success != nil && !*o.Success, err
	}
	bs, err := decodeRContent(data, conv.SourceTool)
	if err != nil {
		return "", false, err
	}
	var texts []string
	for i := range bs {
		if t := bs[i].PlainText(); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n"), false, nil
}

// decodeRContent decodes an item's content: a string or a list of parts
// (input_text, output_text, summary_text, input_image, whose image_url is
// a URL or {url}). A part of another type (refusal, newer ones), or an
// input_image without an image_url (an uploaded file's), is kept whole,
// as an opaque block of the Responses API.
func decodeRContent(data json.RawMessage, src conv.Source) ([]conv.Block, error) {
	if data = present(data); len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("%w: content: %s", ErrInvalid, jsonerr.What(err))
		}
		return []conv.Block{conv.NewText(src, s)}, nil
	}
	_, parts, err := textOrList[json.RawMessage](data, src, "content: ", "content parts")
	if err != nil {
		return nil, err
	}
	var out []conv.Block
	for k, r := range parts {
		var p struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if err := json.Unmarshal(r, &p); err != nil {
			return nil, fmt.Errorf("content[%d]: %w: %s", k, ErrInvalid, jsonerr.What(err))
		}
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text":
			out = append(out, conv.NewText(src, p.Text))
		case "input_image":
			if present(p.ImageURL) == nil {
				// An uploaded file's image (file_id): kept whole.
				out = append(out, conv.NewOpaque(conv.ProviderResponses, r, src))
				continue
			}
			var url string
			if json.Unmarshal(p.ImageURL, &url) != nil {
				var o struct {
					URL string `json:"url"`
				}
				_ = json.Unmarshal(p.ImageURL, &o)
				url = o.URL
			}
			b, err := ImageFromURL(url, src)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", k, err)
			}
			out = append(out, b)
		default:
			out = append(out, conv.NewOpaque(conv.ProviderResponses, r, src))
		}
	}
	return out, nil
}
