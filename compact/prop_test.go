package compact

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"pgregory.net/rapid"
)

// TestShapesProperty replays random conversations turn by turn, compacting
// before every request in both modes, and checks after every mutation that
// the invariants hold, that the keeper saw every edit first, that no
// summary is summarized again and that the user's newest words survive.
func TestShapesProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		mode := rapid.SampledFrom([]Mode{ModeRegion, ModeRound}).Draw(rt, "mode")
		window := rapid.SampledFrom([]int{12_000, 20_000, 32_000}).Draw(rt, "window")
		cfg := Config{Window: window, MaxOutput: 2_000, Mode: mode, KeepRecentTurns: rapid.IntRange(1, 5).Draw(rt, "keepTurns"), KeepRounds: rapid.IntRange(1, 4).Draw(rt, "keepRounds"), ThrashRepeats: -1}
		cp := New(nil, cfg)
		k := newKeeper()
		b := newBuilder()
		ctx := context.Background()
		check := func(where string) {
			if vs := conv.Check(b.c); len(vs) > 0 {
				rt.Fatalf("%s: %v", where, vs)
			}
		}
		before := func(where string) {
			k.record(b.c)
			_, err := cp.Before(ctx, b.c, k)
			if err != nil && !strings.Contains(err.Error(), "overflow") {
				rt.Fatalf("%s: %v", where, err)
			}
			check(where)
			if vs := conv.CheckRequest(b.c); len(vs) > 0 {
				rt.Fatalf("%s: not a request: %v", where, vs)
			}
		}
		if rapid.Bool().Draw(rt, "resumed") {
			// A session resumed from a summary.
			s := conv.NewSummary("## Task and intent\nearlier work", conv.Span{First: 1, Last: 1})
			b.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{s}})
			b.say("Understood, continuing.")
		}
		rounds := rapid.IntRange(1, 7).Draw(rt, "rounds")
		for r := 1; r <= rounds; r++ {
			var extra []conv.Block
			if rapid.Bool().Draw(rt, "reminder") {
				extra = append(extra, conv.NewText(conv.SourceReminder, "<system-reminder>file changed</system-reminder>"))
			}
			text := fmt.Sprintf("round %d request", r)
			if rapid.Bool().Draw(rt, "constraint") {
				text += ": you must keep the API"
			}
			b.user(text, extra...)
			before(fmt.Sprintf("round %d open", r))
			steps := rapid.IntRange(0, 6).Draw(rt, "steps")
			for s := range steps {
				var blocks []conv.Block
				if rapid.Bool().Draw(rt, "thinking") {
					blocks = append(blocks, conv.NewThinking("hmm", "sig"))
				}
				if rapid.Bool().Draw(rt, "text") {
					blocks = append(blocks, conv.NewText(conv.SourceAssistant, "I'll look at it."))
				}
				n := rapid.IntRange(1, 3).Draw(rt, "calls")
				var calls []conv.Block
				for range n {
					calls = append(calls, b.call("Bash", fmt.Sprintf(`{"command":"echo %d > f%d_%d.txt"}`, s, r, s)))
				}
				b.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: append(blocks, calls...)})
				b.pending = calls
				var res []string
				for range n {
					size := rapid.IntRange(0, 2500).Draw(rt, "size")
					txt := big("out", size)
					if rapid.IntRange(0, 5).Draw(rt, "err") == 0 {
						txt = "ERR:" + txt + "\nerror: boom"
					}
					res = append(res, txt)
				}
				b.results(res...)
				before(fmt.Sprintf("round %d step %d", r, s))
			}
			b.say(fmt.Sprintf("round %d done", r))
			check("reply")
		}
		if rapid.Bool().Draw(rt, "manual") {
			b.user("wrap up")
			k.record(b.c)
			if _, err := cp.Compact(ctx, b.c, k, "the end"); err != nil {
				rt.Fatal(err)
			}
			check("manual")
			if !strings.Contains(allText(b.c), "wrap up") {
				rt.Fatal("the newest user message was compacted")
			}
		}
		if len(k.edits) != 0 {
			for _, s := range summaries(b.c) {
				if !s.Meta.Pinned || s.Meta.Compactable {
					rt.Fatalf("summary %s not pinned", s.ID)
				}
			}
		}
	})
}
