package compact

import (
	"context"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// TestCompactionCarriesStandingContext: the context a client opens its
// session with (Claude Code's CLAUDE.md reminder, Codex's environment
// context) stays in the request, as it is, through one compaction and the
// next — as the clients send it again after compacting themselves — while
// a reminder later in the session is summarized like the rest.
func TestCompactionCarriesStandingContext(t *testing.T) {
	const (
		claudeMd = "<system-reminder>\nContents of CLAUDE.md: always run `make lint` before committing.\n</system-reminder>"
		envCtx   = "<environment_context>\n  <cwd>/home/me/repo</cwd>\n</environment_context>"
		later    = "<system-reminder>\nThe todo list is empty.\n</system-reminder>"
	)
	for _, mode := range []Mode{ModeRound, ModeRegion} {
		t.Run(string(mode), func(t *testing.T) {
			b := newBuilder()
			b.user("Round 1: please refactor the parser.",
				conv.NewText(conv.SourceReminder, claudeMd), conv.NewText(conv.SourceHook, envCtx))
			b.steps(1, 4, 600)
			b.say("Round 1 done.")
			b.user("Round 2: go on.", conv.NewText(conv.SourceReminder, later))
			laterID := newest(b).Blocks[0].ID
			b.steps(2, 4, 600)
			b.say("Round 2 done.")
			c := b.c
			ids := map[string]string{} // text → its block's id
			for _, bl := range c.Messages[0].Blocks {
				ids[bl.Text] = bl.ID
			}
			withRequest(c, "go on")
			k, l := keptLadder(c, mode)
			for round := 3; round <= 4; round++ {
				res, err := l.Before(context.Background(), c, k)
				if err != nil {
					t.Fatal(err)
				}
				mustCheck(t, c)
				if res.Compactions == 0 {
					t.Fatalf("round %d: no compaction: %+v", round, res)
				}
				for _, text := range []string{claudeMd, envCtx} {
					i, j := c.Find(ids[text])
					if i != 0 {
						t.Fatalf("round %d: %q is not in the first message (message %d)", round, text, i)
					}
					if got := c.Messages[i].Blocks[j]; got.Text != text || got.Meta.Rung != conv.RungFull {
						t.Errorf("round %d: carried as %q (rung %d)", round, got.Text, got.Meta.Rung)
					}
					if n := strings.Count(allText(c), text); n != 1 {
						t.Errorf("round %d: %q is in the request %d times", round, text, n)
					}
				}
				if i, _ := c.Find(laterID); i >= 0 {
					t.Errorf("round %d: a reminder later in the session was carried", round)
				}
				more := &builder{c: c, n: 100 * round}
				more.steps(round, 6, 600).say("done.").user("go on.")
				k.record(c)
			}
		})
	}
}

// newest is the message b wrote last.
func newest(b *builder) conv.Message { return b.c.Messages[len(b.c.Messages)-1] }
