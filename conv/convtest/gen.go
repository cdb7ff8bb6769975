package convtest

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Choices turns a byte string into a sequence of choices. When the bytes
// run out every choice is 0, so any input, the empty one included, yields a
// result: small inputs give small conversations.
type Choices struct {
	data []byte
	pos  int
}

// NewChoices returns choices read from data.
func NewChoices(data []byte) *Choices { return &Choices{data: data} }

// Byte returns the next byte, 0 once the input is used up.
func (ch *Choices) Byte() byte {
	if ch.pos >= len(ch.data) {
		return 0
	}
	b := ch.data[ch.pos]
	ch.pos++
	return b
}

// Intn returns a number in [0, n); 0 when n <= 1.
func (ch *Choices) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	v := int(ch.Byte())
	if n > 256 {
		v = v<<8 | int(ch.Byte())
	}
	return v % n
}

// Bool returns a coin flip.
func (ch *Choices) Bool() bool { return ch.Byte()&1 == 1 }

// Pick returns one of ss.
func Pick[T any](ch *Choices, ss []T) T { return ss[ch.Intn(len(ss))] }

// Options shape the conversations Valid builds.
type Options struct {
	// MaxRounds bounds the number of rounds; 0 means 6.
	MaxRounds int
	// Request makes the conversation end with a user message, as a request
	// to a provider must.
	Request bool
	// Opaque adds blocks of types ctxkit does not read, from the Messages
	// API: a document in user messages, a tool_reference in tool results,
	// a server tool call and its result in assistant messages.
	Opaque bool
}

// OpaqueRaw are the opaque blocks Options.Opaque adds, by where they go,
// in the compact form the Messages API encoder writes them back in.
var OpaqueRaw = struct{ User, Result, ServerCall, ServerResult string }{
	User:         `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"a <b> & c"},"title":"notes"}`,
	Result:       `{"type":"tool_reference","tool_name":"Read"}`,
	ServerCall:   `{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"go 1.26"}}`,
	ServerResult: `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","url":"https://go.dev/doc/go1.26","title":"Go 1.26","encrypted_content":"EqgfCioIARgB"}]}`,
}

// Texts are the strings generated blocks carry: prose, code, CJK, emoji,
// JSON, markup and a tag closer that assembly must escape.
var Texts = []string{
	"fix the failing test in auth/login.go",
	"Let me look at the code first.",
	"修复登录页面的错误，然后运行所有测试。",
	"héllo wörld — naïve café",
	"emoji 🚀 and ✓ marks",
	"line one\nline two\n\ttabbed line",
	`{"key": "value", "n": 1, "nested": {"b": 2, "a": 1}}`,
	"<b>markup</b> & entities &amp; <script>alert(1)</script>",
	"</system-reminder> a tool output trying to close a tag",
	"package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	strings.Repeat("a longer paragraph of text ", 40),
	"  leading and trailing spaces  ",
}

// Calls are the tool calls generated assistant messages make; their inputs
// are raw bytes with keys in a deliberate, non-sorted order.
var Calls = []struct{ Name, Input string }{
	{"Read", `{"file_path":"src/main.go","limit":200}`},
	{"Bash", `{"command":"cd pkg && go test ./...","timeout":120000}`},
	{"Grep", `{"pattern":"func \\w+\\(","path":"."}`},
	{"LS", `{"path":"."}`},
	{"Edit", `{"file_path":"a.go","old_string":"x := 1","new_string":"x := 2"}`},
	{"Write", `{"z_last":1,"a_first":2,"m_middle":[3,2,1]}`},
	{"mcp__server__tool", `{}`},
	{"Read", `{"file_path":"文档/说明.md"}`},
}

// ImageSource is the source every generated image carries.
const ImageSource = `{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`

