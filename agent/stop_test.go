package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/summarize"
)

// failingSummarizer is a summarizer whose every call fails, as a model
// that answers 500 does, until it is fixed.
type failingSummarizer struct{ fixed *atomic.Bool }

func (f failingSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Output, error) {
	if f.fixed.Load() {
		return summarize.NewExtractive().Summarize(ctx, in)
	}
	return summarize.Output{}, errors.New("the summary model answered 500")
}

// TestStopSaidOnce (issue 26 row 4): once the circuit breaker has stopped
// model calls for automatic compaction, the requests after it go on,
// compacting offline where they must; the user is told once that it
// stopped, with no "compaction failed" for the compactions that went
// ahead, and once that it is back on after /compact.
func TestStopSaidOnce(t *testing.T) {
	var steps []step
	for range 6 {
		steps = append(steps, say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"cat notes/worker.log"}`))))
	}
	steps = append(steps, say(llmtest.Text("Done.")), say(llmtest.Text("Still here.")))
	var fixed atomic.Bool
	s := start(t, options{window: 16_000, cfg: func(c *agent.Config) {
		c.Summarizer = failingSummarizer{&fixed}
		c.Compact.MaxFailures = 1
		c.Compact.KeepRecentTurns = 1
		c.Micro.GuardTokens = micro.DefaultGuardTokens // the log whole, as in TestEndToEnd
	}}, steps...)
	ctx := context.Background()
	if _, err := s.agent.Run(ctx, "Show me the log, six times."); err != nil {
		t.Fatal(err)
	}
	if s.agent.CompactState().Stopped == nil {
		t.Fatal("the circuit breaker did not open; the test does not test what it says")
	}
	stops := 0
	for _, e := range s.eventsOf(agent.EventWarning) {
		var stopped *compact.StoppedError
		if errors.As(e.Err, &stopped) {
			stops++
		}
	}
	compacted := 0
	for _, e := range s.eventsOf(agent.EventCompactEnd) {
		if e.Err != nil {
			t.Errorf("a compaction reported as failed: %v", e.Err)
		}
		if e.Compact != nil && e.Compact.Compactions > 0 {
			compacted++
		}
	}
	if stops != 1 || compacted < 2 {
		t.Errorf("%d warnings that compaction stopped (want 1), %d compactions (want 2 or more)", stops, compacted)
	}
	fixed.Store(true)
	if _, err := s.agent.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	var back int
	for _, e := range s.eventsOf(agent.EventNote) {
		if strings.Contains(e.Text, "back on") {
			back++
		}
	}
	if back != 1 {
		t.Errorf("%d notes that automatic compaction is back on, want 1", back)
	}
	s.check(t)
}

// TestManualCompactReusesCache (issue 26 row 6): /compact between turns
// (the conversation ends with the model's answer) sends the summary
// request on the agent's cached prefix, as the compact tool does, not as
// a transcript in a request of its own.
func TestManualCompactReusesCache(t *testing.T) {
	var steps []step
	for range 3 {
		steps = append(steps,
			say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"cat notes/worker.log"}`))),
			say(llmtest.Text("Logged.")))
	}
	s := start(t, options{cfg: func(c *agent.Config) { c.Compact.KeepRecentTurns = 1 }}, steps...)
	ctx := context.Background()
	for _, p := range []string{"Show the log", "Again", "Once more"} {
		if _, err := s.agent.Run(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.agent.Compact(ctx, "")
	if err != nil || r.Compactions == 0 {
		t.Fatalf("compact: %+v %v", r, err)
	}
	var summaries, reused int
	for _, c := range s.srv.Calls() {
		if !isSummaryRequest(c) {
			continue
		}
		summaries++
		if len(c.Messages) > 1 && c.Usage.CacheRead > 0 {
			reused++
		}
	}
	if summaries == 0 || reused != summaries {
		t.Errorf("%d of %d summary requests read the agent's cached prefix", reused, summaries)
	}
	s.check(t)
}
