package assemble

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// longRound is one round of n steps after a long question: message 2k+1
// calls r<k>, message 2k+2 holds its result.
func longRound(n int) *conv.Conversation {
	ms := []conv.Message{user(text(words(2000)))}
	for k := range n {
		id := fmt.Sprintf("r%d", k)
		ms = append(ms, asst(say("next"), call(id)), user(result(id, words(300))))
	}
	c := conversation(ms...)
	c.System = system(1500)
	return c
}

// id is the id of block j of message i.
func id(c *conv.Conversation, i, j int) string { return c.Messages[i].Blocks[j].ID }

func TestBuildHeld(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		c    func() *conv.Conversation
		hold func(c *conv.Conversation) []string
		want []string // anchors, in prompt order
	}{
		{name: "a read point and a frontier in a long round",
			c:    func() *conv.Conversation { return longRound(12) },
			hold: func(c *conv.Conversation) []string { return []string{id(c, 4, 0), id(c, 15, 1)} },
			// held first, the newest message, and the most valuable of
			// the rest: the end of the message before the newest
			want: []string{"held@m4.0", "held@m15.1", "previous@m23.1", "newest@m24.0"}},
		{name: "an id not in the conversation is ignored",
			c:    func() *conv.Conversation { return longRound(12) },
			hold: func(*conv.Conversation) []string { return []string{"b9999"} },
			want: []string{"system@s0", "previous@m23.1", "newest@m24.0"}},
		{name: "a held thinking block: the last block before it that can carry one",
			cfg: Config{MinCacheTokens: 10},
			c: func() *conv.Conversation {
				c := conversation(user(text(words(100))), asst(say("a"), conv.NewThinking("hmm", "sig")), user(text("b")), asst(say("c")), user(text("d")))
				c.System = system(100)
				return c
			},
			hold: func(c *conv.Conversation) []string { return []string{id(c, 1, 1)} },
			want: []string{"system@s0", "held@m1.0", "round@m3.0", "newest@m4.0"}},
		{name: "a held prefix below the minimum is ignored",
			c: func() *conv.Conversation {
				c := longRound(12)
				c.System = system(10)
				c.Messages[0].Blocks[0] = text("short question")
				c.Stamp(c.Messages[0].Blocks)
				return c
			},
			hold: func(c *conv.Conversation) []string { return []string{id(c, 0, 0), id(c, 15, 1)} },
			want: []string{"held@m15.1", "previous@m23.1", "newest@m24.0"}},
		{name: "two anchors allowed: one held and the newest",
			cfg:  Config{MaxAnchors: 2},
			c:    func() *conv.Conversation { return longRound(12) },
			hold: func(c *conv.Conversation) []string { return []string{id(c, 4, 0), id(c, 15, 1)} },
			want: []string{"held@m4.0", "newest@m24.0"}},
		{name: "anchors disabled: nothing held",
			cfg:  Config{MaxAnchors: -1},
			c:    func() *conv.Conversation { return longRound(12) },
			hold: func(c *conv.Conversation) []string { return []string{id(c, 4, 0)} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t, tt.cfg)
			c := tt.c()
			a, err := b.BuildHeld(c, nil, tt.hold(c))
			if err != nil {
				t.Fatal(err)
			}
			got := where(a.Anchors)
			if !slices.Equal(got, tt.want) {
				t.Errorf("anchors %q, want %q", got, tt.want)
			}
			var places []string
			for _, w := range got {
				places = append(places, w[bytes.IndexByte([]byte(w), '@')+1:])
			}
			if m := marked(t, a); !slices.Equal(m, places) {
				t.Errorf("request carries cache_control at %q, anchors say %q", m, places)
			}
		})
	}
}

// Build is BuildHeld holding nothing, and BuildHeld is as deterministic as
// Build: the same state, hold and config give the same bytes.
func TestBuildHeldDeterministic(t *testing.T) {
	c := longRound(30)
	hold := []string{id(c, 10, 0), id(c, 39, 1)}
	plain := encode(t, mustBuild(t, newBuilder(t, Config{}), c, nil))
	none, err := newBuilder(t, Config{}).BuildHeld(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, encode(t, none)) {
		t.Error("BuildHeld(nil) differs from Build")
	}
	var first []byte
	for i, cc := range []*conv.Conversation{c, c, c.Clone()} {
		a, err := newBuilder(t, Config{}).BuildHeld(cc, nil, slices.Clone(hold))
		if err != nil {
			t.Fatal(err)
		}
		body := encode(t, a)
		if i == 0 {
			first = body
		} else if !bytes.Equal(first, body) {
			t.Errorf("build %d differs from the first", i)
		}
	}
	// The conversation itself carries no anchor.
	for _, m := range c.Messages {
		for _, bl := range m.Blocks {
			if bl.CacheControl != nil {
				t.Fatalf("Build marked the conversation's block %s", bl.ID)
			}
		}
	}
}
