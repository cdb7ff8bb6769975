package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/serve/servetest"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

func extractive(ctx context.Context, msgs []conv.Message) (string, error) {
	out, err := summarize.NewExtractive().Summarize(ctx, summarize.Input{Messages: msgs})
	return out.Text, err
}

// synthetic is a session that crosses a small window several times: a
// task with a large paste, then rounds of tool calls with results of
// every size, a user message now and then.
func synthetic() *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent. Use the tools.")},
		Tools:  []conv.Tool{{Name: "Bash", Description: "run a command", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
	}
	var paste strings.Builder
	for i := range 150 {
		fmt.Fprintf(&paste, "line %d of the pasted file: func handler%d() error { return errNotFound%d }\n", i, i, i)
	}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Fix the failing handlers in this file:\n"+paste.String())}})
	for r := range 16 {
		id := fmt.Sprintf("toolu_%03d", r)
		in, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("go test ./pkg%d/...", r)})
		c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewText(conv.SourceAssistant, fmt.Sprintf("Running the tests of pkg%d.", r)),
			conv.NewToolUse(id, "Bash", in)}})
		var out strings.Builder
		for i := range 10 + (r%5)*20 {
			fmt.Fprintf(&out, "--- FAIL: TestHandler%d_%d (0.0%ds) pkg%d/handler_test.go:%d: want nil, got errNotFound%d\n", r, i, i%10, r, 100+i, i)
		}
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "Bash", out.String(), r%7 == 3)}})
		if r%10 == 9 {
			c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, fmt.Sprintf("pkg%d: errNotFound%d is returned by handler%d.", r, r, r))}})
			c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, fmt.Sprintf("Good. Now look at pkg%d and keep errNotFound%d as it is.", r+1, r))}})
		}
	}
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "All handlers fixed.")}})
	return c
}

// checker is the invariant checker run after every upstream request of
// the serve strategy.
type checker struct {
	wire       string // the wire forced, "" for each session's own
	lim        servetest.Limits
	mu         sync.Mutex
	checks     int
	violations []string
}

// newChecker checks against the hard limit of the budget the proxy works
// with: the window, and the client's max_tokens as the output reserve.
func newChecker(window int) *checker {
	budget := compact.Config{Window: window, MaxOutput: MaxTokens(window)}.Budget()
	return &checker{lim: servetest.Limits{Window: window, Limit: budget.Limit, Counter: tokens.NewEstimator()}}
}

// factory is the serve strategy with the checker after every request.
func (c *checker) factory() bench.Factory {
	f := ServeWire(c.wire)
	f.New = func(e bench.Env) bench.Strategy {
		s := newServe(e, c.wire).(*strategy)
		n := 0
		lim := c.lim
		lim.Sealed = func(data string) (int, bool) {
			// What the stand-in reported for it (the recording's cost),
			// as the proxy's engine counts it.
			tok, ok := s.reasoning[data]
			return tok, ok
		}
		s.check = func(client, upstream []byte) {
			n++
			ed, err := servetest.Check(client, upstream, lim)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.checks++
			if err != nil {
				c.violations = append(c.violations, fmt.Sprintf("request %d (%d tokens upstream): %v", n, ed.Tokens, err))
			}
		}
		return s
	}
	return f
}

// report fails t with every violation.
func (c *checker) report(t *testing.T) {
	t.Helper()
	if c.checks == 0 {
		t.Fatal("no request checked")
	}
	for _, v := range c.violations {
		t.Error(v)
	}
}

func replay(t *testing.T, sessions []bench.Session, window int, fs ...bench.Factory) []bench.Run {
	t.Helper()
	return replayPriced(t, sessions, window, pricing.Anthropic(), fs...)
}

func replayPriced(t *testing.T, sessions []bench.Session, window int, table pricing.Table, fs ...bench.Factory) []bench.Run {
	t.Helper()
	runs, err := bench.Replay(context.Background(), sessions, bench.Options{
		Window: window, Pricing: table, Counter: tokens.NewEstimator(),
		Strategies: fs, Summarize: extractive,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Failed != "" {
			t.Fatalf("%s on %s failed: %s", r.Strategy, r.Session, r.Failed)
		}
	}
	return runs
}

// TestInvariantsSynthetic replays a session built to cross a small window
// through ctxkit serve's handler and checks every upstream request.
func TestInvariantsSynthetic(t *testing.T) {
	for _, window := range []int{8000, 12000, 20000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			c := newChecker(window)
			runs := replay(t, []bench.Session{{Name: "synthetic", Conv: synthetic()}}, window, c.factory())
			if c.checks != len(runs[0].Turns)+runs[0].Recalls {
				t.Errorf("checked %d requests, replayed %d turns and %d recalls", c.checks, len(runs[0].Turns), runs[0].Recalls)
			}
			c.report(t)
		})
	}
}

// TestInvariantsCorpus does the same with a recorded session (OpenHands,
// 23 turns) at a window it crosses several times.
func TestInvariantsCorpus(t *testing.T) {
	dir := corpus.Require(t)
	s, err := importer.Load(context.Background(), filepath.Join(dir, "openhands", "multiswebench-ponylang__ponyc-4595.jsonl"), importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newChecker(16000)
	replay(t, []bench.Session{{Name: "ponyc-4595", Conv: s.Conv}}, 16000, c.factory())
	c.report(t)
}

// TestServeMeasured replays the synthetic session with none and serve, as
// an Anthropic client and as an OpenAI chat completions client: serve's
// figures come from what went upstream, summaries billed.
func TestServeMeasured(t *testing.T) {
	for _, table := range []pricing.Table{pricing.Anthropic(), pricing.OpenAI()} {
		t.Run(table.Name, func(t *testing.T) {
			runs := replayPriced(t, []bench.Session{{Name: "synthetic", Conv: synthetic()}}, 12000, table, bench.Strategies()[0], Serve())
			none, srv := runs[0], runs[1]
			if srv.Peak >= none.Peak {
				t.Errorf("serve's peak %d, none's %d: the proxy cut nothing", srv.Peak, none.Peak)
			}
			if srv.Compactions == 0 || srv.SummaryCost <= 0 {
				t.Errorf("%d compactions billed $%f", srv.Compactions, srv.SummaryCost)
			}
			if srv.Invalid != 0 {
				t.Errorf("%d requests the provider would refuse", srv.Invalid)
			}
			if srv.Total.CacheRead == 0 {
				t.Error("no cache read: the client's anchors (or the provider's prefix cache) were lost")
			}
			t.Logf("none: $%.3f peak %d; serve: $%.3f peak %d, %d compactions, recall %.3f", none.Total.USD, none.Peak, srv.Total.USD, srv.Peak, srv.Compactions, srv.Recall)
		})
	}
}

// logKnown logs the violations found, for the runs whose known gaps are
// documented at the test; a check that could not run still fails.
func (c *checker) logKnown(t *testing.T) {
	t.Helper()
	if c.checks == 0 {
		t.Fatal("no request checked")
	}
	for _, v := range c.violations {
		if !strings.Contains(v, "servetest:") {
			t.Error(v)
			continue
		}
		t.Log(v)
	}
	t.Logf("%d of %d requests broke an invariant (known gaps)", len(c.violations), c.checks)
}
