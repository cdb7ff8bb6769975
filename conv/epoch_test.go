package conv_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/conv"
)

func summary(last int) conv.Block {
	return conv.NewSummary("recorded summary", conv.Span{First: 1, Last: last})
}

// epochs builds a conversation whose recorded compactions start epochs at
// the given message indexes.
func epochs(at []int, ms ...conv.Message) *conv.Conversation {
	c := build(ms...)
	c.Epochs = at
	return c
}

func TestCheckEpochs(t *testing.T) {
	tests := []struct {
		name string
		c    *conv.Conversation
		want []where
	}{
		{name: "two recorded summaries, each covering all before it, one per epoch",
			c: epochs([]int{2, 4},
				user(text("a")), asst(say("A")),
				user(summary(1), text("b")), asst(say("B")),
				user(summary(2), text("c")), asst(say("C")))},
		{name: "the same summaries without epochs overlap",
			c: build(
				user(text("a")), asst(say("A")),
				user(summary(1), text("b")), asst(say("B")),
				user(summary(2), text("c")), asst(say("C"))),
			want: []where{{conv.RuleResummarized, 4, "b6"}}},
		{name: "an epoch may start mid-turn, after tool results",
			c: epochs([]int{3},
				user(text("a")), asst(call("t1")), user(result("t1")),
				user(summary(1)), asst(say("A")))},
		{name: "an epoch may start after unanswered calls",
			c: epochs([]int{2},
				user(text("a")), asst(call("t1")),
				user(summary(1)), asst(say("A")))},
		{name: "an epoch starts with a user message",
			c: epochs([]int{2},
				user(text("a")), asst(say("A")), asst(say("B"))),
			want: []where{{conv.RuleFirstNotUser, 2, ""}}},
		{name: "results at an epoch start answer nothing",
			c: epochs([]int{2},
				user(text("a")), asst(call("t1")), user(result("t1"))),
			want: []where{{conv.RuleOrphanResult, 2, "b3"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, locate(conv.Check(tc.c))); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepairKeepsEpochs: repairs never merge across an epoch start and
// keep Epochs pointing at the summaries.
func TestRepairKeepsEpochs(t *testing.T) {
	c := raw(
		asst(say("stray")),                     // gets a user message before it
		user(text("a")), user(text("a again")), // merged
		asst(call("t1")), user(result("t1")),
		user(summary(1)), // epoch start after a user message: not merged
		asst(conv.Block{Type: conv.TypeText}), asst(say("A")),
		user(summary(2), text("b")), asst(say("B")),
	)
	c.Epochs = []int{5, 8}
	conv.Repair(c)
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("after repair: %v", vs)
	}
	for _, e := range c.Epochs {
		if c.Messages[e].Blocks[0].Type != conv.TypeSummary {
			t.Errorf("epoch %d starts with %s", e, c.Messages[e].Blocks[0].Type)
		}
	}
	if len(c.Epochs) != 2 {
		t.Errorf("epochs = %v", c.Epochs)
	}
	if last := c.LastEpoch(); last.Messages[0].Blocks[0].Type != conv.TypeSummary || len(last.Messages) != 2 {
		t.Errorf("last epoch = %+v", last.Messages)
	}
	cl := c.Clone()
	cl.Epochs[0] = 99
	if slices.Contains(c.Epochs, 99) {
		t.Error("Clone shares Epochs")
	}
}

func TestRecordedUsage(t *testing.T) {
	c := build(user(text("a")), asst(say("A")), user(text("b")), asst(say("B")))
	c.Messages[1].Usage = &conv.Usage{Input: 10, CacheWrite: 100, Output: 5}
	c.Messages[3].Usage = &conv.Usage{Input: 3, CacheRead: 100, Output: 7}
	total, n := c.RecordedUsage()
	if n != 2 || total != (conv.Usage{Input: 13, CacheRead: 100, CacheWrite: 100, Output: 12}) {
		t.Errorf("RecordedUsage = %+v, %d", total, n)
	}
	cl := c.Clone()
	cl.Messages[1].Usage.Input = 0
	if c.Messages[1].Usage.Input != 10 {
		t.Error("Clone shares Usage")
	}
}
