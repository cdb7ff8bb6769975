package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
	"github.com/ctxkit/ctxkit/pricing"
)

// chooser is what drives a generated session: seeded random bytes in the
// property test, the fuzzer's bytes in the fuzz target (convtest.Choices
// both).
type chooser interface{ Intn(n int) int }

// windowSession replays a generated session of any shape — huge user
// pastes, huge single tool results, huge tool_use inputs (Write contents,
// Edit strings, heredocs), images, a resumed summary, thousands of tiny
// turns — compacting before every request, and reports the first broken
// promise: an invariant violation, a request that is not a valid request,
// a request over the limit (conv.CheckWindow), an edit not kept first, or
// an error other than a stopped guard.
func windowSession(ch chooser) error {
	window := []int{6_000, 12_000, 32_000}[ch.Intn(3)]
	mode := []Mode{ModeRegion, ModeRound}[ch.Intn(2)]
	cfg := Config{Window: window, MaxOutput: []int{1_000, 4_000, 8_192}[ch.Intn(3)], Mode: mode,
		KeepRecentTurns: 1 + ch.Intn(5), KeepRounds: 1 + ch.Intn(4),
		// With prices the schedule may compact below the soft threshold.
		Pricing: []pricing.Table{{}, pricing.Anthropic(), pricing.NoCache()}[ch.Intn(3)]}
	cp := New(nil, cfg)
	k := newKeeper()
	b := newBuilder()
	if ch.Intn(3) == 1 {
		b.c.System = []conv.Block{conv.NewText(conv.SourceSystem, big("system", ch.Intn(window/8)))}
		b.c.Stamp(b.c.System)
	}
	// Zero choices (the fuzzer's bytes ran out) give the smallest session.
	size := func() int {
		switch ch.Intn(8) {
		case 1: // huge: up to two and a half windows
			return window/2 + ch.Intn(2*window)
		case 2, 3:
			return ch.Intn(window / 4)
		default:
			return ch.Intn(200)
		}
	}
	var failure error
	requests := 0
	before := func(where string) bool {
		requests++
		k.record(b.c)
		_, err := cp.Before(context.Background(), b.c, k)
		var stopped *StoppedError
		switch {
		case err != nil && !errors.As(err, &stopped):
			failure = fmt.Errorf("%s: %w", where, err)
		case len(conv.Check(b.c)) > 0:
			failure = fmt.Errorf("%s: %v", where, conv.Check(b.c))
		case len(conv.CheckRequest(b.c)) > 0:
			failure = fmt.Errorf("%s: not a request: %v", where, conv.CheckRequest(b.c))
		default:
			failure = cp.Fits(b.c)
			if failure != nil {
				failure = fmt.Errorf("%s: %w", where, failure)
			}
		}
		return failure == nil
	}
	if ch.Intn(4) == 1 {
		s := conv.NewSummary("## Task and intent\n"+big("resumed", size()), conv.Span{First: 1, Last: 1})
		b.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{s}})
		b.say("Understood, continuing.")
	}
	tiny := ch.Intn(6) == 1
	rounds := 1 + ch.Intn(5)
	for r := 1; r <= rounds; r++ {
		text := fmt.Sprintf("round %d: you must keep the API. ", r)
		if ch.Intn(4) == 1 {
			text += big("paste", size())
		}
		var extra []conv.Block
		if ch.Intn(6) == 1 {
			extra = append(extra, conv.Block{Type: conv.TypeImage, ImageSource: []byte(convtest.ImageSource), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceUser)})
		}
		b.user(text, extra...)
		if !before(fmt.Sprintf("round %d open", r)) {
			return failure
		}
		steps := ch.Intn(6)
		if tiny {
			// Thousands of tiny turns over the rounds: small calls and
			// results only.
			steps = 200 + ch.Intn(800)
		}
		for s := range steps {
			var calls []conv.Block
			for range 1 + ch.Intn(3) {
				path := fmt.Sprintf("src/f%d_%d.go", r, s)
				kind := ch.Intn(5)
				if tiny {
					kind = 0
				}
				switch kind {
				case 1:
					in, _ := json.Marshal(map[string]string{"file_path": path, "content": big("write", size())})
					calls = append(calls, b.call("Write", string(in)))
				case 2:
					in, _ := json.Marshal(map[string]string{"file_path": path, "old_string": big("old", size()), "new_string": big("new", size())})
					calls = append(calls, b.call("Edit", string(in)))
				case 3:
					in, _ := json.Marshal(map[string]string{"command": "cat > " + path + " <<'EOF'\n" + big("heredoc", size()) + "EOF"})
					calls = append(calls, b.call("Bash", string(in)))
				default:
					calls = append(calls, b.call("Bash", fmt.Sprintf(`{"command":"go test ./... -run T%d"}`, s)))
				}
			}
			if tiny {
				b.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: calls})
			} else {
				b.say("Next step.", calls...)
			}
			b.pending = calls
			var res []string
			for range calls {
				txt := big("out", size())
				if tiny {
					txt = "ok"
				}
				if ch.Intn(5) == 1 {
					txt = "ERR:" + txt + "\nerror: boom"
				}
				res = append(res, txt)
			}
			b.results(res...)
			if !before(fmt.Sprintf("round %d step %d", r, s)) {
				return failure
			}
		}
		b.say(fmt.Sprintf("round %d done", r))
	}
	if !strings.Contains(allText(b.c), fmt.Sprintf("round %d done", rounds)) {
		return errors.New("the newest reply is gone")
	}
	return nil
}

// TestWindowProperty: no request over the limit, on any input. Sessions
// are drawn from a seeded generator (rapid's shrinking is not worth its
// time on sessions this large; FuzzWindow explores further), every shape
// forced in turn: a failure names the seed and the shape.
func TestWindowProperty(t *testing.T) {
	n := 16
	if testing.Short() || raceEnabled {
		n = 4
	}
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 12))
		data := make([]byte, 4096)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		if err := windowSession(convtest.NewChoices(data)); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}

// FuzzWindow is TestWindowProperty driven by the fuzzer's bytes:
//
//	go test ./compact -run '^$' -fuzz FuzzWindow -fuzztime 10m
func FuzzWindow(f *testing.F) {
	seeds := []string{
		"", "\x00\x01\x02", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6",
		strings.Repeat("\x01", 64),                             // huge system prompt, summary, pastes, inputs, results
		"\x02\x00\x02\x00\x00\x00\x00\x01\x00\xff",             // thousands of tiny turns in a 32k window
		"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x01\x10\x00", // a 6k window, a paste of two windows
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := windowSession(convtest.NewChoices(data)); err != nil {
			t.Fatal(err)
		}
	})
}
