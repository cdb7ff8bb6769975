package conv_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
)

func turns(c *conv.Conversation) []int {
	var ts []int
	for _, m := range c.Messages {
		ts = append(ts, m.Turn)
	}
	return ts
}

func TestAppendAndRounds(t *testing.T) {
	summary := conv.NewSummary("## Completed\n- a", conv.Span{First: 1, Last: 4})
	tests := []struct {
		name   string
		ms     []conv.Message
		turns  []int
		rounds []conv.Round
	}{
		{"empty", nil, nil, nil},
		{"one round of tool calls",
			[]conv.Message{user(text("a")), asst(call("t1")), user(result("t1")), asst(call("t2")), user(result("t2")), asst(say("done"))},
			[]int{1, 1, 1, 1, 1, 1}, []conv.Round{{Start: 0, End: 6}}},
		{"user text opens a round, results do not",
			[]conv.Message{user(text("a")), asst(call("t1")), user(result("t1")), asst(say("b")), user(text("c")), asst(say("d"))},
			[]int{1, 1, 1, 1, 2, 2}, []conv.Round{{Start: 0, End: 4}, {Start: 4, End: 6}}},
		{"results and user text in one message open a round",
			[]conv.Message{user(text("a")), asst(call("t1")), user(result("t1"), text("stop, do x")), asst(say("ok"))},
			[]int{1, 1, 2, 2}, []conv.Round{{Start: 0, End: 2}, {Start: 2, End: 4}}},
		{"a reminder alone does not open a round",
			[]conv.Message{user(text("a")), asst(say("b")), user(remind("<system-reminder>file changed</system-reminder>")), asst(say("c"))},
			[]int{1, 1, 1, 1}, []conv.Round{{Start: 0, End: 4}}},
		{"a leading summary forms a round of its own",
			[]conv.Message{user(summary), asst(say("resuming")), user(text("next")), asst(say("ok"))},
			[]int{1, 1, 2, 2}, []conv.Round{{Start: 0, End: 2}, {Start: 2, End: 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := build(tt.ms...)
			if got := turns(c); !slices.Equal(got, tt.turns) {
				t.Errorf("turns = %v, want %v", got, tt.turns)
			}
			if got := c.Rounds(); !slices.Equal(got, tt.rounds) {
				t.Errorf("Rounds() = %v, want %v", got, tt.rounds)
			}
			if n := len(c.Messages); c.LastTurn() != max(0, len(tt.rounds)) && n > 0 {
				t.Errorf("LastTurn() = %d with %d rounds", c.LastTurn(), len(tt.rounds))
			}
			// Renumber gives the same turns Append gave
			for i := range c.Messages {
				c.Messages[i].Turn = 99
			}
			c.Renumber()
			if got := turns(c); !slices.Equal(got, tt.turns) {
				t.Errorf("after Renumber turns = %v, want %v", got, tt.turns)
			}
		})
	}
}

func TestOpensRound(t *testing.T) {
	tests := []struct {
		m    conv.Message
		want bool
	}{
		{user(text("a")), true},
		{user(result("t1")), false},
		{user(result("t1"), text("a")), true},
		{user(remind("r")), false},
		{user(conv.NewText(conv.SourceHook, "hook")), false},
		{asst(say("a")), false},
	}
	for i, tt := range tests {
		if got := conv.OpensRound(tt.m); got != tt.want {
			t.Errorf("%d: OpensRound(%v) = %v", i, shape(&conv.Conversation{Messages: []conv.Message{tt.m}}), got)
		}
	}
}

func TestStampIDs(t *testing.T) {
	c := build(user(text("a")), asst(say("b"), call("t1")))
	var ids []string
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			ids = append(ids, b.ID)
		}
	}
	if want := []string{"b1", "b2", "b3"}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	// nested result content gets ids too, and existing ids advance Seq
	r := result("t1")
	r.Content = []conv.Block{conv.NewText(conv.SourceTool, "x")}
	r.Text = ""
	m := user(r)
	m.Blocks = append(m.Blocks, conv.Block{ID: "b40", Type: conv.TypeText, Text: "kept", Meta: conv.DefaultMeta(conv.TypeText, conv.SourceUser)})
	c.Append(m)
	last := c.Messages[2]
	if last.Blocks[0].ID != "b4" || last.Blocks[0].Content[0].ID != "b5" || last.Blocks[1].ID != "b40" {
		t.Errorf("stamped %s, %s, %s", last.Blocks[0].ID, last.Blocks[0].Content[0].ID, last.Blocks[1].ID)
	}
	if id := c.NewID(); id != "b41" {
		t.Errorf("NewID after b40 = %s", id)
	}
}

