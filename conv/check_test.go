package conv_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/conv"
)

func TestCheck(t *testing.T) {
	unpinned := conv.NewSummary("## Done\n- fixed the bug", conv.Span{First: 1, Last: 3})
	unpinned.Meta.Compactable = true
	merged := conv.NewSummary("merged", conv.Span{First: 1, Last: 6})
	merged.Merged = true

	tests := []struct {
		name string
		c    *conv.Conversation
		mod  func(*conv.Conversation)
		want []where
	}{
		{name: "valid: one round with parallel calls",
			c: build(user(text("run the tests")), asst(say("ok"), call("t1"), call("t2")), user(result("t2"), result("t1"), remind("<system-reminder>x</system-reminder>")), asst(say("done")))},
		{name: "valid: trailing calls not answered yet",
			c: build(user(text("go")), asst(call("t1")))},
		{name: "valid: a merged summary may overlap",
			c: build(user(conv.NewSummary("a", conv.Span{First: 1, Last: 3}), merged, text("continue")))},
		{name: "valid: a server tool call needs no result, an opaque block is content",
			c: build(user(text("search"), opaque(`{"type":"document","source":{}}`)), asst(server(), opaque(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`), say("found")),
				user(text("thanks")))},
		{name: "bad-opaque: not a JSON object",
			c:    build(user(text("a"), opaque(`"str"`))),
			want: []where{{conv.RuleBadOpaque, 0, "b2"}}},
		{name: "empty-block: opaque without bytes",
			c:    build(user(text("a"), opaque(""))),
			want: []where{{conv.RuleEmptyBlock, 0, "b2"}}},
		{name: "wrong-role: a server tool call from the user",
			c:    build(user(text("a"), server())),
			want: []where{{conv.RuleWrongRole, 0, "b2"}}},
		{name: "first-not-user",
			c:    build(asst(say("hi"))),
			want: []where{{conv.RuleFirstNotUser, 0, ""}}},
		{name: "alternation",
			c:    build(user(text("a")), user(text("b"))),
			want: []where{{conv.RuleAlternation, 1, ""}}},
		{name: "empty-message",
			c:    build(user(text("a")), asst()),
			want: []where{{conv.RuleEmptyMessage, 1, ""}}},
		{name: "empty-block: blank text",
			c:    build(user(text(" \n\t"))),
			want: []where{{conv.RuleEmptyBlock, 0, "b1"}}},
		{name: "empty-block: image without source",
			c:    build(user(text("see"), conv.Block{Type: conv.TypeImage})),
			want: []where{{conv.RuleEmptyBlock, 0, "b2"}}},
		{name: "missing-result",
			c:    build(user(text("a")), asst(call("t1"), call("t2")), user(result("t1"))),
			want: []where{{conv.RuleMissingResult, 1, "b3"}}},
		{name: "duplicate-result",
			c:    build(user(text("a")), asst(call("t1")), user(result("t1"), result("t1"))),
			want: []where{{conv.RuleDuplicateResult, 2, "b4"}}},
		{name: "orphan-result after a text-only reply",
			c:    build(user(text("a")), asst(say("b")), user(result("t9"), text("c"))),
			want: []where{{conv.RuleOrphanResult, 2, "b3"}}},
		{name: "orphan-result in the first message",
			c:    build(user(result("t1"), text("a"))),
			want: []where{{conv.RuleOrphanResult, 0, "b1"}}},
		{name: "result-not-first",
			c:    build(user(text("a")), asst(call("t1")), user(text("b"), result("t1"))),
			want: []where{{conv.RuleResultNotFirst, 2, "b4"}}},
		{name: "wrong-role: tool_use in a user message",
			c:    build(user(text("a"), call("t1"))),
			want: []where{{conv.RuleWrongRole, 0, "b2"}}},
		{name: "wrong-role: tool_result in an assistant message",
			c:    build(user(text("a")), asst(result("t1"))),
			want: []where{{conv.RuleWrongRole, 1, "b2"}}},
		{name: "duplicate-tool-use",
			c:    build(user(text("a")), asst(call("t1")), user(result("t1"), text("again")), asst(call("t1")), user(result("t1"))),
			want: []where{{conv.RuleDuplicateToolUse, 3, "b5"}}},
		{name: "duplicate-id",
			c:    build(user(text("a")), asst(say("b"))),
			mod:  func(c *conv.Conversation) { c.Messages[1].Blocks[0].ID = "b1" },
			want: []where{{conv.RuleDuplicateID, 1, "b1"}}},
		{name: "duplicate-id shared with a system block",
			c: build(user(text("a"))),
			mod: func(c *conv.Conversation) {
				c.System = []conv.Block{conv.NewText(conv.SourceSystem, "sys")}
				c.System[0].ID = "b1"
			},
			want: []where{{conv.RuleDuplicateID, 0, "b1"}}},
		{name: "summary-unpinned",
			c:    build(user(unpinned, text("go on"))),
			want: []where{{conv.RuleSummaryUnpinned, 0, "b1"}}},
		{name: "resummarized",
			c:    build(user(text("a")), asst(say("b")), user(conv.NewSummary("x", conv.Span{First: 1, Last: 3}), conv.NewSummary("y", conv.Span{First: 3, Last: 4}), text("c"))),
			want: []where{{conv.RuleResummarized, 2, "b4"}}},
		{name: "every violation, not just the first",
			c: build(asst(say(" ")), asst(call("t1")), user(text("x"), result("t9"))),
			want: []where{
				{conv.RuleFirstNotUser, 0, ""},
				{conv.RuleEmptyBlock, 0, "b1"},
				{conv.RuleAlternation, 1, ""},
				{conv.RuleMissingResult, 1, "b2"},
				{conv.RuleResultNotFirst, 2, "b4"},
				{conv.RuleOrphanResult, 2, "b4"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mod != nil {
				tt.mod(tt.c)
			}
			vs := conv.Check(tt.c)
			if d := cmp.Diff(tt.want, locate(vs)); d != "" {
				t.Errorf("Check (-want +got):\n%s\nviolations: %v", d, vs)
			}
			if (len(tt.want) == 0) != (vs.Err() == nil) {
				t.Errorf("Err() = %v with %d violations", vs.Err(), len(vs))
			}
			for _, v := range vs {
				if v.Detail == "" {
					t.Errorf("%v has no detail", v)
				}
				// the block named is in the message named
				if v.Block != "" && v.Msg >= 0 && v.Msg < len(tt.c.Messages) {
					if i, _ := tt.c.Find(v.Block); i != v.Msg && v.Rule != conv.RuleDuplicateID {
						t.Errorf("%v: block %s is in message %d", v, v.Block, i)
					}
				}
			}
		})
	}
}

func TestViolationsError(t *testing.T) {
	c := build(asst(say(" ")), asst(say("x")))
	err := conv.Check(c).Err()
	var vs conv.Violations
	if !errors.As(err, &vs) || len(vs) != 3 {
		t.Fatalf("Err() = %v, want 3 violations", err)
	}
	msg := err.Error()
	for _, s := range []string{"3 invariant violation(s)", "message 0 block b1: empty-block", "message 1: alternation", "first-not-user"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not mention %q", msg, s)
		}
	}
}

func TestCheckRequest(t *testing.T) {
	tests := []struct {
		name string
		c    *conv.Conversation
		want []where
	}{
		{"ends with user", build(user(text("a")), asst(call("t1")), user(result("t1"))), nil},
		{"ends with assistant text", build(user(text("a")), asst(say("b"))), []where{{conv.RuleLastNotUser, 1, ""}}},
		{"ends with unanswered calls", build(user(text("a")), asst(call("t1"))), []where{{conv.RuleLastNotUser, 1, ""}}},
		{"no messages", build(), []where{{conv.RuleEmptyMessage, 0, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, locate(conv.CheckRequest(tt.c))); d != "" {
				t.Errorf("CheckRequest (-want +got):\n%s", d)
			}
		})
	}
}

// TestCheckOpaqueInResult: the checker looks at the opaque blocks a tool
// result holds (tool search's tool_reference) too.
func TestCheckOpaqueInResult(t *testing.T) {
	r := conv.NewToolResult("t1", "ToolSearch", "", false)
	r.Content = []conv.Block{{Type: conv.TypeOpaque, Raw: []byte(`{"type":"tool_reference","tool_name":"X"}`)}}
	c := build(user(text("a")), asst(call("t1")), user(r))
	vs := conv.Check(c)
	if len(vs) != 1 || vs[0].Rule != conv.RuleBadOpaque || vs[0].Msg != 2 {
		t.Fatalf("violations %v, want one bad-opaque in message 2", vs)
	}
	c.Messages[2].Blocks[0].Content[0].Provider = conv.ProviderAnthropic
	if vs := conv.Check(c); len(vs) > 0 {
		t.Errorf("violations %v", vs)
	}
}

// TestOpaqueCountedAndCloned: an opaque block is counted as its bytes,
// a server tool call as its recorded item, and Clone copies the bytes.
func TestOpaqueCountedAndCloned(t *testing.T) {
	counter := conv.Counter(countBytes{})
	o := opaque(`{"type":"tool_reference","tool_name":"ExitPlanMode"}`)
	if got, want := conv.BlockTokens(&o, counter), len(o.Raw); got < want {
		t.Errorf("opaque block: %d tokens, its bytes count %d", got, want)
	}
	s := server()
	if got, want := conv.BlockTokens(&s, counter), len(s.Raw); got < want {
		t.Errorf("server tool call: %d tokens, its bytes count %d", got, want)
	}
	c := o.Clone()
	c.Raw[2] = 'X'
	if o.Raw[2] == 'X' {
		t.Error("Clone shares Raw")
	}
	if !strings.Contains(o.PlainText(), "tool_reference") || strings.Contains(o.PlainText(), "ExitPlanMode") {
		t.Errorf("PlainText %q: want a note naming the type, not the bytes", o.PlainText())
	}
}

type countBytes struct{}

func (countBytes) Count(s string) int { return len(s) }
