package conv_test

import (
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
)

// countingCounter charges one token per four bytes and records every text
// it was asked to count.
type countingCounter struct{ texts []string }

func (c *countingCounter) Count(s string) int {
	c.texts = append(c.texts, s)
	return (len(s) + 3) / 4
}

func TestTokensCountsOnlyNewBlocks(t *testing.T) {
	c := convtest.Valid(convtest.NewChoices(seeds[6]), convtest.Options{Request: true})
	c.Tools = append(c.Tools, convtest.Tools...)
	c.Pending = []conv.Block{remind("<system-reminder>p</system-reminder>")}
	cc := &countingCounter{}
	first := c.Tokens(cc)
	if len(cc.texts) == 0 || first.Total() == 0 || first.Tools == 0 || first.System == 0 || first.Pending == 0 {
		t.Fatalf("first count: %d calls, %+v", len(cc.texts), first)
	}

	// nothing changed: nothing is counted again
	cc.texts = nil
	if again := c.Tokens(cc); again != first || len(cc.texts) != 0 {
		t.Fatalf("recount of an unchanged conversation: %d calls (%q), %+v vs %+v", len(cc.texts), cc.texts, again, first)
	}

	// one message appended: only its blocks are counted
	c.Append(asst(say("the new reply"), call("t_new")))
	cc.texts = nil
	grown := c.Tokens(cc)
	want := []string{"the new reply", `Bash {"command":"go test ./..."}`}
	if len(cc.texts) != len(want) || cc.texts[0] != want[0] || cc.texts[1] != want[1] {
		t.Fatalf("after appending one message counted %q, want %q", cc.texts, want)
	}
	added := conv.MessageTokens(&c.Messages[len(c.Messages)-1], cc)
	if grown.Messages != first.Messages+added || grown.System != first.System || grown.Tools != first.Tools {
		t.Errorf("grown %+v = first %+v + %d?", grown, first, added)
	}

	// a block changed through SetText is counted again, alone
	b := &c.Messages[0].Blocks[0]
	b.SetText("shorter", conv.RungCompressed)
	cc.texts = nil
	c.Tokens(cc)
	if len(cc.texts) != 1 || cc.texts[0] != "shorter" {
		t.Errorf("after SetText counted %q", cc.texts)
	}
}

func TestBlockTokens(t *testing.T) {
	cc := &countingCounter{}
	img := conv.Block{Type: conv.TypeImage, ImageSource: []byte(convtest.ImageSource)}
	nested := conv.NewToolResult("t1", "Read", "", false)
	nested.Content = []conv.Block{conv.NewText(conv.SourceTool, "12345678"), img}
	tests := []struct {
		name string
		b    conv.Block
		want int
	}{
		{"text", text("12345678"), 3 + 2},
		{"image costs a fixed amount", img, 3 + conv.ImageTokens},
		{"tool call counts name and input", conv.NewToolUse("t", "LS", []byte(`{"path":"."}`)), 3 + 4},
		{"result with a list counts its parts", nested, 3 + (3 + 2) + (3 + conv.ImageTokens)},
		{"redacted thinking counts its data", conv.Block{Type: conv.TypeRedactedThinking, Data: "abcd"}, 3 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b.Clone()
			if got := conv.BlockTokens(&b, cc); got != tt.want {
				t.Errorf("BlockTokens = %d, want %d", got, tt.want)
			}
			if b.Meta.Tokens != tt.want {
				t.Errorf("cached %d", b.Meta.Tokens)
			}
		})
	}
}

func TestCheckWindow(t *testing.T) {
	c := build(user(text("hello there, a few tokens")))
	cc := &countingCounter{}
	n := c.Tokens(cc).Total()
	tests := []struct {
		limit int
		ok    bool
	}{{n, true}, {n + 1, true}, {n - 1, false}, {0, false}}
	for _, tt := range tests {
		err := conv.CheckWindow(c, tt.limit, cc)
		if (err == nil) != tt.ok {
			t.Errorf("limit %d (need %d): err %v", tt.limit, n, err)
		}
		var we *conv.WindowError
		if err != nil && (!errors.Is(err, conv.ErrWindow) || !errors.As(err, &we) || we.Tokens != n || we.Limit != tt.limit) {
			t.Errorf("limit %d: %v is not a WindowError with the figures", tt.limit, err)
		}
	}
}