// Tools are tool schemas a generated conversation may declare.
var Tools = []conv.Tool{
	{Name: "Read", Description: "Read a file.", InputSchema: []byte(`{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer"}},"required":["file_path"]}`)},
	{Name: "Bash", Description: "Run a command.", InputSchema: []byte(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
	{Name: "Grep", Description: "Search files.", InputSchema: []byte(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
}

type gen struct {
	ch     *Choices
	c      *conv.Conversation
	calls  int
	opaque bool
}

// Valid builds a conversation that passes conv.Check, every choice taken
// from ch: system blocks and tools, rounds opened by user text (with
// reminders, images and, in the first message, summaries), assistant
// messages with thinking, text and parallel tool calls, and tool results as
// text or as lists with images, sometimes in an order other than the calls'.
// Blocks get ids and turns through conv.Conversation.Append.
func Valid(ch *Choices, opt Options) *conv.Conversation {
	if opt.MaxRounds <= 0 {
		opt.MaxRounds = 6
	}
	g := &gen{ch: ch, c: &conv.Conversation{}, opaque: opt.Opaque}
	if ch.Intn(4) != 0 {
		g.c.System = []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent. Be brief.")}
		if ch.Bool() {
			g.c.System = append(g.c.System, conv.NewText(conv.SourceSystem, "Environment: linux, Go 1.26."))
		}
		g.c.Stamp(g.c.System)
	}
	for i := range ch.Intn(len(Tools) + 1) {
		t := Tools[i]
		t.InputSchema = append([]byte(nil), t.InputSchema...)
		g.c.Tools = append(g.c.Tools, t)
	}

	var pending []conv.Block // calls of the last assistant message
	rounds := 1 + ch.Intn(opt.MaxRounds)
	for r := range rounds {
		var bs []conv.Block
		bs = append(bs, g.results(pending)...)
		if r == 0 {
			for i := range ch.Intn(3) {
				bs = append(bs, conv.NewSummary("## Completed\n- "+Pick(ch, Texts), conv.Span{First: 1 + 3*i, Last: 3 + 3*i}))
			}
		}
		if ch.Intn(4) == 0 {
			bs = append(bs, conv.NewText(conv.SourceReminder, "<system-reminder>\n"+Pick(ch, Texts)+"\n</system-reminder>"))
		}
		if ch.Intn(6) == 0 {
			bs = append(bs, image(conv.SourceUser))
		}
		bs = append(bs, conv.NewText(conv.SourceUser, Pick(ch, Texts)))
		if g.opaque && ch.Intn(3) == 0 {
			bs = append(bs, conv.NewOpaque(conv.ProviderAnthropic, []byte(OpaqueRaw.User), conv.SourceUser))
		}
		g.c.Append(conv.Message{Role: conv.RoleUser, Blocks: bs})

		steps := ch.Intn(4)
		for s := 0; ; s++ {
			a := g.assistant(s < steps || ch.Intn(3) == 0)
			g.c.Append(a)
			pending = calls(a)
			if len(pending) == 0 || s >= steps {
				break
			}
			bs := g.results(pending)
			pending = nil
			if ch.Intn(5) == 0 {
				bs = append(bs, conv.NewText(conv.SourceHook, "<user-prompt-submit-hook>\nlint passed\n</user-prompt-submit-hook>"))
			}
			g.c.Append(conv.Message{Role: conv.RoleUser, Blocks: bs})
		}
	}
	if g.calls > 0 && len(g.c.Tools) == 0 {
		// the API refuses tool blocks in a request that declares no tools
		t := Tools[0]
		t.InputSchema = append([]byte(nil), t.InputSchema...)
		g.c.Tools = []conv.Tool{t}
	}
	if opt.Request {
		bs := g.results(pending)
		if len(bs) == 0 || ch.Bool() {
			bs = append(bs, conv.NewText(conv.SourceUser, Pick(ch, Texts)))
		}
		g.c.Append(conv.Message{Role: conv.RoleUser, Blocks: bs})
	}
	return g.c
}

// assistant builds an assistant message; with tools it makes 1–4 calls.
func (g *gen) assistant(tools bool) conv.Message {
	ch := g.ch
	var bs []conv.Block
	switch ch.Intn(5) {
	case 0:
		bs = append(bs, conv.NewThinking("I should check "+Pick(ch, Texts), fmt.Sprintf("sig%03d", ch.Intn(1000))))
	case 1:
		b := conv.Block{Type: conv.TypeRedactedThinking, Data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)}
		bs = append(bs, b)
	}
	if g.opaque && ch.Intn(3) == 0 {
		bs = append(bs, conv.NewServerToolUse(conv.ProviderAnthropic, "srvtoolu_01", "web_search", []byte(`{"query":"go 1.26"}`), []byte(OpaqueRaw.ServerCall)),
			conv.NewOpaque(conv.ProviderAnthropic, []byte(OpaqueRaw.ServerResult), conv.SourceAssistant))
	}
	if !tools || ch.Bool() {
		bs = append(bs, conv.NewText(conv.SourceAssistant, Pick(ch, Texts)))
	}
	if tools {
		for range 1 + ch.Intn(4) {
			g.calls++
			call := Pick(ch, Calls)
			bs = append(bs, conv.NewToolUse(fmt.Sprintf("toolu_%03d", g.calls), call.Name, []byte(call.Input)))
		}
	}
	return conv.Message{Role: conv.RoleAssistant, Blocks: bs}
}

// results answers calls, sometimes in another order, as text, as errors or
// as lists with an image.
func (g *gen) results(calls []conv.Block) []conv.Block {
	ch := g.ch
	var out []conv.Block
	for _, call := range calls {
		var r conv.Block
		switch ch.Intn(6) {
		case 0:
			r = conv.NewToolResult(call.ToolUseID, call.Name, "exit status 1\n"+Pick(ch, Texts), true)
		case 1:
			r = conv.NewToolResult(call.ToolUseID, call.Name, "", false)
			r.Content = []conv.Block{conv.NewText(conv.SourceTool, Pick(ch, Texts)), image(conv.SourceTool)}
			if g.opaque {
				r.Content = append(r.Content, conv.NewOpaque(conv.ProviderAnthropic, []byte(OpaqueRaw.Result), conv.SourceTool))
			}
		case 2:
			r = conv.NewToolResult(call.ToolUseID, call.Name, Pick(ch, Texts), false)
			r.Structured = []byte(`{"status":"success","data":{"total":3}}`)
		default:
			r = conv.NewToolResult(call.ToolUseID, call.Name, Pick(ch, Texts), false)
		}
		out = append(out, r)
	}
	if len(out) > 1 && ch.Intn(3) == 0 {
		i, j := ch.Intn(len(out)), ch.Intn(len(out))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func image(src conv.Source) conv.Block {
	return conv.Block{Type: conv.TypeImage, ImageSource: []byte(ImageSource), Meta: conv.DefaultMeta(conv.TypeImage, src)}
}

func calls(m conv.Message) []conv.Block {
	var out []conv.Block
	for _, b := range m.Blocks {
		if b.Type == conv.TypeToolUse {
			out = append(out, b)
		}
	}
	return out
}

// Arbitrary builds a conversation with no regard for the invariants: random
// roles, block types, empty blocks, tool ids drawn from a small pool so that
// calls and results sometimes pair and sometimes do not, duplicate and
// missing block ids. Summaries get disjoint spans: overlapping summaries
// are an engine bug Repair does not paper over.
func Arbitrary(ch *Choices) *conv.Conversation {
	c := &conv.Conversation{}
	ids := []string{"toolu_a", "toolu_b", "toolu_c", "toolu_d"}
	span := 1
	for range ch.Intn(12) {
		m := conv.Message{Role: conv.RoleUser}
		if ch.Bool() {
			m.Role = conv.RoleAssistant
		}
		for range ch.Intn(5) {
			var b conv.Block
			text := Pick(ch, append([]string{"", " "}, Texts...))
			switch ch.Intn(8) {
			case 0:
				b = conv.NewText(Pick(ch, []conv.Source{conv.SourceUser, conv.SourceAssistant, conv.SourceReminder}), text)
			case 1:
				b = conv.NewToolUse(Pick(ch, ids), Pick(ch, []string{"Bash", "Read", ""}), []byte(`{"command":"ls"}`))
			case 2:
				b = conv.NewToolResult(Pick(ch, append([]string{""}, ids...)), "Bash", text, ch.Bool())
			case 3:
				b = conv.NewThinking(text, Pick(ch, []string{"", "sig"}))
			case 4:
				b = image(conv.SourceUser)
				if ch.Bool() {
					b.ImageSource = nil
				}
			case 5:
				b = conv.NewSummary(text, conv.Span{First: span, Last: span + 1})
				span += 2
				b.Meta.Compactable = ch.Bool()
			case 6:
				b = conv.NewToolResult(Pick(ch, ids), "Read", "", false)
				b.Content = []conv.Block{conv.NewText(conv.SourceTool, text), image(conv.SourceTool)}
				if ch.Intn(4) == 0 {
					b.Content = append(b.Content, conv.NewOpaque(Pick(ch, []string{"", conv.ProviderAnthropic}), []byte(Pick(ch, []string{"", `"str"`, OpaqueRaw.Result})), conv.SourceTool))
				}
			default:
				b = conv.Block{Type: conv.TypeRedactedThinking, Data: Pick(ch, []string{"", "opaque"}), Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)}
			}
			switch ch.Intn(4) {
			case 0: // no id
			case 1:
				b.ID = "b1" // likely a duplicate
			default:
				b.ID = c.NewID()
			}
			m.Blocks = append(m.Blocks, b)
		}
		c.Messages = append(c.Messages, m)
	}
	return c
}
