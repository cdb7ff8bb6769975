package conv

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Fix is one change Repair made, located by the message index after the
// change.
type Fix struct {
	Rule   Rule   `json:"rule"`
	Msg    int    `json:"msg"`
	Detail string `json:"detail"`
}

func (f Fix) String() string { return fmt.Sprintf("message %d: %s: %s", f.Msg, f.Rule, f.Detail) }

// Repair fixes what recorded sessions typically break, in place, and
// reports each fix: empty blocks and messages are dropped, consecutive
// messages of one role merged (split responses, split parallel results),
// a leading assistant message gets a user message before it, results are
// moved first, a result that answers nothing becomes text, a call with no
// result gets an error result saying so, duplicate ids are renamed, an
// opaque block no provider could take back (no provider, bytes that are
// not a JSON object) becomes text holding its bytes.
// Nothing the model saw is deleted except empty content.
func Repair(c *Conversation) []Fix {
	var fixes []Fix
	add := func(r Rule, msg int, format string, args ...any) {
		fixes = append(fixes, Fix{Rule: r, Msg: msg, Detail: fmt.Sprintf(format, args...)})
	}
	starts := epochMarks(c)
	for i := range c.Messages {
		badOpaque(c.Messages[i].Blocks, i, add)
	}
	starts = dropEmpty(c, starts, add)
	starts = mergeRuns(c, starts, add)
	if len(c.Messages) > 0 && c.Messages[0].Role != RoleUser {
		start := Message{Role: RoleUser, Blocks: []Block{NewText(SourceSystem, "[session start]")}}
		c.Stamp(start.Blocks)
		c.Messages = slices.Insert(c.Messages, 0, start)
		starts = slices.Insert(starts, 0, false)
		add(RuleFirstNotUser, 0, "inserted a user message before the leading %s message", c.Messages[1].Role)
	}
	c.Epochs = c.Epochs[:0]
	for i, s := range starts {
		if s && i > 0 {
			c.Epochs = append(c.Epochs, i)
		}
	}
	if len(c.Epochs) == 0 {
		c.Epochs = nil
	}
	renameDuplicates(c, add)
	for i := range c.Messages {
		pair(c, i, add)
	}
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			b := &c.Messages[i].Blocks[j]
			if b.Type == TypeSummary && (!b.Meta.Pinned || b.Meta.Compactable) {
				b.Meta.Pinned, b.Meta.Compactable = true, false
				add(RuleSummaryUnpinned, i, "pinned summary %s", b.ID)
			}
		}
	}
	c.Renumber()
	return fixes
}

// badOpaque turns the opaque blocks of bs (tool results' content
// included) that break RuleBadOpaque into text holding their bytes.
func badOpaque(bs []Block, msg int, add func(Rule, int, string, ...any)) {
	for j := range bs {
		b := &bs[j]
		badOpaque(b.Content, msg, add)
		if b.Type != TypeOpaque || len(b.Raw) == 0 || b.Provider != "" && b.Raw[0] == '{' && json.Valid(b.Raw) {
			continue
		}
		t := NewText(b.Meta.Source, string(b.Raw))
		t.ID = b.ID
		*b = t
		add(RuleBadOpaque, msg, "opaque block %s kept as text: no provider could take its bytes back", b.ID)
	}
}

// epochMarks returns, per message, whether a recorded compaction starts an
// epoch there, so that the repairs keep the epochs where they were.
func epochMarks(c *Conversation) []bool {
	marks := make([]bool, len(c.Messages))
	for _, e := range c.Epochs {
		if e > 0 && e < len(marks) {
			marks[e] = true
		}
	}
	return marks
}

func dropEmpty(c *Conversation, starts []bool, add func(Rule, int, string, ...any)) []bool {
	out := c.Messages[:0]
	marks := starts[:0]
	carry := false // a dropped message started an epoch: the next kept one does
	for i, m := range c.Messages {
		kept := m.Blocks[:0]
		for _, b := range m.Blocks {
			if b.Empty() {
				add(RuleEmptyBlock, i, "dropped empty %s block %s", b.Type, b.ID)
				continue
			}
			kept = append(kept, b)
		}
		m.Blocks = kept
		if len(m.Blocks) == 0 {
			add(RuleEmptyMessage, i, "dropped empty %s message", m.Role)
			carry = carry || starts[i]
			continue
		}
		out = append(out, m)
		marks = append(marks, starts[i] || carry)
		carry = false
	}
	c.Messages = out
	return marks
}

// mergeRuns merges consecutive messages of one role, except across the
// start of an epoch: each epoch is a conversation of its own.
func mergeRuns(c *Conversation, starts []bool, add func(Rule, int, string, ...any)) []bool {
	out := c.Messages[:0]
	kept := starts[:0]
	for i, m := range c.Messages {
		if n := len(out); n > 0 && out[n-1].Role == m.Role && !starts[i] {
			if m.Usage != nil && out[n-1].Usage == nil {
				out[n-1].Usage = m.Usage
			} else if m.Usage != nil {
				u := out[n-1].Usage.Add(*m.Usage)
				out[n-1].Usage = &u
			}
			out[n-1].Blocks = append(out[n-1].Blocks, m.Blocks...)
			add(RuleAlternation, n-1, "merged two consecutive %s messages", m.Role)
			continue
		}
		out = append(out, m)
		kept = append(kept, starts[i])
	}
	c.Messages = out
	return kept
}

