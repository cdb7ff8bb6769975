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
	// request  5: 14149 tokens
	// request  6:  1580 tokens
	//   wait tokens=28: policy cache-aware keeps these clearable results for now
	//   compact regions=1 tokens=13772: trigger hard: context 15352 tokens, 1580 after 1 summary
	// request  7:  1643 tokens
	// request  8:  4086 tokens
	// request  9:  4128 tokens
	// request 10:  7327 tokens
	// request 11: 11960 tokens
	//   wait tokens=1154: policy cache-aware keeps these clearable results for now
	// request 12: 12045 tokens
	//   wait tokens=1154: policy cache-aware keeps these clearable results for now
	// request 13:  3719 tokens
	//   wait tokens=3542: policy cache-aware keeps these clearable results for now
	//   compact regions=1 tokens=11524: trigger hard: context 15243 tokens, 3719 after 1 summary
}
