package ctxkit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ctxkit/ctxkit"
	"github.com/ctxkit/ctxkit/conv"
)

// An engine for a 32k window fed a recorded session (two rounds of a
// coding agent fixing a parser): before each of the agent's requests it
// decides what to compress, clear or summarize, and says why.
func Example() {
	ctx := context.Background()
	rec, err := ctxkit.Load(ctx, "testdata/session.json")
	if err != nil {
		log.Fatal(err)
	}
	e, err := ctxkit.New(ctxkit.Config{Window: 32_000, Keeper: ctxkit.NewMemoryKeeper()})
	if err != nil {
		log.Fatal(err)
	}
	replay := ctxkit.NewReplay(e)
	// The live conversation starts empty; its ids continue past the recording's.
	live := &ctxkit.Conversation{System: rec.System, Tools: rec.Tools, Seq: rec.Seq}
	arrived, requests := 0, 0
	for _, m := range rec.Messages {
		if m.Role == conv.RoleAssistant { // the agent asks the model now
			ready, err := replay.Step(ctx, live, arrived)
			if err != nil {
				log.Fatal(err)
			}
			requests++
			fmt.Printf("request %2d: %5d tokens\n", requests, ready.Tokens)
			for _, d := range ready.Decisions {
				fmt.Printf("  %s\n", d)
			}
			arrived = 0
		}
		live.Append(m)
		arrived++
	}
	// Output:
	// request  1:   151 tokens
	// request  2:   223 tokens
	// request  3:  2646 tokens
	// request  4:  9517 tokens
	// request  5:  5007 tokens
	//   compact regions=1 tokens=9142: trigger soft: context 14149 tokens, 5007 after 1 summaries
	// request  6:  6210 tokens
	// request  7:  6273 tokens
	// request  8:  8716 tokens
	// request  9:  5817 tokens
	//   compress blocks=2 tokens=2941: the round ended: its results enter history in their per-tool compressed form (rung 1)
	// request 10:  9016 tokens
	// request 11:  5117 tokens
	//   wait tokens=4664: policy cache-aware keeps these clearable results for now
	//   compact regions=1 tokens=8532: trigger soft: context 13649 tokens, 5117 after 1 summaries
	// request 12:  5202 tokens
	// request 13:  8400 tokens
}