func renameDuplicates(c *Conversation, add func(Rule, int, string, ...any)) {
	// A state built without Stamp (decoded, hand-made) may hold ids past
	// Seq; NewID must not hand one of them out again.
	c.advanceSeq()
	blockIDs := make(map[string]bool)
	for i := range c.System {
		blockIDs[c.System[i].ID] = true
	}
	useIDs := make(map[string]bool)
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			b := &c.Messages[i].Blocks[j]
			switch {
			case b.ID == "":
				b.ID = c.NewID()
			case blockIDs[b.ID]:
				old := b.ID
				b.ID = c.NewID()
				add(RuleDuplicateID, i, "renamed duplicate block id %s to %s", old, b.ID)
			}
			blockIDs[b.ID] = true
			if b.Type != TypeToolUse {
				continue
			}
			if !useIDs[b.ToolUseID] {
				useIDs[b.ToolUseID] = true
				continue
			}
			old := b.ToolUseID
			for n := 2; useIDs[b.ToolUseID]; n++ {
				b.ToolUseID = fmt.Sprintf("%s_%d", old, n)
			}
			useIDs[b.ToolUseID] = true
			add(RuleDuplicateToolUse, i, "renamed duplicate tool_use id %s to %s", old, b.ToolUseID)
			// The answering result is the first one with the old id in the
			// next message that a later call of this message does not claim.
			if i+1 < len(c.Messages) {
				for k := range c.Messages[i+1].Blocks {
					r := &c.Messages[i+1].Blocks[k]
					if r.Type == TypeToolResult && r.ToolUseID == old {
						r.ToolUseID = b.ToolUseID
						break
					}
				}
			}
		}
	}
}

// pair makes message i's tool results answer exactly the calls of message
// i-1, in call order and before any other content.
func pair(c *Conversation, i int, add func(Rule, int, string, ...any)) {
	m := &c.Messages[i]
	if m.Role == RoleAssistant {
		// Results in an assistant message can only be orphans.
		for j := range m.Blocks {
			if m.Blocks[j].Type == TypeToolResult {
				orphanToText(&m.Blocks[j])
				add(RuleWrongRole, i, "tool_result for %q in an assistant message became text", m.Blocks[j].Name)
			}
		}
		return
	}
	var calls []*Block
	if i > 0 && !c.isEpochStart(i) {
		for j := range c.Messages[i-1].Blocks {
			if b := &c.Messages[i-1].Blocks[j]; b.Type == TypeToolUse {
				calls = append(calls, b)
			}
		}
	}
	want := make(map[string]bool, len(calls))
	for _, b := range calls {
		want[b.ToolUseID] = true
	}
	results := make(map[string]Block)
	var rest []Block
	outOfOrder := false
	seenOther := false
	for _, b := range m.Blocks {
		switch {
		case b.Type == TypeToolUse:
			b.Type = TypeText
			b.Text = fmt.Sprintf("[tool call %s %s in a user message]\n%s", b.Name, b.ToolUseID, b.Input)
			b.Input, b.ToolUseID = nil, ""
			add(RuleWrongRole, i, "tool_use in a user message became text")
			rest = append(rest, b)
			seenOther = true
		case b.Type != TypeToolResult:
			rest = append(rest, b)
			seenOther = true
		case !want[b.ToolUseID]:
			add(RuleOrphanResult, i, "tool_result for %q answers no call of the previous message; kept as text", b.ToolUseID)
			orphanToText(&b)
			rest = append(rest, b)
		case results[b.ToolUseID].ID != "":
			add(RuleDuplicateResult, i, "second tool_result for %q kept as text", b.ToolUseID)
			orphanToText(&b)
			rest = append(rest, b)
		default:
			if seenOther {
				outOfOrder = true
			}
			results[b.ToolUseID] = b
		}
	}
	var out []Block
	for _, call := range calls {
		r, ok := results[call.ToolUseID]
		if !ok {
			r = NewToolResult(call.ToolUseID, call.Name, "[no result was recorded for this tool call]", true)
			r.ID = c.NewID()
			add(RuleMissingResult, i, "added an error result for unanswered tool_use %q (%s)", call.ToolUseID, call.Name)
		}
		out = append(out, r)
	}
	if outOfOrder {
		add(RuleResultNotFirst, i, "moved tool results before other content")
	}
	m.Blocks = append(out, rest...)
}

func orphanToText(b *Block) {
	text := b.ResultText()
	b.Type = TypeText
	b.Text = fmt.Sprintf("[tool result for %s %s without its call]\n%s", b.Name, b.ToolUseID, text)
	b.Content, b.ToolUseID, b.IsError = nil, "", false
	b.Meta.Tokens = 0
}
