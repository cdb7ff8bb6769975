package convtest

import (
	"slices"

	"github.com/ctxkit/ctxkit/conv"
)

// Mutation breaks one invariant of a valid conversation on purpose.
type Mutation struct {
	Name string
	// Rules are the violations the checker must report afterwards; at
	// least one of them must appear.
	Rules []conv.Rule
	// Repairable says conv.Repair is expected to undo the damage. Overlapping
	// summaries are an engine bug to be caught, not something a recorded
	// session carries, so Repair leaves them alone.
	Repairable bool
	// Apply breaks c, every choice taken from ch, and reports whether c had
	// anything to break this way.
	Apply func(c *conv.Conversation, ch *Choices) bool
}

// loc is a block's place in a conversation.
type loc struct{ msg, blk int }

// find lists the blocks that match keep.
func find(c *conv.Conversation, keep func(m *conv.Message, b *conv.Block) bool) []loc {
	var ls []loc
	for i := range c.Messages {
		m := &c.Messages[i]
		for j := range m.Blocks {
			if keep(m, &m.Blocks[j]) {
				ls = append(ls, loc{i, j})
			}
		}
	}
	return ls
}

func isType(t conv.Type) func(*conv.Message, *conv.Block) bool {
	return func(_ *conv.Message, b *conv.Block) bool { return b.Type == t }
}

func insert(m *conv.Message, at int, b conv.Block) {
	m.Blocks = slices.Insert(m.Blocks, at, b)
}

