package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// params maps a provider-neutral request onto chat completions. Like the
// Anthropic adapter it translates and fixes nothing.
func (p *Provider) params(req *llm.Request) (sdk.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	params.StreamOptions.IncludeUsage = sdk.Bool(true)
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.Info.MaxOutput
	}
	if p.official {
		params.MaxCompletionTokens = sdk.Int(int64(maxTokens))
	} else {
		params.MaxTokens = sdk.Int(int64(maxTokens))
	}
	var sys []string
	for i := range req.System {
		sys = append(sys, req.System[i].Text)
	}
	if len(sys) > 0 {
		params.Messages = append(params.Messages, sdk.SystemMessage(strings.Join(sys, "\n\n")))
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		fn := struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{t.Name, t.Description, schema}
		raw, err := json.Marshal(fn)
		if err != nil {
			return params, fmt.Errorf("openai: tool %s: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionToolUnionParam{OfFunction: &sdk.ChatCompletionFunctionToolParam{
			Function: param.Override[shared.FunctionDefinitionParam](json.RawMessage(raw))}})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		var err error
		if m.Role == conv.RoleAssistant {
			err = assistant(&params, m)
		} else {
			err = user(&params, m)
		}
		if err != nil {
			return params, fmt.Errorf("openai: message %d: %w", i, err)
		}
	}
	return params, nil
}

// user adds a user message: its tool results first, as tool messages, then
// the rest as one user message.
func user(params *sdk.ChatCompletionNewParams, m *conv.Message) error {
	var parts []sdk.ChatCompletionContentPartUnionParam
	var texts []string
	images := false
	for j := range m.Blocks {
		b := &m.Blocks[j]
		switch b.Type {
		case conv.TypeToolResult:
			text := resultText(b)
			if b.IsError {
				text = "Error: " + text
			}
			params.Messages = append(params.Messages, sdk.ToolMessage(text, b.ToolUseID))
		case conv.TypeText, conv.TypeSummary:
			texts = append(texts, b.Text)
			parts = append(parts, sdk.TextContentPart(b.Text))
		case conv.TypeImage:
			u, err := imageURL(b.ImageSource)
			if err != nil {
				return err
			}
			images = true
			parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: u}))
		case conv.TypeOpaque:
			// Another API's block: named, not sent (conv.Block.NoteText).
			texts = append(texts, b.NoteText())
			parts = append(parts, sdk.TextContentPart(b.NoteText()))
		case conv.TypeThinking, conv.TypeRedactedThinking:
		default:
			return fmt.Errorf("block %s: unknown type %q", b.ID, b.Type)
		}
	}
	switch {
	case images:
		params.Messages = append(params.Messages, sdk.UserMessage(parts))
	case len(texts) > 0:
		params.Messages = append(params.Messages, sdk.UserMessage(strings.Join(texts, "\n\n")))
	}
	return nil
}

// resultText is a tool result's text; images in it cannot go to a tool
// message and are named instead.
func resultText(b *conv.Block) string {
	if len(b.Content) == 0 {
		return b.Text
	}
	var parts []string
	for k := range b.Content {
		switch c := &b.Content[k]; c.Type {
		case conv.TypeImage:
			parts = append(parts, "[image omitted]")
		default:
			parts = append(parts, c.PlainText())
		}
	}
	return strings.Join(parts, "\n")
}

func assistant(params *sdk.ChatCompletionNewParams, m *conv.Message) error {
	var ap sdk.ChatCompletionAssistantMessageParam
	var texts []string
	for j := range m.Blocks {
		b := &m.Blocks[j]
		switch b.Type {
		case conv.TypeText, conv.TypeSummary:
			texts = append(texts, b.Text)
		case conv.TypeToolUse:
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			ap.ToolCalls = append(ap.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: b.ToolUseID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: args}}})
		case conv.TypeOpaque, conv.TypeServerToolUse:
			texts = append(texts, b.NoteText())
		case conv.TypeThinking, conv.TypeRedactedThinking:
			// Chat completions takes no thinking back.
		default:
			return fmt.Errorf("block %s: a %s block cannot go in an assistant message", b.ID, b.Type)
		}
	}
	if len(texts) > 0 || len(ap.ToolCalls) == 0 {
		ap.Content.OfString = sdk.String(strings.Join(texts, "\n\n"))
	}
	params.Messages = append(params.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &ap})
	return nil
}

// imageURL turns an Anthropic-style image source into the URL chat
// completions wants: the URL itself, or a data: URL.
func imageURL(src json.RawMessage) (string, error) {
	var s wire.ImageSource
	if err := json.Unmarshal(src, &s); err != nil {
		return "", fmt.Errorf("image source: %w", err)
	}
	if u, ok := s.AsURL(); ok {
		return u, nil
	}
	return "", fmt.Errorf("image source of type %q cannot be sent to chat completions", s.Type)
}

// stopReason maps finish_reason to the Anthropic-style stop reasons
// llm.Response uses; an unknown one passes as it is.
func stopReason(finish string) string {
	switch finish {
	case "stop":
		return "end_turn"
	case "tool_calls", "function_call":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	}
	return finish
}

func response(acc *sdk.ChatCompletionAccumulator, finish string, u sdk.CompletionUsage) *llm.Response {
	out := &llm.Response{ID: acc.ID, Model: acc.Model, Message: conv.Message{Role: conv.RoleAssistant}}
	out.StopReason = stopReason(finish)
	if len(acc.Choices) > 0 {
		msg := &acc.Choices[0].Message
		if strings.TrimSpace(msg.Content) != "" {
			out.Message.Blocks = append(out.Message.Blocks, conv.NewText(conv.SourceAssistant, msg.Content))
		}
		for _, tc := range msg.ToolCalls {
			out.Message.Blocks = append(out.Message.Blocks, conv.NewToolUse(tc.ID, tc.Function.Name, arguments(tc.Function.Arguments)))
		}
		// Some servers (older Ollama) finish a turn of tool calls with
		// "stop"; the calls are what counts.
		if len(msg.ToolCalls) > 0 && out.StopReason == "end_turn" {
			out.StopReason = "tool_use"
		}
	}
	cached := int(u.PromptTokensDetails.CachedTokens)
	if cached == 0 {
		// DeepSeek reports its cache hits beside the standard fields.
		if f, ok := u.JSON.ExtraFields["prompt_cache_hit_tokens"]; ok {
			var n int
			if json.Unmarshal([]byte(f.Raw()), &n) == nil {
				cached = n
			}
		}
	}
	write := int(u.PromptTokensDetails.CacheWriteTokens)
	out.Usage = llm.Usage{Input: max(int(u.PromptTokens)-cached-write, 0), Output: int(u.CompletionTokens), CacheWrite: write, CacheRead: cached}
	return out
}

// arguments makes a tool call's arguments a JSON object, as ctxkit's model
// requires. Arguments that are not one (models do produce broken JSON) are
// kept whole under "invalid_arguments", so the tool run fails visibly and
// the model can try again.
func arguments(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
		return json.RawMessage(args)
	}
	raw, _ := json.Marshal(map[string]string{"invalid_arguments": args})
	return raw
}
