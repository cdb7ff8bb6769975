package conv

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Rule names an invariant (DESIGN.md, invariants 1–3).
type Rule string

const (
	RuleFirstNotUser     Rule = "first-not-user"     // the first message must be a user message
	RuleAlternation      Rule = "alternation"        // roles alternate user/assistant
	RuleEmptyMessage     Rule = "empty-message"      // a message has no blocks
	RuleEmptyBlock       Rule = "empty-block"        // a block carries no content
	RuleMissingResult    Rule = "missing-result"     // a tool_use has no tool_result in the next message
	RuleDuplicateResult  Rule = "duplicate-result"   // a tool_use has more than one tool_result
	RuleOrphanResult     Rule = "orphan-result"      // a tool_result answers no tool_use of the previous message
	RuleResultNotFirst   Rule = "result-not-first"   // a tool_result comes after other content in its message
	RuleWrongRole        Rule = "wrong-role"         // tool_use outside an assistant message, tool_result outside a user message
	RuleDuplicateToolUse Rule = "duplicate-tool-use" // two tool_use blocks share an id
	RuleDuplicateID      Rule = "duplicate-id"       // two blocks share a block id
	RuleSummaryUnpinned  Rule = "summary-unpinned"   // a summary is compactable, so it could be summarized again
	RuleResummarized     Rule = "resummarized"       // a summary covers turns of another summary without being a merge
	RuleLastNotUser      Rule = "last-not-user"      // (requests only) the last message must be a user message
	RuleBadOpaque        Rule = "bad-opaque"         // an opaque block or server tool call whose Raw is not a JSON object, or without a provider
)

// Violation is one broken invariant, located by message index and block id
// (Block is empty for message-level violations).
type Violation struct {
	Rule   Rule   `json:"rule"`
	Msg    int    `json:"msg"`
	Block  string `json:"block,omitempty"`
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	loc := fmt.Sprintf("message %d", v.Msg)
	if v.Block != "" {
		loc += " block " + v.Block
	}
	return fmt.Sprintf("%s: %s: %s", loc, v.Rule, v.Detail)
}

// Violations is the checker's report; its Error lists them all.
type Violations []Violation

func (vs Violations) Error() string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return fmt.Sprintf("%d invariant violation(s): %s", len(vs), strings.Join(parts, "; "))
}

// Err returns vs as an error, or nil when there are none.
func (vs Violations) Err() error {
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// Check returns every violation of the conversation invariants, not just
// the first. A trailing assistant message whose tool calls have not been
// answered yet is allowed: that is the state between a response and its
// tool runs.
func Check(c *Conversation) Violations { return CheckFrom(c, 0) }

// CheckFrom checks the messages from index from on (and their pairing
// with message from-1), for a conversation whose earlier part was checked
// before and has not changed since: a caller checking before every request
// then pays for what was appended, not for the whole history. Duplicate
// ids are looked for within the checked part only. CheckFrom(c, 0) is
// Check.
func CheckFrom(c *Conversation, from int) Violations {
	from = max(from, 0)
	var vs Violations
	add := func(r Rule, msg int, blk, format string, args ...any) {
		vs = append(vs, Violation{Rule: r, Msg: msg, Block: blk, Detail: fmt.Sprintf(format, args...)})
	}
	ids := make(map[string]bool)
	toolUses := make(map[string]bool)
	checkIDs := func(msg int, bs []Block) {
		for i := range bs {
			if id := bs[i].ID; id != "" {
				if ids[id] {
					add(RuleDuplicateID, msg, id, "block id %q used twice", id)
				}
				ids[id] = true
			}
		}
	}
	if from == 0 {
		checkIDs(-1, c.System)
	}

	var summaries []located
	for i := from; i < len(c.Messages); i++ {
		m := &c.Messages[i]
		checkIDs(i, m.Blocks)
		epochStart := c.isEpochStart(i)
		if (i == 0 || epochStart) && m.Role != RoleUser {
			add(RuleFirstNotUser, i, "", "first message of an epoch is %q", m.Role)
		}
		if i > 0 && !epochStart && m.Role == c.Messages[i-1].Role {
			add(RuleAlternation, i, "", "two %s messages in a row", m.Role)
		}
		if len(m.Blocks) == 0 {
			add(RuleEmptyMessage, i, "", "message has no content")
		}
		seenOther := false
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Empty() {
				add(RuleEmptyBlock, i, b.ID, "empty %s block", b.Type)
			}
			switch b.Type {
			case TypeToolUse:
				if m.Role != RoleAssistant {
					add(RuleWrongRole, i, b.ID, "tool_use %q in a %s message", b.ToolUseID, m.Role)
				}
				if toolUses[b.ToolUseID] {
					add(RuleDuplicateToolUse, i, b.ID, "tool_use id %q used twice", b.ToolUseID)
				}
				toolUses[b.ToolUseID] = true
			case TypeToolResult:
				if m.Role != RoleUser {
					add(RuleWrongRole, i, b.ID, "tool_result for %q in a %s message", b.ToolUseID, m.Role)
				}
				if seenOther {
					add(RuleResultNotFirst, i, b.ID, "tool_result for %q after other content", b.ToolUseID)
				}
			case TypeServerToolUse:
				if m.Role != RoleAssistant {
					add(RuleWrongRole, i, b.ID, "server_tool_use %q in a %s message", b.Name, m.Role)
				}
				checkOpaque(b, i, add)
			case TypeOpaque:
				checkOpaque(b, i, add)
			case TypeSummary:
				summaries = append(summaries, located{c.EpochStart(i), i, b})
				if b.Meta.Compactable || !b.Meta.Pinned {
					add(RuleSummaryUnpinned, i, b.ID, "summary is not pinned")
				}
			}
			if b.Type != TypeToolResult {
				seenOther = true
			}
			for k := range b.Content {
				if p := &b.Content[k]; p.Type == TypeOpaque {
					checkOpaque(p, i, add)
				}
			}
		}
		checkPairs(c, i, add)
	}
	checkSummaries(summaries, add)
	return vs
}

