package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/transcript"
)

// TestEndToEnd runs a multi-step coding task through each provider's test
// server: the agent plans, lists, greps, reads, runs shell commands, hits
// the compaction threshold of a small window mid-task, edits the file
// after the compaction, checks it with gofmt, and recalls a cleared
// result. The files on disk, the transcript and the requests are checked;
// the server fails the test if it rejected any request.
func TestEndToEnd(t *testing.T) {
	for _, api := range []llmtest.API{llmtest.Anthropic, llmtest.OpenAI} {
		t.Run(api.String(), func(t *testing.T) { endToEnd(t, api) })
	}
}

func endToEnd(t *testing.T, api llmtest.API) {
	var (
		recalled     string // the recall id the model used
		recallWant   string
		afterSummary bool // a request after the compaction carried the summary
		s            *setup
	)
	steps := []step{
		say(llmtest.Calls("I'll plan the work and look at the repository.",
			llmtest.Use("TodoWrite", `{"todos":[{"content":"Find the bug in Add","status":"in_progress","activeForm":"Finding the bug"},{"content":"Fix Add and run gofmt","status":"pending"},{"content":"Report what the log says about job 42","status":"pending"}]}`),
			llmtest.Use("LS", `{"path":".","depth":2}`))),
		func(c *llmtest.Call) llmtest.Reply {
			rs := lastResults(c)
			if len(rs) != 2 || !strings.Contains(rs[1].ResultText(), "calc/") {
				t.Errorf("LS result missing or wrong: %v", rs)
			}
			// Two read-only calls in one response run together; their
			// results come back in one message, in order.
			return llmtest.Calls("", llmtest.Use("Grep", `{"pattern":"func Add","path":"."}`), llmtest.Use("Read", `{"file_path":"README.md"}`))
		},
		func(c *llmtest.Call) llmtest.Reply {
			rs := lastResults(c)
			if len(rs) != 2 || !strings.Contains(rs[0].ResultText(), "calc/calc.go:5:func Add") || !strings.Contains(rs[1].ResultText(), "billing service") {
				t.Errorf("Grep and Read results wrong: %v", rs)
			}
			return llmtest.Calls("Grep found Add at calc/calc.go:5. Reading the file.", llmtest.Use("Read", `{"file_path":"calc/calc.go"}`))
		},
		say(llmtest.Calls("The bug: Add returns a - b. Before fixing it, the log.", llmtest.Use("Bash", `{"command":"cat notes/worker.log","description":"Show the worker log"}`))),
		func(c *llmtest.Call) llmtest.Reply {
			rs := lastResults(c)
			if len(rs) != 1 || !strings.Contains(rs[0].ResultText(), "processed job 300 ") {
				t.Errorf("the Bash result is not whole within its round: %q", clip(rs[0].ResultText()))
			}
			return llmtest.Calls("", llmtest.Use("Bash", `{"command":"grep -n 'job 42 ' notes/worker.log"}`))
		},
		func(c *llmtest.Call) llmtest.Reply {
			if hasSummary(c) {
				afterSummary = true
			}
			return llmtest.Calls("Line 42 says job 42 needed a retry. Now the fix.",
				llmtest.Use("Edit", `{"file_path":"calc/calc.go","old_string":"return a - b","new_string":"return a + b"}`))
		},
		func(c *llmtest.Call) llmtest.Reply {
			if rs := lastResults(c); len(rs) != 1 || rs[0].IsError {
				t.Errorf("Edit failed: %v", rs)
			}
			return llmtest.Calls("", llmtest.Use("Bash", `{"command":"gofmt -l calc; grep -c 'return a + b' calc/calc.go"}`))
		},
		func(c *llmtest.Call) llmtest.Reply {
			rs := lastResults(c)
			if len(rs) != 1 || strings.TrimSpace(rs[0].ResultText()) != "1" {
				t.Errorf("check after the edit: %v", rs)
			}
			return llmtest.Calls("The fix is in. Checking the test file and the other callers.",
				llmtest.Use("Read", `{"file_path":"calc/calc_test.go"}`), llmtest.Use("Grep", `{"pattern":"Scale0[1-3]\\(","path":"calc"}`))
		},
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"git diff --stat"}`))),
		func(c *llmtest.Call) llmtest.Reply {
			if rs := lastResults(c); len(rs) != 1 || !strings.Contains(rs[0].ResultText(), "1 file changed") {
				t.Errorf("git diff: %v", rs)
			}
			if hasSummary(c) {
				afterSummary = true
			}
			cleared, anyIDs := recallIDs(c)
			t.Logf("visible recall ids: cleared %v, any %v", cleared, anyIDs)
			// A placeholder names its recall id; so does a summary's recall
			// index for each result it took out of the context.
			ids := append(cleared, anyIDs...)
			if len(ids) == 0 {
				t.Errorf("no recall id visible in request %d", c.N)
				return llmtest.Text("nothing to recall")
			}
			recalled = ids[0]
			b, err := s.store.Recall(recalled)
			if err != nil {
				t.Errorf("recall %s: %v", recalled, err)
			}
			recallWant = b.ResultText()
			return llmtest.Calls("Let me read that earlier output again.", llmtest.Use("recall", fmt.Sprintf(`{"id":%q}`, recalled)))
		},
		func(c *llmtest.Call) llmtest.Reply {
			rs := lastResults(c)
			if len(rs) != 1 || rs[0].IsError || rs[0].ResultText() != recallWant {
				t.Errorf("recall %s gave %q, want the original %q", recalled, clip(rs[0].ResultText()), clip(recallWant))
			}
			return llmtest.Text("Fixed: Add in calc/calc.go now returns a + b; gofmt reports nothing. The log shows job 42 finished with status=retry.")
		},
	}
	// The log is read whole: the guard at its most, not a quarter of
	// this small window, so the task crosses the compaction threshold.
	o := options{api: api, window: 24_000, cfg: func(c *agent.Config) { c.Micro.GuardTokens = micro.DefaultGuardTokens }}
	s = start(t, o, steps...)
	res, err := s.agent.Run(context.Background(), "The Add function in calc returns wrong results. Find the bug, fix it, check the formatting, and tell me what notes/worker.log says about job 42.")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rs := s.srv.Rejected(); len(rs) > 0 {
		t.Errorf("the server rejected %d requests: %v", len(rs), rs)
	}
	if left := s.model.left(); left != 0 {
		t.Errorf("%d scripted steps were not used", left)
	}
	if !strings.Contains(res.Text, "returns a + b") {
		t.Errorf("final text %q", res.Text)
	}
	got := readFile(t, s.ws+"/calc/calc.go")
	if !strings.Contains(got, "\treturn a + b\n") || strings.Contains(got, "return a - b") {
		t.Errorf("calc.go was not fixed:\n%s", clip(got))
	}
	st := s.agent.Stats()
	t.Logf("turns %d, usage %+v, compactions %d, compressed %d, cleared %d, summaries asked %d, hit rate %.2f",
		st.Turns, st.Usage, st.Compactions, st.Compressed, st.Cleared, s.model.summaries, st.CacheHitRate)
	if st.Compactions == 0 || res.Compactions == 0 {
		t.Errorf("the task never crossed the compaction threshold")
	}
	if !afterSummary {
		t.Errorf("no request after the compaction carried the summary")
	}
	if s.model.summaries == 0 {
		t.Errorf("the LLM summarizer was never asked")
	}
	if res.Turns != len(steps) || st.Turns != len(steps) {
		t.Errorf("turns: run %d, stats %d, want %d", res.Turns, st.Turns, len(steps))
	}
	if res.Usage.Input == 0 || res.Usage.Output == 0 {
		t.Errorf("usage not accounted: %+v", res.Usage)
	}
	if api == llmtest.Anthropic && res.Usage.CacheRead == 0 {
		t.Errorf("no cache reads at all: %+v", res.Usage)
	}
	if len(s.eventsOf(agent.EventCompactStart)) == 0 || len(s.eventsOf(agent.EventCompactEnd)) == 0 {
		t.Errorf("no compaction events")
	}
	if len(s.eventsOf(agent.EventToolStart)) != 13 {
		t.Errorf("%d tool start events, want 13", len(s.eventsOf(agent.EventToolStart)))
	}
	s.check(t)
	if testing.Verbose() {
		dump(t, s.agent.Conversation())
	}

	// The round is over. With a prompt cache its results enter history
	// compressed only once that pays back the rewrite within the horizon
	// (engine.RoundEnded, do no harm): eleven requests in, it does not, so
	// they stay whole — and every one is still a valid block.
	c := s.agent.Conversation()
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeToolResult && b.Meta.Rung == conv.RungFull && b.ResultText() == "" && !b.IsError {
				t.Errorf("result %s (%s) lost its text", b.ID, b.Name)
			}
		}
	}

	// Resume: the session reopens exactly as it stopped and goes on.
	s.model.mu.Lock()
	s.model.steps = append(s.model.steps, func(c *llmtest.Call) llmtest.Reply {
		// The user's words end the request (a compaction on resume may
		// put a summary before them in the same message).
		if last := c.Messages[len(c.Messages)-1].Blocks; !strings.HasSuffix(last[len(last)-1].Text, "Thanks. Anything else?") {
			t.Errorf("resumed request ends with %v", last)
		}
		return llmtest.Text("No, that's all.")
	})
	s.model.mu.Unlock()
	before := s.agent.Conversation()
	s.reopen(t, o)
	after := s.agent.Conversation()
	if len(before.Messages) != len(after.Messages) || before.Seq != after.Seq {
		t.Fatalf("resumed with %d messages (seq %d), had %d (seq %d)", len(after.Messages), after.Seq, len(before.Messages), before.Seq)
	}
	if _, err := s.agent.Run(context.Background(), "Thanks. Anything else?"); err != nil {
		t.Fatal(err)
	}
	s.check(t)
	if _, err := transcript.OpenReadOnly(s.dir); err != nil {
		t.Fatal(err)
	}
}

// hasSummary reports whether a request carries a compaction summary.
func hasSummary(c *llmtest.Call) bool {
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeSummary || b.Type == conv.TypeText && strings.Contains(b.Text, "Summary of turns") {
				return true
			}
		}
	}
	return false
}

func dump(t *testing.T, c *conv.Conversation) {
	for i, m := range c.Messages {
		for _, b := range m.Blocks {
			t.Logf("%d %s turn %d %s %s rung %d: %q", i, m.Role, m.Turn, b.ID, b.Type, b.Meta.Rung, clip(b.PlainText()))
		}
	}
}
