package conv_test

import (
	"github.com/ctxkit/ctxkit/conv"
)

// Small builders for hand-written conversations. build appends through
// Conversation.Append, so blocks get ids b1, b2, … in order and messages
// their turns.

func user(bs ...conv.Block) conv.Message { return conv.Message{Role: conv.RoleUser, Blocks: bs} }
func asst(bs ...conv.Block) conv.Message { return conv.Message{Role: conv.RoleAssistant, Blocks: bs} }
func text(s string) conv.Block           { return conv.NewText(conv.SourceUser, s) }
func say(s string) conv.Block            { return conv.NewText(conv.SourceAssistant, s) }
func remind(s string) conv.Block         { return conv.NewText(conv.SourceReminder, s) }
func call(id string) conv.Block {
	return conv.NewToolUse(id, "Bash", []byte(`{"command":"go test ./..."}`))
}
func opaque(raw string) conv.Block {
	return conv.NewOpaque(conv.ProviderAnthropic, []byte(raw), conv.SourceUser)
}
func server() conv.Block {
	return conv.NewServerToolUse(conv.ProviderAnthropic, "srvtoolu_1", "web_search", []byte(`{"query":"go"}`),
		[]byte(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`))
}
func result(id string) conv.Block { return conv.NewToolResult(id, "Bash", "ok "+id, false) }

func build(ms ...conv.Message) *conv.Conversation {
	c := &conv.Conversation{}
	for _, m := range ms {
		c.Append(m)
	}
	return c
}

// raw builds a conversation without Append: ids as given (stamped where
// missing), no turn numbering, as an importer might hand it over.
func raw(ms ...conv.Message) *conv.Conversation {
	c := &conv.Conversation{Messages: ms}
	for i := range c.Messages {
		c.Stamp(c.Messages[i].Blocks)
	}
	return c
}

// where is a violation's or fix's rule and location, for comparing.
type where struct {
	Rule  conv.Rule
	Msg   int
	Block string
}

func locate(vs conv.Violations) []where {
	var ws []where
	for _, v := range vs {
		ws = append(ws, where{v.Rule, v.Msg, v.Block})
	}
	return ws
}