// Mutations lists every way the fuzz targets break conversations: the
// breakages recorded sessions carry and the ones a buggy engine could cause.
func Mutations() []Mutation {
	return []Mutation{
		{"drop-result", []conv.Rule{conv.RuleMissingResult}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, isType(conv.TypeToolResult))
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			m := &c.Messages[l.msg]
			m.Blocks = slices.Delete(m.Blocks, l.blk, l.blk+1)
			return true
		}},
		{"duplicate-result", []conv.Rule{conv.RuleDuplicateResult}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, isType(conv.TypeToolResult))
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			m := &c.Messages[l.msg]
			dup := m.Blocks[l.blk].Clone()
			if ch.Bool() {
				dup.ID = c.NewID()
			}
			insert(m, l.blk+1, dup)
			return true
		}},
		{"swap-role", []conv.Rule{conv.RuleAlternation, conv.RuleFirstNotUser}, true, func(c *conv.Conversation, ch *Choices) bool {
			if len(c.Messages) == 0 {
				return false
			}
			m := &c.Messages[ch.Intn(len(c.Messages))]
			if m.Role == conv.RoleUser {
				m.Role = conv.RoleAssistant
			} else {
				m.Role = conv.RoleUser
			}
			return true
		}},
		{"result-after-text", []conv.Rule{conv.RuleResultNotFirst}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, isType(conv.TypeToolResult))
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			m := &c.Messages[l.msg]
			if len(m.Blocks) >= 2 && ch.Bool() {
				// move the result behind the message's last block
				r := m.Blocks[l.blk]
				m.Blocks = append(slices.Delete(m.Blocks, l.blk, l.blk+1), r)
				if m.Blocks[len(m.Blocks)-2].Type != conv.TypeToolResult {
					return true
				}
			}
			t := conv.NewText(conv.SourceUser, "text before the results")
			t.ID = c.NewID()
			insert(m, 0, t)
			return true
		}},
		{"empty-block", []conv.Rule{conv.RuleEmptyBlock}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, func(*conv.Message, *conv.Block) bool { return true })
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			b := &c.Messages[l.msg].Blocks[l.blk]
			switch b.Type {
			case conv.TypeText, conv.TypeSummary:
				b.Text = Pick(ch, []string{"", " ", "\n\t "})
			case conv.TypeThinking:
				b.Text, b.Signature = "", ""
			case conv.TypeRedactedThinking:
				b.Data = ""
			case conv.TypeToolUse:
				b.Name = ""
			case conv.TypeToolResult:
				b.ToolUseID = ""
			case conv.TypeImage:
				b.ImageSource = nil
			}
			b.Meta.Tokens = 0
			return true
		}},
		{"insert-orphan", []conv.Rule{conv.RuleOrphanResult}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, func(m *conv.Message, b *conv.Block) bool { return m.Role == conv.RoleUser })
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			r := conv.NewToolResult("toolu_orphan", "Bash", "output of a call that is not in the conversation", false)
			r.ID = c.NewID()
			insert(&c.Messages[l.msg], 0, r)
			return true
		}},
		{"drop-call", []conv.Rule{conv.RuleOrphanResult}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, isType(conv.TypeToolUse))
			ls = slices.DeleteFunc(ls, func(l loc) bool { return l.msg+1 == len(c.Messages) })
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			m := &c.Messages[l.msg]
			m.Blocks = slices.Delete(m.Blocks, l.blk, l.blk+1)
			return true
		}},
		{"duplicate-call-id", []conv.Rule{conv.RuleDuplicateToolUse}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, isType(conv.TypeToolUse))
			if len(ls) < 2 {
				return false
			}
			i := ch.Intn(len(ls))
			j := (i + 1 + ch.Intn(len(ls)-1)) % len(ls)
			a, b := ls[i], ls[j]
			c.Messages[b.msg].Blocks[b.blk].ToolUseID = c.Messages[a.msg].Blocks[a.blk].ToolUseID
			return true
		}},
		{"duplicate-block-id", []conv.Rule{conv.RuleDuplicateID}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, func(*conv.Message, *conv.Block) bool { return true })
			if len(ls) < 2 {
				return false
			}
			i := ch.Intn(len(ls))
			j := (i + 1 + ch.Intn(len(ls)-1)) % len(ls)
			a, b := ls[i], ls[j]
			c.Messages[b.msg].Blocks[b.blk].ID = c.Messages[a.msg].Blocks[a.blk].ID
			return true
		}},
		{"unpin-summary", []conv.Rule{conv.RuleSummaryUnpinned}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, isType(conv.TypeSummary))
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			b := &c.Messages[l.msg].Blocks[l.blk]
			if ch.Bool() {
				b.Meta.Compactable = true
			} else {
				b.Meta.Pinned = false
			}
			return true
		}},
		{"overlap-summary", []conv.Rule{conv.RuleResummarized}, false, func(c *conv.Conversation, ch *Choices) bool {
			if len(c.Messages) == 0 {
				return false
			}
			first := 1 + ch.Intn(4)
			a := conv.NewSummary("summary of the same turns", conv.Span{First: first, Last: first + ch.Intn(3)})
			b := conv.NewSummary("another summary of them", conv.Span{First: first, Last: first})
			a.ID, b.ID = c.NewID(), c.NewID()
			m := &c.Messages[0]
			insert(m, len(m.Blocks), a)
			insert(m, len(m.Blocks), b)
			return true
		}},
		{"call-in-user-message", []conv.Rule{conv.RuleWrongRole}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, func(m *conv.Message, b *conv.Block) bool { return m.Role == conv.RoleUser })
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			u := conv.NewToolUse("toolu_misplaced", "Bash", []byte(`{"command":"ls"}`))
			u.ID = c.NewID()
			m := &c.Messages[l.msg]
			insert(m, len(m.Blocks), u)
			return true
		}},
		{"result-in-assistant-message", []conv.Rule{conv.RuleWrongRole}, true, func(c *conv.Conversation, ch *Choices) bool {
			ls := find(c, func(m *conv.Message, b *conv.Block) bool { return m.Role == conv.RoleAssistant })
			if len(ls) == 0 {
				return false
			}
			l := Pick(ch, ls)
			r := conv.NewToolResult("toolu_misplaced", "Bash", "a result in the wrong message", false)
			r.ID = c.NewID()
			m := &c.Messages[l.msg]
			insert(m, ch.Intn(len(m.Blocks)+1), r)
			return true
		}},
		{"empty-message", []conv.Rule{conv.RuleEmptyMessage}, true, func(c *conv.Conversation, ch *Choices) bool {
			if len(c.Messages) == 0 {
				return false
			}
			c.Messages[ch.Intn(len(c.Messages))].Blocks = nil
			return true
		}},
		{"leading-assistant", []conv.Rule{conv.RuleFirstNotUser}, true, func(c *conv.Conversation, ch *Choices) bool {
			t := conv.NewText(conv.SourceAssistant, "a response whose prompt was not recorded")
			t.ID = c.NewID()
			c.Messages = slices.Insert(c.Messages, 0, conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{t}})
			return true
		}},
		{"drop-message", []conv.Rule{conv.RuleAlternation}, true, func(c *conv.Conversation, ch *Choices) bool {
			if len(c.Messages) < 3 {
				return false
			}
			i := 1 + ch.Intn(len(c.Messages)-2)
			c.Messages = slices.Delete(c.Messages, i, i+1)
			return true
		}},
		{"split-results", []conv.Rule{conv.RuleAlternation}, true, func(c *conv.Conversation, ch *Choices) bool {
			// parallel results recorded as consecutive user messages
			var cands []int
			for i, m := range c.Messages {
				if slices.ContainsFunc(m.Blocks, func(b conv.Block) bool { return b.Type == conv.TypeToolResult }) && len(m.Blocks) >= 2 {
					cands = append(cands, i)
				}
			}
			if len(cands) == 0 {
				return false
			}
			i := Pick(ch, cands)
			m := &c.Messages[i]
			at := 1 + ch.Intn(len(m.Blocks)-1)
			tail := slices.Clone(m.Blocks[at:])
			m.Blocks = m.Blocks[:at]
			c.Messages = slices.Insert(c.Messages, i+1, conv.Message{Role: m.Role, Blocks: tail, Turn: m.Turn})
			return true
		}},
		{"split-response", []conv.Rule{conv.RuleAlternation}, true, func(c *conv.Conversation, ch *Choices) bool {
			// one response recorded as several assistant messages
			var cands []int
			for i, m := range c.Messages {
				if m.Role == conv.RoleAssistant && len(m.Blocks) >= 2 {
					cands = append(cands, i)
				}
			}
			if len(cands) == 0 {
				return false
			}
			i := Pick(ch, cands)
			m := &c.Messages[i]
			at := 1 + ch.Intn(len(m.Blocks)-1)
			tail := slices.Clone(m.Blocks[at:])
			m.Blocks = m.Blocks[:at]
			c.Messages = slices.Insert(c.Messages, i+1, conv.Message{Role: m.Role, Blocks: tail, Turn: m.Turn})
			return true
		}},
	}
}
