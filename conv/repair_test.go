package conv_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// shape is a message's role and its blocks' types (with the tool_use id of
// calls and results), for comparing what Repair made.
func shape(c *conv.Conversation) []string {
	var out []string
	for _, m := range c.Messages {
		parts := []string{string(m.Role) + ":"}
		for _, b := range m.Blocks {
			s := string(b.Type)
			if b.ToolUseID != "" {
				s += "(" + b.ToolUseID + ")"
			}
			parts = append(parts, s)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func TestRepair(t *testing.T) {
	unpinned := conv.NewSummary("## Done", conv.Span{First: 1, Last: 2})
	unpinned.Meta.Pinned = false

	tests := []struct {
		name  string
		c     *conv.Conversation
		mod   func(*conv.Conversation)
		rules []conv.Rule // fixes Repair must report
		shape []string    // the conversation afterwards
		check func(t *testing.T, c *conv.Conversation)
	}{
		{name: "valid conversation is left alone",
			c:     build(user(text("a")), asst(call("t1")), user(result("t1"))),
			shape: []string{"user: text", "assistant: tool_use(t1)", "user: tool_result(t1)"}},
		{name: "orphan result becomes text",
			c:     raw(user(text("a")), asst(say("b")), user(result("t9"), text("c"))),
			rules: []conv.Rule{conv.RuleOrphanResult},
			shape: []string{"user: text", "assistant: text", "user: text text"},
			check: func(t *testing.T, c *conv.Conversation) {
				if got := c.Messages[2].Blocks[0].Text; !strings.Contains(got, "without its call") || !strings.Contains(got, "ok t9") {
					t.Errorf("orphan kept as %q", got)
				}
			}},
		{name: "split parallel results are merged in call order",
			c:     raw(user(text("a")), asst(call("t1"), call("t2"), call("t3")), user(result("t2")), user(result("t3"), result("t1"))),
			rules: []conv.Rule{conv.RuleAlternation},
			shape: []string{"user: text", "assistant: tool_use(t1) tool_use(t2) tool_use(t3)", "user: tool_result(t1) tool_result(t2) tool_result(t3)"}},
		{name: "split response is merged",
			c:     raw(user(text("a")), asst(conv.NewThinking("hmm", "sig")), asst(say("b"), call("t1")), user(result("t1"))),
			rules: []conv.Rule{conv.RuleAlternation},
			shape: []string{"user: text", "assistant: thinking text tool_use(t1)", "user: tool_result(t1)"}},
		{name: "consecutive user messages are merged",
			c:     raw(user(text("a")), user(remind("<system-reminder>r</system-reminder>")), asst(say("b"))),
			rules: []conv.Rule{conv.RuleAlternation},
			shape: []string{"user: text text", "assistant: text"}},
		{name: "results after text are moved first",
			c:     raw(user(text("a")), asst(call("t1")), user(text("b"), result("t1"))),
			rules: []conv.Rule{conv.RuleResultNotFirst},
			shape: []string{"user: text", "assistant: tool_use(t1)", "user: tool_result(t1) text"}},
		{name: "missing result gets an error result",
			c:     raw(user(text("a")), asst(call("t1"), call("t2")), user(result("t1"), text("c"))),
			rules: []conv.Rule{conv.RuleMissingResult},
			shape: []string{"user: text", "assistant: tool_use(t1) tool_use(t2)", "user: tool_result(t1) tool_result(t2) text"},
			check: func(t *testing.T, c *conv.Conversation) {
				if b := c.Messages[2].Blocks[1]; !b.IsError || b.ID == "" || !strings.Contains(b.Text, "no result") {
					t.Errorf("added result = %+v", b)
				}
			}},
		{name: "split response ending in calls stays pending",
			c:     raw(user(text("a")), asst(call("t1")), asst(say("b"))),
			rules: []conv.Rule{conv.RuleAlternation},
			shape: []string{"user: text", "assistant: tool_use(t1) text"}},
		{name: "leading assistant message gets a user message before it",
			c:     raw(asst(say("hello"))),
			rules: []conv.Rule{conv.RuleFirstNotUser},
			shape: []string{"user: text", "assistant: text"}},
		{name: "duplicate block ids are renamed",
			c:     raw(user(text("a")), asst(say("b"))),
			mod:   func(c *conv.Conversation) { c.Messages[1].Blocks[0].ID = "b1" },
			rules: []conv.Rule{conv.RuleDuplicateID},
			shape: []string{"user: text", "assistant: text"},
			check: func(t *testing.T, c *conv.Conversation) {
				if id := c.Messages[1].Blocks[0].ID; id == "b1" || id == "" {
					t.Errorf("duplicate kept id %q", id)
				}
			}},
		{name: "duplicate tool_use ids are renamed with their results",
			c:     raw(user(text("a")), asst(call("t1")), user(result("t1"), text("b")), asst(call("t1")), user(result("t1"))),
			rules: []conv.Rule{conv.RuleDuplicateToolUse},
			shape: []string{"user: text", "assistant: tool_use(t1)", "user: tool_result(t1) text", "assistant: tool_use(t1_2)", "user: tool_result(t1_2)"}},
		{name: "parallel calls sharing an id",
			c:     raw(user(text("a")), asst(call("t1"), call("t1")), user(result("t1"), result("t1"))),
			rules: []conv.Rule{conv.RuleDuplicateToolUse},
			shape: []string{"user: text", "assistant: tool_use(t1) tool_use(t1_2)", "user: tool_result(t1) tool_result(t1_2)"}},
		{name: "empty blocks and messages are dropped",
			c:     raw(user(text("a"), text(" ")), asst(), asst(say("b"), conv.NewThinking("", ""))),
			rules: []conv.Rule{conv.RuleEmptyBlock, conv.RuleEmptyMessage},
			shape: []string{"user: text", "assistant: text"}},
		{name: "tool_use in a user message becomes text",
			c:     raw(user(text("a"), call("t1")), asst(say("b"))),
			rules: []conv.Rule{conv.RuleWrongRole},
			shape: []string{"user: text text", "assistant: text"}},
		{name: "tool_result in an assistant message becomes text",
			c:     raw(user(text("a")), asst(say("b"), result("t1"))),
			rules: []conv.Rule{conv.RuleWrongRole},
			shape: []string{"user: text", "assistant: text text"}},
		{name: "unpinned summary is pinned",
			c:     raw(user(unpinned, text("a"))),
			rules: []conv.Rule{conv.RuleSummaryUnpinned},
			shape: []string{"user: summary text"}},
		{name: "ids handed out never collide with ids already present",
			c: &conv.Conversation{Messages: []conv.Message{
				user(text("a")),
				asst(call("t1"), call("t2")),
				user(result("t1")),
			}},
			mod: func(c *conv.Conversation) {
				// ids set by hand past Seq, as a decoder without Stamp leaves them
				c.Messages[0].Blocks[0].ID = "b1"
				c.Messages[1].Blocks[0].ID = "b2"
				c.Messages[1].Blocks[1].ID = "b3"
				c.Messages[2].Blocks[0].ID = "b4"
			},
			rules: []conv.Rule{conv.RuleMissingResult},
			shape: []string{"user: text", "assistant: tool_use(t1) tool_use(t2)", "user: tool_result(t1) tool_result(t2)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mod != nil {
				tt.mod(tt.c)
			}
			fixes := conv.Repair(tt.c)
			if vs := conv.Check(tt.c); len(vs) > 0 {
				t.Fatalf("Check after Repair: %v (fixes %v)", vs, fixes)
			}
			for _, r := range tt.rules {
				if !slices.ContainsFunc(fixes, func(f conv.Fix) bool { return f.Rule == r }) {
					t.Errorf("no %s fix reported; fixes: %v", r, fixes)
				}
			}
			if len(tt.rules) == 0 && len(fixes) > 0 {
				t.Errorf("unexpected fixes %v", fixes)
			}
			for _, f := range fixes {
				if f.Detail == "" || f.Msg < 0 {
					t.Errorf("fix badly reported: %+v", f)
				}
			}
			if got := shape(tt.c); !slices.Equal(got, tt.shape) {
				t.Errorf("after Repair:\n got %q\nwant %q", got, tt.shape)
			}
			if tt.check != nil {
				tt.check(t, tt.c)
			}
			// turns are numbered from the rounds again
			for i, m := range tt.c.Messages {
				if m.Turn < 1 || i > 0 && m.Turn < tt.c.Messages[i-1].Turn {
					t.Errorf("message %d has turn %d after Repair", i, m.Turn)
				}
			}
			if again := conv.Repair(tt.c); len(again) > 0 {
				t.Errorf("second Repair fixed %v", again)
			}
		})
	}
}

// TestRepairBadOpaque: an opaque block no provider could take back
// becomes text holding its bytes, in a tool result's content too; a good
// one is left alone.
func TestRepairBadOpaque(t *testing.T) {
	r := conv.NewToolResult("t1", "ToolSearch", "", false)
	r.Content = []conv.Block{{Type: conv.TypeOpaque, Raw: []byte(`{"type":"tool_reference","tool_name":"X"}`), Meta: conv.DefaultMeta(conv.TypeOpaque, conv.SourceTool)}}
	c := build(user(text("a"), opaque(`"str"`), opaque(`{"type":"document"}`)), asst(call("t1")), user(r))
	fixes := conv.Repair(c)
	if len(fixes) != 2 || fixes[0].Rule != conv.RuleBadOpaque || fixes[1].Rule != conv.RuleBadOpaque {
		t.Fatalf("fixes %v, want two bad-opaque", fixes)
	}
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("after Repair: %v", vs)
	}
	if b := c.Messages[0].Blocks[1]; b.Type != conv.TypeText || b.Text != `"str"` {
		t.Errorf("bad opaque block became %+v, want text holding its bytes", b)
	}
	if b := c.Messages[0].Blocks[2]; b.Type != conv.TypeOpaque {
		t.Errorf("a good opaque block became %s", b.Type)
	}
	if b := c.Messages[2].Blocks[0].Content[0]; b.Type != conv.TypeText {
		t.Errorf("the opaque block without a provider in a result became %s, want text", b.Type)
	}
}
