package importer

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/conv"
)

// builder collects what an importer reads into a conversation: it merges
// consecutive user content into one message (parallel tool results,
// injections), hands out tool call ids the format lacks, remembers tool
// names so results carry them, and stamps ids and turns at the end.
type builder struct {
	system   []conv.Block
	tools    []conv.Tool
	msgs     []conv.Message
	names    map[string]string // tool_use id → tool name
	used     []string          // tool names in order of first use
	schemas  map[string]json.RawMessage
	nextCall int
	at       time.Time // CreatedAt for blocks added from now on
	epochs   []int     // indexes into msgs where a recorded compaction starts an epoch
}

func newBuilder() *builder {
	return &builder{names: map[string]string{}, schemas: map[string]json.RawMessage{}}
}

// stamp sets CreatedAt on blocks when the format records a time.
func (b *builder) stamp(bs []conv.Block) {
	if b.at.IsZero() {
		return
	}
	for i := range bs {
		bs[i].Meta.CreatedAt = b.at
		b.stamp(bs[i].Content)
	}
}

// systemText adds a system prompt block.
func (b *builder) systemText(text string) {
	if text == "" {
		return
	}
	bs := []conv.Block{conv.NewText(conv.SourceSystem, text)}
	b.stamp(bs)
	b.system = append(b.system, bs...)
}

// user adds blocks to the user message being built, starting one when the
// last message is not a user message.
func (b *builder) user(bs ...conv.Block) {
	if len(bs) == 0 {
		return
	}
	b.stamp(bs)
	if n := len(b.msgs); n > 0 && b.msgs[n-1].Role == conv.RoleUser {
		b.msgs[n-1].Blocks = append(b.msgs[n-1].Blocks, bs...)
		return
	}
	b.msgs = append(b.msgs, conv.Message{Role: conv.RoleUser, Blocks: bs})
}

// assistant starts a new assistant message (one model response).
func (b *builder) assistant(bs ...conv.Block) {
	if len(bs) == 0 {
		return
	}
	b.stamp(bs)
	b.msgs = append(b.msgs, conv.Message{Role: conv.RoleAssistant, Blocks: bs})
}

// assistantMore adds blocks to the assistant message being built (items
// of one response recorded one by one), starting one when the last
// message is not an assistant message.
func (b *builder) assistantMore(bs ...conv.Block) {
	if n := len(b.msgs); n > 0 && b.msgs[n-1].Role == conv.RoleAssistant && len(bs) > 0 {
		b.stamp(bs)
		b.msgs[n-1].Blocks = append(b.msgs[n-1].Blocks, bs...)
		return
	}
	b.assistant(bs...)
}

// epoch starts a new epoch with a recorded compaction's summary: a user
// message of its own, never merged with what came before, since from here
// on the model saw only this message and what follows. A summary at the
// very start needs no epoch.
func (b *builder) epoch(bs ...conv.Block) {
	b.stamp(bs)
	if len(b.msgs) > 0 {
		b.epochs = append(b.epochs, len(b.msgs))
	}
	b.msgs = append(b.msgs, conv.Message{Role: conv.RoleUser, Blocks: bs})
}

// rounds counts the rounds so far, for the span of a recorded summary.
func (b *builder) rounds() int {
	n := 0
	for _, m := range b.msgs {
		if conv.OpensRound(m) {
			n++
		}
	}
	return n
}

// last returns the last message, nil when there is none.
func (b *builder) last() *conv.Message {
	if len(b.msgs) == 0 {
		return nil
	}
	return &b.msgs[len(b.msgs)-1]
}

// call returns a tool_use block, with a generated id when the format has
// none (call_1, call_2, … in order of appearance, so re-imports agree).
func (b *builder) call(id, name string, input json.RawMessage) conv.Block {
	if id == "" {
		b.nextCall++
		id = fmt.Sprintf("call_%d", b.nextCall)
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	b.names[id] = name
	b.use(name)
	return conv.NewToolUse(id, name, input)
}

// use records that tool name was called.
func (b *builder) use(name string) {
	if _, ok := b.schemas[name]; !ok {
		b.schemas[name] = nil
		b.used = append(b.used, name)
	}
}

// result returns a tool_result for call id, named after its call.
func (b *builder) result(id, text string, isError bool) conv.Block {
	return conv.NewToolResult(id, b.names[id], text, isError)
}

// named fills in tool results' names from their calls and records the
// tools of tool_use blocks decoded by wire.
func (b *builder) named(bs []conv.Block) {
	for i := range bs {
		switch bs[i].Type {
		case conv.TypeToolUse:
			b.names[bs[i].ToolUseID] = bs[i].Name
			b.use(bs[i].Name)
		case conv.TypeToolResult:
			if bs[i].Name == "" {
				bs[i].Name = b.names[bs[i].ToolUseID]
			}
		}
	}
}

// anySchema is the schema of a tool whose schema the recording lacks.
var anySchema = json.RawMessage(`{"type":"object"}`)

// bashSchema is the schema of the bash tool that text actions become.
var bashSchema = json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The shell command to run."}},"required":["command"]}`)

// finish builds the conversation: ids stamped in order (system first, then
// messages), tool schemas the recording lacks filled in so that the
// conversation makes a valid request, then Repair and Check.
func (b *builder) finish() (*conv.Conversation, []conv.Fix, error) {
	if len(b.msgs) == 0 {
		return nil, nil, ErrNoMessages
	}
	c := &conv.Conversation{System: b.system, Tools: b.tools}
	if len(c.Tools) == 0 {
		for _, name := range b.used {
			schema := b.schemas[name]
			switch {
			case schema != nil:
			case name == "bash": // what text actions become
				schema = bashSchema
			default:
				schema = anySchema
			}
			c.Tools = append(c.Tools, conv.Tool{Name: name, InputSchema: schema})
		}
	}
	c.Stamp(c.System)
	for _, m := range b.msgs {
		c.Append(m)
	}
	c.Epochs = b.epochs
	fixes := conv.Repair(c)
	if vs := conv.Check(c); len(vs) > 0 {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvariant, vs)
	}
	if len(c.Messages) == 0 {
		return nil, nil, ErrNoMessages
	}
	return c, fixes, nil
}
