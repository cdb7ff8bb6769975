package proxy

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestServeKeepValue: the bench's knob (Options.KeepValue, ctxkit bench
// --keep-value, ctxkit serve --keep-value) reaches the engine behind the
// serve row as it reaches the ctxkit row, so the setting a user picks off
// the frontier is what the proxy runs. On a recorded session (mini-swe-agent,
// 53 turns) that crosses a 32k window, a setting moves both rows off
// their default bills.
func TestServeKeepValue(t *testing.T) {
	dir := corpus.Require(t)
	s, err := importer.Load(context.Background(), filepath.Join(dir, "mini-swe-agent", "gemini3pro-sphinx-doc__sphinx-8459.traj.json"), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := bench.LookupIn("ctxkit,serve", append(bench.Strategies(), Serve()))
	if err != nil {
		t.Fatal(err)
	}
	run := func(v float64) (ctxkit, serve bench.Run) {
		runs, err := bench.Replay(context.Background(), []bench.Session{{Name: "sphinx-8459", Conv: s.Conv}}, bench.Options{
			Window: 32000, Pricing: pricing.Anthropic(), Counter: tokens.NewEstimator(),
			Strategies: fs, Summarize: extractive, KeepValue: v,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Failed != "" {
				t.Fatalf("%s at %v: %s", r.Strategy, v, r.Failed)
			}
		}
		return runs[0], runs[1]
	}
	c0, s0 := run(0)
	for _, v := range []float64{8} {
		c, s := run(v)
		t.Logf("keep value %v: ctxkit $%.4f (default $%.4f), serve $%.4f (default $%.4f)", v, c.Total.USD, c0.Total.USD, s.Total.USD, s0.Total.USD)
		if c.Total.USD == c0.Total.USD {
			t.Errorf("keep value %v: the ctxkit row costs what the default does", v)
		}
		if s.Total.USD == s0.Total.USD {
			t.Errorf("keep value %v: the serve row costs what the default does: the knob did not reach the proxy", v)
		}
	}
}