// CheckRequest is Check plus the rules a request must also meet: it ends
// with a user message, so every tool call has been answered.
func CheckRequest(c *Conversation) Violations {
	vs := Check(c)
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role != RoleUser {
		vs = append(vs, Violation{Rule: RuleLastNotUser, Msg: n - 1, Detail: "a request must end with a user message"})
	}
	if len(c.Messages) == 0 {
		vs = append(vs, Violation{Rule: RuleEmptyMessage, Msg: 0, Detail: "a request needs at least one message"})
	}
	return vs
}

// checkPairs checks message i's tool results against the tool calls of
// message i-1, and message i's tool calls against the results of i+1.
func checkPairs(c *Conversation, i int, add func(Rule, int, string, string, ...any)) {
	m := &c.Messages[i]
	if m.Role == RoleAssistant {
		calls := callIDs(m)
		if len(calls) == 0 || i+1 == len(c.Messages) || c.isEpochStart(i+1) {
			return // the end of the conversation or of an epoch
		}
		got := make(map[string][]string) // tool_use id → ids of the result blocks
		for _, b := range c.Messages[i+1].Blocks {
			if b.Type == TypeToolResult {
				got[b.ToolUseID] = append(got[b.ToolUseID], b.ID)
			}
		}
		for _, b := range m.Blocks {
			if b.Type != TypeToolUse {
				continue
			}
			switch rs := got[b.ToolUseID]; {
			case len(rs) == 0:
				add(RuleMissingResult, i, b.ID, "tool_use %q (%s) has no tool_result in the next message", b.ToolUseID, b.Name)
			case len(rs) > 1:
				// Located at the surplus result, in the message that holds it.
				add(RuleDuplicateResult, i+1, rs[1], "tool_use %q (block %s) has %d tool_results", b.ToolUseID, b.ID, len(rs))
			}
		}
		return
	}
	var calls map[string]bool
	if i > 0 && !c.isEpochStart(i) && c.Messages[i-1].Role == RoleAssistant {
		calls = callIDs(&c.Messages[i-1])
	}
	for _, b := range m.Blocks {
		if b.Type == TypeToolResult && !calls[b.ToolUseID] {
			add(RuleOrphanResult, i, b.ID, "tool_result for %q answers no tool_use of the previous message", b.ToolUseID)
		}
	}
}

// checkOpaque checks what an opaque block or a server tool call must carry
// to go back to its provider: a provider, and Raw (when present, as it is
// on every opaque block) a JSON object.
func checkOpaque(b *Block, i int, add func(Rule, int, string, string, ...any)) {
	switch {
	case b.Provider == "":
		add(RuleBadOpaque, i, b.ID, "%s block without a provider", b.Type)
	case len(b.Raw) > 0 && (b.Raw[0] != '{' || !json.Valid(b.Raw)):
		add(RuleBadOpaque, i, b.ID, "%s block whose bytes are not a JSON object", b.Type)
	}
}

func callIDs(m *Message) map[string]bool {
	ids := make(map[string]bool)
	for _, b := range m.Blocks {
		if b.Type == TypeToolUse {
			ids[b.ToolUseID] = true
		}
	}
	return ids
}

// located is a block with the index of the message holding it and of the
// first message of its epoch.
type located struct {
	epoch int
	msg   int
	*Block
}

// checkSummaries enforces invariant 3 as far as it shows in the state: a
// summary that is not a merge must not cover turns another summary of the
// same epoch covers. A recorded compaction's summary covers everything
// before it, earlier summaries included, and replaces it: each epoch is a
// conversation of its own.
func checkSummaries(ss []located, add func(Rule, int, string, string, ...any)) {
	for i, a := range ss {
		for _, b := range ss[i+1:] {
			if a.epoch != b.epoch || a.Span == nil || b.Span == nil {
				continue
			}
			if a.Span.First <= b.Span.Last && b.Span.First <= a.Span.Last && !a.Merged && !b.Merged {
				add(RuleResummarized, b.msg, b.ID, "summary %s (turns %d-%d) overlaps summary %s (turns %d-%d)",
					b.ID, b.Span.First, b.Span.Last, a.ID, a.Span.First, a.Span.Last)
			}
		}
	}
}
