package conv

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Role is a message's speaker.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one message of the conversation.
type Message struct {
	Role   Role    `json:"role"`
	Blocks []Block `json:"blocks"`
	// Turn numbers rounds: every message of a round carries the turn of
	// the user message that opened it (seed 000 §3.1).
	Turn int `json:"turn"`
	// Usage is the provider usage recorded for the API response that
	// produced this assistant message, when the recording has it (nil
	// otherwise, and always on user messages).
	Usage *Usage `json:"usage,omitempty"`
}

// Tool is a tool's schema as sent to the provider.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	// Tokens caches the schema's token count like Meta.Tokens does for a
	// block; 0 means not counted yet. Whoever changes a schema resets it.
	Tokens int `json:"-"`
}

// Conversation is the whole state a request is assembled from (seed 001
// §1.2).
type Conversation struct {
	System   []Block   `json:"system,omitempty"`
	Tools    []Tool    `json:"tools,omitempty"`
	Messages []Message `json:"messages"`
	// Pending holds injections (reminders, hook output) waiting to be
	// merged into the next user message.
	Pending []Block `json:"pending,omitempty"`
	// Seq is the last block id handed out; ids are "b1", "b2", … so that
	// replaying the same session gives the same ids.
	Seq int `json:"seq"`
	// Epochs are the indexes into Messages where a recorded compaction
	// (Claude Code's isCompactSummary, Codex compacted) starts a new epoch,
	// in increasing order: from then on the model saw only the epoch's
	// first message (the summary) and what follows, plus system and tools.
	// Check treats each epoch as a conversation of its own.
	Epochs []int `json:"epochs,omitempty"`
	// Skipped counts the records an importer recognised but left out, by
	// record type.
	Skipped map[string]int `json:"skipped,omitempty"`
}

// NewID hands out the next stable block id.
func (c *Conversation) NewID() string {
	c.Seq++
	return "b" + strconv.Itoa(c.Seq)
}

// Stamp gives every block of bs (and their nested content) that has no id
// yet a new one. Ids already of the form "bN" advance Seq past N, so a
// state rebuilt from recorded blocks never hands out an id twice.
func (c *Conversation) Stamp(bs []Block) {
	for i := range bs {
		if bs[i].ID == "" {
			bs[i].ID = c.NewID()
		} else if n, ok := seqOf(bs[i].ID); ok && n > c.Seq {
			c.Seq = n
		}
		c.Stamp(bs[i].Content)
	}
}

// seqOf returns N for an id of the form "bN".
func seqOf(id string) (int, bool) {
	if !strings.HasPrefix(id, "b") {
		return 0, false
	}
	n, err := strconv.Atoi(id[1:])
	return n, err == nil
}

// advanceSeq moves Seq past every "bN" id the state holds.
func (c *Conversation) advanceSeq() {
	var walk func(bs []Block)
	walk = func(bs []Block) {
		for i := range bs {
			if n, ok := seqOf(bs[i].ID); ok && n > c.Seq {
				c.Seq = n
			}
			walk(bs[i].Content)
		}
	}
	walk(c.System)
	walk(c.Pending)
	for i := range c.Messages {
		walk(c.Messages[i].Blocks)
	}
}

// Append adds m at the end, stamping ids and setting its turn: a user
// message with user text opens a new round; anything else continues the
// current one.
func (c *Conversation) Append(m Message) {
	c.Stamp(m.Blocks)
	m.Turn = c.LastTurn()
	if m.Role == RoleUser && OpensRound(m) || len(c.Messages) == 0 {
		m.Turn++
	}
	c.Messages = append(c.Messages, m)
}

// LastTurn is the turn of the last message, 0 when there is none.
func (c *Conversation) LastTurn() int {
	if len(c.Messages) == 0 {
		return 0
	}
	return c.Messages[len(c.Messages)-1].Turn
}

// OpensRound reports whether m is a user message carrying user text: tool
// result-only and injection-only messages do not start a round.
func OpensRound(m Message) bool {
	if m.Role != RoleUser {
		return false
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		if b.Type == TypeText && b.Meta.Source == SourceUser {
			return true
		}
	}
	return false
}

// Round is a half-open range of message indexes [Start, End).
type Round struct {
	Start, End int
}

// Rounds splits the messages into rounds. Messages before the first
// round-opening message (for example a conversation that starts with a
// summary) form a round of their own.
func (c *Conversation) Rounds() []Round {
	var rs []Round
	start := 0
	for i := range c.Messages {
		if i > start && OpensRound(c.Messages[i]) {
			rs = append(rs, Round{start, i})
			start = i
		}
	}
	if len(c.Messages) > 0 {
		rs = append(rs, Round{start, len(c.Messages)})
	}
	return rs
}

// Renumber sets every message's turn from the rounds, after messages were
// imported or rearranged.
func (c *Conversation) Renumber() {
	for ri, r := range c.Rounds() {
		for i := r.Start; i < r.End; i++ {
			c.Messages[i].Turn = ri + 1
		}
	}
}

// Find returns the message and block index of the block with id, or -1s.
func (c *Conversation) Find(id string) (msg, blk int) {
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			if c.Messages[i].Blocks[j].ID == id {
				return i, j
			}
		}
	}
	return -1, -1
}

// ToolUses maps every tool_use id to its block, for looking up the call
// behind a result.
func (c *Conversation) ToolUses() map[string]*Block {
	m := make(map[string]*Block)
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			b := &c.Messages[i].Blocks[j]
			if b.Type == TypeToolUse {
				m[b.ToolUseID] = b
			}
		}
	}
	return m
}

// Clone returns a deep copy, so that strategies replayed side by side never
// share blocks.
func (c *Conversation) Clone() *Conversation {
	n := &Conversation{Seq: c.Seq}
	n.System = CloneBlocks(c.System)
	n.Pending = CloneBlocks(c.Pending)
	if c.Tools != nil {
		n.Tools = make([]Tool, len(c.Tools))
		for i, t := range c.Tools {
			t.InputSchema = cloneRaw(t.InputSchema)
			t.CacheControl = cloneRaw(t.CacheControl)
			n.Tools[i] = t
		}
	}
	n.Messages = make([]Message, len(c.Messages))
	for i, m := range c.Messages {
		m.Blocks = CloneBlocks(m.Blocks)
		if m.Usage != nil {
			u := *m.Usage
			m.Usage = &u
		}
		n.Messages[i] = m
	}
	n.Epochs = slices.Clone(c.Epochs)
	if c.Skipped != nil {
		n.Skipped = maps.Clone(c.Skipped)
	}
	return n
}

// CloneBlocks returns a deep copy of bs (nil for nil): each block is
// copied with Block.Clone.
func CloneBlocks(bs []Block) []Block {
	if bs == nil {
		return nil
	}
	out := make([]Block, len(bs))
	for i := range bs {
		out[i] = bs[i].Clone()
	}
	return out
}
