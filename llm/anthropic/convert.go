package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// params maps a provider-neutral request onto the SDK's. It translates
// faithfully and fixes nothing: a request that breaks the API's rules is
// sent as it is and refused, so that tests against the validating test
// server catch the engine that built it.
func (p *Provider) params(req *llm.Request) (sdk.MessageNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.Info.MaxOutput
	}
	params := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: int64(maxTokens)}
	for i := range req.System {
		b := &req.System[i]
		tb := sdk.TextBlockParam{Text: b.Text}
		if err := cacheControl(&tb.CacheControl, b.CacheControl); err != nil {
			return params, fmt.Errorf("anthropic: system block %d: %w", i, err)
		}
		params.System = append(params.System, tb)
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		if err := cacheControl(&tp.CacheControl, t.CacheControl); err != nil {
			return params, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		mp := sdk.MessageParam{Role: sdk.MessageParamRole(m.Role)}
		for j := range m.Blocks {
			cb, err := block(&m.Blocks[j])
			if err != nil {
				return params, fmt.Errorf("anthropic: message %d block %d (%s): %w", i, j, m.Blocks[j].ID, err)
			}
			mp.Content = append(mp.Content, cb)
		}
		params.Messages = append(params.Messages, mp)
	}
	return params, nil
}

// block maps one conversation block; summaries go as text.
func block(b *conv.Block) (sdk.ContentBlockParamUnion, error) {
	var u sdk.ContentBlockParamUnion
	switch b.Type {
	case conv.TypeText, conv.TypeSummary:
		tb := sdk.TextBlockParam{Text: b.Text}
		if err := cacheControl(&tb.CacheControl, b.CacheControl); err != nil {
			return u, err
		}
		u.OfText = &tb
	case conv.TypeToolUse:
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		tu := sdk.ToolUseBlockParam{ID: b.ToolUseID, Name: b.Name, Input: input}
		if err := cacheControl(&tu.CacheControl, b.CacheControl); err != nil {
			return u, err
		}
		u.OfToolUse = &tu
	case conv.TypeToolResult:
		tr := sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
		if b.IsError {
			tr.IsError = sdk.Bool(true)
		}
		if err := cacheControl(&tr.CacheControl, b.CacheControl); err != nil {
			return u, err
		}
		switch {
		case len(b.Content) > 0:
			for k := range b.Content {
				c, err := resultPart(&b.Content[k])
				if err != nil {
					return u, err
				}
				tr.Content = append(tr.Content, c)
			}
		case b.Text != "":
			tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Text}}}
		}
		u.OfToolResult = &tr
	case conv.TypeThinking:
		// Thinking cannot carry cache_control; it is cached as part of the
		// prefix.
		u.OfThinking = &sdk.ThinkingBlockParam{Thinking: b.Text, Signature: b.Signature}
	case conv.TypeRedactedThinking:
		u.OfRedactedThinking = &sdk.RedactedThinkingBlockParam{Data: b.Data}
	case conv.TypeImage:
		ib, err := image(b)
		if err != nil {
			return u, err
		}
		u.OfImage = ib
	case conv.TypeOpaque, conv.TypeServerToolUse:
		u.OfText = opaque(b)
	default:
		return u, fmt.Errorf("unknown block type %q", b.Type)
	}
	return u, nil
}

// opaque is an opaque block or a server tool call: its recorded bytes when
// they are the Messages API's, its one-line note otherwise.
func opaque(b *conv.Block) *sdk.TextBlockParam {
	if b.Provider == conv.ProviderAnthropic && len(b.Raw) > 0 {
		tb := param.Override[sdk.TextBlockParam](json.RawMessage(b.Raw))
		return &tb
	}
	return &sdk.TextBlockParam{Text: b.NoteText()}
}

// resultPart maps a part of a tool result given as a list.
func resultPart(b *conv.Block) (sdk.ToolResultBlockParamContentUnion, error) {
	var u sdk.ToolResultBlockParamContentUnion
	switch b.Type {
	case conv.TypeText, conv.TypeSummary:
		tb := sdk.TextBlockParam{Text: b.Text}
		if err := cacheControl(&tb.CacheControl, b.CacheControl); err != nil {
			return u, err
		}
		u.OfText = &tb
	case conv.TypeImage:
		ib, err := image(b)
		if err != nil {
			return u, err
		}
		u.OfImage = ib
	case conv.TypeOpaque:
		u.OfText = opaque(b)
	default:
		return u, fmt.Errorf("a tool result cannot hold a %s block", b.Type)
	}
	return u, nil
}

func image(b *conv.Block) (*sdk.ImageBlockParam, error) {
	var src sdk.ImageBlockParamSourceUnion
	if err := json.Unmarshal(b.ImageSource, &src); err != nil {
		return nil, fmt.Errorf("image source: %w", err)
	}
	ib := &sdk.ImageBlockParam{Source: src}
	if err := cacheControl(&ib.CacheControl, b.CacheControl); err != nil {
		return nil, err
	}
	return ib, nil
}

// cacheControl sets dst from a block's cache_control object, if any.
func cacheControl(dst *sdk.CacheControlEphemeralParam, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var cc struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(raw, &cc); err != nil {
		return fmt.Errorf("cache_control: %w", err)
	}
	if cc.Type != "" && cc.Type != "ephemeral" {
		return fmt.Errorf("cache_control: unknown type %q", cc.Type)
	}
	*dst = sdk.NewCacheControlEphemeralParam()
	dst.TTL = sdk.CacheControlEphemeralTTL(cc.TTL)
	return nil
}

// response maps the accumulated message back. Text the model left blank
// is dropped: the API refuses blank text blocks, so keeping one would break
// the next request.
func response(m *sdk.Message) *llm.Response {
	out := &llm.Response{ID: m.ID, Model: string(m.Model), StopReason: string(m.StopReason),
		Message: conv.Message{Role: conv.RoleAssistant}}
	for _, c := range m.Content {
		var b conv.Block
		switch c.Type {
		case "text":
			if strings.TrimSpace(c.Text) == "" {
				continue
			}
			b = conv.NewText(conv.SourceAssistant, c.Text)
		case "thinking":
			b = conv.NewThinking(c.Thinking, c.Signature)
		case "redacted_thinking":
			b = conv.Block{Type: conv.TypeRedactedThinking, Data: c.Data, Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)}
		case "tool_use":
			input := json.RawMessage(append([]byte(nil), c.Input...))
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage(`{}`)
			}
			b = conv.NewToolUse(c.ID, c.Name, input)
		default:
			continue // server tools and the like: not part of ctxkit's model
		}
		out.Message.Blocks = append(out.Message.Blocks, b)
	}
	u := m.Usage
	out.Usage = llm.Usage{Input: int(u.InputTokens), Output: int(u.OutputTokens),
		CacheWrite: int(u.CacheCreationInputTokens), CacheRead: int(u.CacheReadInputTokens)}
	return out
}