func TestFindAndToolUses(t *testing.T) {
	c := build(user(text("a")), asst(call("t1"), call("t2")), user(result("t1"), result("t2")))
	if i, j := c.Find("b3"); i != 1 || j != 1 {
		t.Errorf("Find(b3) = %d,%d", i, j)
	}
	if i, j := c.Find("b99"); i != -1 || j != -1 {
		t.Errorf("Find(b99) = %d,%d", i, j)
	}
	uses := c.ToolUses()
	if len(uses) != 2 || uses["t2"].ID != "b3" {
		t.Errorf("ToolUses() = %v", uses)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := convtest.Valid(convtest.NewChoices(seeds[6]), convtest.Options{Request: true})
	c.Tools = append(c.Tools, convtest.Tools[0])
	before, _ := json.Marshal(c)
	d := c.Clone()
	if !cmp.Equal(c, d, jsonEqual) {
		t.Fatalf("clone differs:\n%s", cmp.Diff(c, d, jsonEqual))
	}
	// scribble over every byte slice and block of the clone
	for i := range d.Messages {
		for j := range d.Messages[i].Blocks {
			b := &d.Messages[i].Blocks[j]
			b.Text = "changed"
			for k := range b.Input {
				b.Input[k] = 'x'
			}
			for k := range b.Content {
				b.Content[k].Text = "changed"
			}
		}
	}
	for i := range d.Tools {
		for k := range d.Tools[i].InputSchema {
			d.Tools[i].InputSchema[k] = 'x'
		}
	}
	d.System[0].Text = "changed"
	after, _ := json.Marshal(c)
	if string(before) != string(after) {
		t.Fatal("changing the clone changed the original")
	}
}

func TestJSONRoundTripIsLossless(t *testing.T) {
	for i, s := range seeds {
		c := convtest.Valid(convtest.NewChoices(s), convtest.Options{Request: i%2 == 0})
		c.Pending = []conv.Block{remind("pending")}
		c.Stamp(c.Pending)
		enc, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back conv.Conversation
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(c, &back, jsonEqual) {
			t.Errorf("seed %d: (-before +after)\n%s", i, cmp.Diff(c, &back, jsonEqual))
		}
	}
}

func TestApplyRung(t *testing.T) {
	c := build(user(text("a")), asst(call("t1")), user(result("t1")), asst(say("ok")))
	orig := c.Messages[2].Blocks[0]
	placeholder := orig.Clone()
	placeholder.SetText(`[cleared: Bash "go test ./..." — recall b3]`, conv.RungPlaceholder)
	e := conv.Edit{Kind: conv.EditRung, Reason: "micro:eager", Blocks: []conv.Block{placeholder}}
	if got := e.Affected(c); !slices.Equal(got, []string{"b3"}) {
		t.Errorf("Affected = %v", got)
	}
	if err := c.Apply(e); err != nil {
		t.Fatal(err)
	}
	got := c.Messages[2].Blocks[0]
	if got.ID != "b3" || got.Meta.Rung != conv.RungPlaceholder || got.Text != placeholder.Text || got.ToolUseID != "t1" {
		t.Errorf("after Apply: %+v", got)
	}
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatal(vs)
	}
	// the edit's block is copied, not shared
	e.Blocks[0].Text = "scribbled"
	if c.Messages[2].Blocks[0].Text == "scribbled" {
		t.Error("Apply kept a reference to the edit's block")
	}
	err := c.Apply(conv.Edit{Kind: conv.EditRung, Blocks: []conv.Block{{ID: "b99", Type: conv.TypeText, Text: "x"}}})
	if !errors.Is(err, conv.ErrEdit) {
		t.Errorf("unknown block: err = %v, want ErrEdit", err)
	}
	if err := c.Apply(conv.Edit{Kind: "shred"}); !errors.Is(err, conv.ErrEdit) {
		t.Errorf("unknown kind: err = %v, want ErrEdit", err)
	}
}

