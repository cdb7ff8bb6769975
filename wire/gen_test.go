package wire

import (
	"encoding/json"
	"fmt"

	"pgregory.net/rapid"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// genRequest draws a random request in the codec's canonical space: every
// field the wire carries, with the metadata a decoder assigns, so that
// decode(encode(r)) must equal r exactly. With openai set it leaves out what
// chat completions cannot carry (signatures, redacted thinking,
// cache_control, images inside tool results).
func genRequest(t *rapid.T, openai bool) *llm.Request {
	g := &reqGen{t: t, openai: openai}
	req := &llm.Request{
		Model:     rapid.SampledFrom([]string{"claude-sonnet-4-5", "gpt-5", ""}).Draw(t, "model"),
		MaxTokens: rapid.IntRange(0, 64000).Draw(t, "max_tokens"),
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "system") {
		b := conv.NewText(conv.SourceSystem, g.text(fmt.Sprintf("system%d", i)))
		if i == 1 && rapid.Bool().Draw(t, "system-summary") {
			b = g.summary()
		}
		b.CacheControl = g.cacheControl()
		req.System = append(req.System, b)
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "tools") {
		req.Tools = append(req.Tools, conv.Tool{
			Name:         fmt.Sprintf("tool_%d", i),
			Description:  rapid.SampledFrom([]string{"", "Run a command.", "读取文件"}).Draw(t, "desc"),
			InputSchema:  json.RawMessage(rapid.SampledFrom(schemas).Draw(t, "schema")),
			CacheControl: g.cacheControl(),
		})
	}
	var calls []conv.Block
	for i := range rapid.IntRange(1, 8).Draw(t, "messages") {
		var m conv.Message
		if i%2 == 0 {
			m = g.user(calls)
			calls = nil
		} else {
			m = g.assistant()
			calls = m.Blocks
		}
		req.Messages = append(req.Messages, m)
	}
	return req
}

var schemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`,
	`{"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"string"}}}`,
}

var inputs = []string{
	`{}`,
	`{"command":"go test ./...","timeout":120000}`,
	`{"z_last":1,"a_first":"<b>&amp;</b>","m":[3,2,1]}`,
	`{"path":"文档/说明.md","nested":{"b":2,"a":1}}`,
	`{"escaped":"\u003ctag\u003e \"quoted\" \\ back"}`,
}

type reqGen struct {
	t      *rapid.T
	openai bool
	calls  int
}

// text draws text that cannot be mistaken for one of the codecs' markers.
func (g *reqGen) text(label string) string {
	prefix := rapid.SampledFrom([]string{"", "fix the bug in ", "修复", "line\nbreak ", "  spaced ", "<b>tag</b> & "}).Draw(g.t, label+"-prefix")
	return prefix + rapid.String().Draw(g.t, label) + "."
}

func (g *reqGen) cacheControl() json.RawMessage {
	if g.openai {
		return nil
	}
	cc := rapid.SampledFrom([]string{"", `{"type":"ephemeral"}`, `{"type":"ephemeral","ttl":"1h"}`}).Draw(g.t, "cache_control")
	if cc == "" {
		return nil
	}
	return json.RawMessage(cc)
}

func (g *reqGen) summary() conv.Block {
	first := rapid.IntRange(0, 50).Draw(g.t, "span")
	b := conv.NewSummary(g.text("summary")+"\n</summary> inside", conv.Span{First: first, Last: first + rapid.IntRange(0, 20).Draw(g.t, "len")})
	b.Merged = rapid.Bool().Draw(g.t, "merged")
	if rapid.IntRange(0, 4).Draw(g.t, "nospan") == 0 {
		b.Span = nil
	}
	return b
}

func (g *reqGen) image(src conv.Source) conv.Block {
	s := rapid.SampledFrom([]string{
		`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`,
		`{"type":"url","url":"https://example.com/a.png"}`,
	}).Draw(g.t, "image")
	return conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(s), Meta: conv.DefaultMeta(conv.TypeImage, src)}
}

func (g *reqGen) user(calls []conv.Block) conv.Message {
	var bs []conv.Block
	for _, c := range calls {
		if c.Type != conv.TypeToolUse {
			continue
		}
		r := conv.NewToolResult(c.ToolUseID, c.Name, "", rapid.Bool().Draw(g.t, "is_error"))
		switch rapid.IntRange(0, 2).Draw(g.t, "result") {
		case 0:
			r.Text = g.text("result")
		case 1:
			for range rapid.IntRange(1, 2).Draw(g.t, "parts") {
				p := conv.NewText(conv.SourceTool, g.text("part"))
				p.CacheControl = g.cacheControl()
				r.Content = append(r.Content, p)
			}
			if !g.openai && rapid.Bool().Draw(g.t, "result-image") {
				r.Content = append(r.Content, g.image(conv.SourceTool))
			}
		} // case 2: empty result
		r.CacheControl = g.cacheControl()
		bs = append(bs, r)
	}
	if rapid.IntRange(0, 3).Draw(g.t, "reminder") == 0 {
		bs = append(bs, conv.NewText(conv.SourceReminder, "<system-reminder>\n"+g.text("reminder")+"\n</system-reminder>"))
	}
	if rapid.IntRange(0, 3).Draw(g.t, "has-summary") == 0 {
		bs = append(bs, g.summary())
	}
	if rapid.IntRange(0, 4).Draw(g.t, "has-image") == 0 {
		bs = append(bs, g.image(conv.SourceUser))
	}
	if len(bs) == 0 || rapid.Bool().Draw(g.t, "has-text") {
		b := conv.NewText(conv.SourceUser, g.text("user"))
		b.CacheControl = g.cacheControl()
		bs = append(bs, b)
	}
	return conv.Message{Role: conv.RoleUser, Blocks: bs}
}

func (g *reqGen) assistant() conv.Message {
	var bs []conv.Block
	switch rapid.IntRange(0, 3).Draw(g.t, "thinking") {
	case 0:
		sig := ""
		if !g.openai {
			sig = rapid.SampledFrom([]string{"", "EqQBCkgIARABGAIiQL"}).Draw(g.t, "signature")
		}
		bs = append(bs, conv.NewThinking(g.text("thought"), sig))
	case 1:
		if !g.openai {
			bs = append(bs, conv.Block{Type: conv.TypeRedactedThinking, Data: "EmwKAhgBEgy3va3pzix", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)})
		}
	}
	for range rapid.IntRange(0, 2).Draw(g.t, "texts") {
		b := conv.NewText(conv.SourceAssistant, g.text("assistant"))
		b.CacheControl = g.cacheControl()
		bs = append(bs, b)
	}
	n := rapid.IntRange(0, 3).Draw(g.t, "calls")
	if len(bs) == 0 && n == 0 {
		n = 1
	}
	for range n {
		g.calls++
		input := json.RawMessage(rapid.SampledFrom(inputs).Draw(g.t, "input"))
		if rapid.IntRange(0, 5).Draw(g.t, "raw-args") == 0 {
			input = Arguments(rapid.SampledFrom([]string{"not json", `["a"]`, `{"broken":`}).Draw(g.t, "args"))
		}
		b := conv.NewToolUse(fmt.Sprintf("toolu_%02d", g.calls), rapid.SampledFrom([]string{"Bash", "Read", "mcp__srv__do"}).Draw(g.t, "name"), input)
		b.CacheControl = g.cacheControl()
		bs = append(bs, b)
	}
	return conv.Message{Role: conv.RoleAssistant, Blocks: bs}
}
