package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// failing is a strategy that fails at its second step, or panics.
type failing struct {
	panics bool
	steps  int
}

func (f *failing) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	f.steps++
	if f.steps == 2 {
		if f.panics {
			panic("boom")
		}
		return nil, StepInfo{}, errors.New("summarize: nothing to summarize")
	}
	return nil, StepInfo{}, errors.New("unreachable in this test")
}

// TestReplayIsolatesFailures: one strategy's failure marks its run failed
// with the reason; every other strategy's figures are reported as before.
func TestReplayIsolatesFailures(t *testing.T) {
	rec := recording()
	none := Strategies()[0]
	opts := Options{
		Window: 1000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1,
		Strategies: []Factory{
			none,
			{Name: "broken", New: func(Env) Strategy { return &failing{steps: 1} }},
			{Name: "panicky", New: func(Env) Strategy { return &failing{steps: 1, panics: true} }},
		},
		Summarize: func(_ context.Context, msgs []conv.Message) (string, error) { return "summary", nil },
	}
	sessions := []Session{{Name: "tiny", Conv: rec}}
	runs, err := Replay(context.Background(), sessions, opts)
	if err != nil {
		t.Fatalf("Replay = %v; a strategy's failure must not end the run", err)
	}
	if len(runs) != 3 || runs[0].Failed != "" || len(runs[0].Turns) != 3 {
		t.Fatalf("runs = %+v", runs)
	}
	if !strings.Contains(runs[1].Failed, "nothing to summarize") || !strings.Contains(runs[2].Failed, "internal error: boom") {
		t.Errorf("failed runs: %q, %q", runs[1].Failed, runs[2].Failed)
	}
	rep := NewReport(runs, sessions, opts)
	if len(rep.Failures) != 2 || rep.Strategies[1].Failed != 1 || rep.Strategies[0].CostUSD == 0 {
		t.Errorf("report: failures %+v, strategies %+v", rep.Failures, rep.Strategies)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "FAILED: broken on tiny: message") || !strings.Contains(buf.String(), "broken (FAILED on 1)") {
		t.Errorf("table:\n%s", buf.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Replay(ctx, sessions, opts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Replay = %v, want context.Canceled", err)
	}
}