func TestApplyReplace(t *testing.T) {
	newConv := func() *conv.Conversation {
		return build(
			user(text("a")), asst(call("t1")), user(result("t1")), asst(say("b")),
			user(text("c")), asst(say("d")),
		)
	}
	summary := conv.NewSummary("## Completed\n- ran the tests", conv.Span{First: 1, Last: 1})
	e := conv.Edit{Kind: conv.EditReplace, Reason: "compact:auto", From: 0, To: 4,
		Messages: []conv.Message{user(summary), asst(say("Understood."))}}

	c := newConv()
	if got := e.Affected(c); !slices.Equal(got, []string{"b1", "b2", "b3", "b4"}) {
		t.Errorf("Affected = %v", got)
	}
	if err := c.Apply(e); err != nil {
		t.Fatal(err)
	}
	if got := shape(c); !slices.Equal(got, []string{"user: summary", "assistant: text", "user: text", "assistant: text"}) {
		t.Errorf("after Apply: %q", got)
	}
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatal(vs)
	}
	// new blocks get fresh ids, past every id handed out before
	if id := c.Messages[0].Blocks[0].ID; id != "b7" {
		t.Errorf("summary id = %s, want b7", id)
	}
	if e.Messages[0].Blocks[0].ID != "" {
		t.Error("Apply stamped the edit's own blocks")
	}

	for _, bad := range []conv.Edit{
		{Kind: conv.EditReplace, From: -1, To: 2},
		{Kind: conv.EditReplace, From: 3, To: 2},
		{Kind: conv.EditReplace, From: 0, To: 7},
	} {
		c := newConv()
		if err := c.Apply(bad); !errors.Is(err, conv.ErrEdit) {
			t.Errorf("Apply(%d..%d) = %v, want ErrEdit", bad.From, bad.To, err)
		}
		if bad.Affected(c) != nil && bad.From < 0 {
			t.Errorf("Affected of an out-of-range edit = %v", bad.Affected(c))
		}
	}
}

// TestReplay rebuilds a state from its recorded messages and edits, as the
// transcript does on resume: the result equals the live state, and new ids
// never collide with ids already handed out.
func TestReplay(t *testing.T) {
	var log []any // conv.Message or conv.Edit, in order
	live := &conv.Conversation{}
	appendMsg := func(m conv.Message) {
		live.Append(m)
		log = append(log, live.Messages[len(live.Messages)-1])
	}
	edit := func(e conv.Edit) {
		log = append(log, e)
		if err := live.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	appendMsg(user(text("a")))
	appendMsg(asst(call("t1"), call("t2")))
	appendMsg(user(result("t1"), result("t2")))
	appendMsg(asst(say("b")))
	cleared := live.Messages[2].Blocks[0].Clone()
	cleared.SetText("[cleared]", conv.RungPlaceholder)
	edit(conv.Edit{Kind: conv.EditRung, Blocks: []conv.Block{cleared}})
	appendMsg(user(text("c")))
	appendMsg(asst(say("d")))
	edit(conv.Edit{Kind: conv.EditReplace, From: 0, To: 4, Messages: []conv.Message{user(conv.NewSummary("s", conv.Span{First: 1, Last: 1})), asst(say("ok"))}})
	appendMsg(user(text("e")))

	replayed := &conv.Conversation{}
	for _, r := range log {
		switch r := r.(type) {
		case conv.Message:
			replayed.Append(r)
		case conv.Edit:
			if err := replayed.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !cmp.Equal(live, replayed, jsonEqual) {
		t.Fatalf("replay differs (-live +replayed):\n%s", cmp.Diff(live, replayed, jsonEqual))
	}
	used := make(map[string]bool)
	for _, m := range replayed.Messages {
		for _, b := range m.Blocks {
			used[b.ID] = true
		}
	}
	// every id handed out before, including those of removed blocks, stays retired
	for range 3 {
		id := replayed.NewID()
		if used[id] {
			t.Fatalf("NewID after replay reused %s", id)
		}
		if n := live.NewID(); n != id {
			t.Errorf("live NewID %s, replayed %s", n, id)
		}
	}
	if vs := conv.Check(replayed); len(vs) > 0 {
		t.Fatal(vs)
	}
}
