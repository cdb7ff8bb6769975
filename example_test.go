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
	// request  2:   224 tokens
	// request  3:  2647 tokens
	// request  4:  9623 tokens
	// request  5:  4650 tokens
	//   compact regions=1 tokens=9305: trigger soft: context 13955 tokens, 4650 after 1 summaries
	// request  6:  5860 tokens
	// request  7:  5924 tokens
	// request  8:  8367 tokens
	// request  9:  5461 tokens
	//   compress blocks=2 tokens=2948: the round ended: its results enter history in their per-tool compressed form (rung 1)
	// request 10:  8660 tokens
	// request 11:  7933 tokens
	//   wait tokens=4364: policy cache-aware keeps these clearable results for now
	//   compact regions=1 tokens=5060: trigger soft: context 12993 tokens, 7933 after 1 summaries
	// request 12:  8018 tokens
	// request 13:  3792 tokens
	//   compact regions=1 tokens=7424: trigger soft: context 11216 tokens, 3792 after 1 summaries
}
