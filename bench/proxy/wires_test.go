package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/pricing"
)

// TestWires replays the synthetic session through serve on every client's
// wire: every request valid, none over the window, serve's invariants
// after every request, and the session cut below none's peak.
func TestWires(t *testing.T) {
	for _, w := range Wires {
		t.Run(w, func(t *testing.T) {
			c := newChecker(12000)
			c.wire, c.lim.OpenAI = w, w == "chat"
			table := pricing.OpenAI()
			if w == "gemini" {
				table = pricing.Gemini()
			}
			runs := replayPriced(t, []bench.Session{{Name: "synthetic", Conv: synthetic()}}, 12000, table, bench.Strategies()[0], c.factory())
			none, srv := runs[0], runs[1]
			if srv.Invalid != 0 || srv.OverWindow != 0 {
				t.Errorf("%d requests the provider would refuse, %d over the window", srv.Invalid, srv.OverWindow)
			}
			if srv.Peak >= none.Peak {
				t.Errorf("serve's peak %d, none's %d: the proxy cut nothing", srv.Peak, none.Peak)
			}
			if c.checks != len(srv.Turns)+srv.Recalls {
				t.Errorf("checked %d requests, replayed %d turns and %d recalls", c.checks, len(srv.Turns), srv.Recalls)
			}
			t.Logf("none: $%.3f peak %d; serve: $%.3f peak %d, %d compactions, recall %.3f", none.Total.USD, none.Peak, srv.Total.USD, srv.Peak, srv.Compactions, srv.Recall)
			c.report(t)
		})
	}
}

// codexSessions are the corpus's Codex rollouts, as bench imports them.
func codexSessions(t *testing.T) []bench.Session {
	t.Helper()
	dir := corpus.Require(t)
	paths, _ := filepath.Glob(filepath.Join(dir, "codex", "*.jsonl"))
	if len(paths) == 0 {
		t.Skip("no Codex rollouts in the corpus")
	}
	return loadSessions(t, paths)
}

// loadSessions imports the session files at paths as bench replays them.
func loadSessions(t *testing.T, paths []string) []bench.Session {
	t.Helper()
	var ss []bench.Session
	for _, p := range paths {
		s, err := importer.Load(context.Background(), p, importer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, bench.Session{Name: filepath.Base(p), Conv: s.Conv, Family: s.Format})
	}
	return ss
}

// TestCodexRolloutsResponses replays the corpus's Codex rollouts as Codex
// CLI sends them (Responses API, encrypted reasoning sent back) through
// serve at 64k and 200k: no request over the window or refused, the
// invariants after every request.
//
// Slow (7–20 minutes on 2 shared cores): run with CTXKIT_BIG=1.
//
// A summary of the run it replaced opens the first message kept after
// it (servetest allows it). servetest counts the forwarded request as the
// proxy's engine does, encrypted reasoning at the output the stand-in
// reported for it (the recording's cost), not its ciphertext; every
// violation, a request over the hard limit included, fails, as do
// refused requests and requests over the window.
func TestCodexRolloutsResponses(t *testing.T) {
	if os.Getenv("CTXKIT_BIG") != "1" || testing.Short() {
		t.Skip("replays the corpus's Codex rollouts at two windows (minutes); set CTXKIT_BIG=1")
	}
	ss := codexSessions(t)
	for _, window := range []int{64_000, 200_000} {
		c := newChecker(window)
		runs := replayPriced(t, ss, window, pricing.OpenAI(), bench.Strategies()[0], c.factory())
		for i := 0; i < len(runs); i += 2 {
			none, srv := runs[i], runs[i+1]
			if srv.Invalid != 0 || srv.OverWindow != 0 {
				t.Errorf("%s at %d: %d requests refused, %d over the window", srv.Session, window, srv.Invalid, srv.OverWindow)
			}
			t.Logf("%s at %d: none $%.2f peak %d over %d; serve $%.2f peak %d, %d compactions, recall %.3f visible %.3f",
				srv.Session, window, none.Total.USD, none.Peak, none.OverWindow, srv.Total.USD, srv.Peak, srv.Compactions, srv.Recall, srv.VisibleRecall)
		}
		c.report(t)
	}
}

// TestCodexRolloutGemini replays a corpus Codex rollout as Gemini CLI
// would have sent it (--wire gemini: contents and parts, thoughts not sent
// back, signed calls) through serve's Gemini path at 64k, billed at
// Gemini's prices. CTXKIT_BIG=1.
func TestCodexRolloutGemini(t *testing.T) {
	if os.Getenv("CTXKIT_BIG") != "1" || testing.Short() {
		t.Skip("replays a corpus session (minutes); set CTXKIT_BIG=1")
	}
	ss := codexSessions(t)[:1]
	c := newChecker(64_000)
	c.wire = "gemini"
	runs := replayPriced(t, ss, 64_000, pricing.Gemini(), bench.Strategies()[0], c.factory())
	none, srv := runs[0], runs[1]
	if srv.Invalid != 0 || srv.OverWindow != 0 {
		t.Errorf("%d requests refused, %d over the window", srv.Invalid, srv.OverWindow)
	}
	t.Logf("%s at 64000 (gemini): none $%.2f peak %d over %d; serve $%.2f peak %d, %d compactions, recall %.3f visible %.3f",
		srv.Session, none.Total.USD, none.Peak, none.OverWindow, srv.Total.USD, srv.Peak, srv.Compactions, srv.Recall, srv.VisibleRecall)
	c.logKnown(t)
}

// TestClientFor: the wire follows the table, then the session's client;
// --wire forces one; an unknown wire is an error naming the known ones.
func TestClientFor(t *testing.T) {
	for _, tt := range []struct {
		wire, family string
		automatic    bool
		want         llmtest.API
	}{
		{"", "codex", true, llmtest.Responses},
		{"", "gemini", true, llmtest.Gemini},
		{"", "claude-code", true, llmtest.OpenAI},
		{"", "codex", false, llmtest.Anthropic},
		{"", "gemini", false, llmtest.Anthropic},
		{"gemini", "codex", true, llmtest.Gemini},
		{"responses", "claude-code", false, llmtest.Responses},
		{"chat", "codex", true, llmtest.OpenAI},
	} {
		c, err := clientFor(tt.wire, tt.family, tt.automatic)
		if err != nil || c.api() != tt.want {
			t.Errorf("clientFor(%q, %q, %v) = %v, %v; want %v", tt.wire, tt.family, tt.automatic, c, err, tt.want)
		}
	}
	if _, err := clientFor("grpc", "", true); err == nil || !strings.Contains(err.Error(), "responses") {
		t.Errorf("unknown wire: %v", err)
	}
}

// TestGeminiCLISessions replays the importer's Gemini CLI sessions at
// Gemini's prices: each goes as Gemini CLI sends it, on the Gemini API,
// valid and checked.
func TestGeminiCLISessions(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "importer", "testdata", "gemini", "session-*"))
	if len(paths) == 0 {
		t.Fatal("no Gemini CLI sessions in importer/testdata/gemini")
	}
	ss := loadSessions(t, paths)
	c := newChecker(8000)
	f := c.factory()
	var mu sync.Mutex
	var apis []llmtest.API
	inner := f.New
	f.New = func(e bench.Env) bench.Strategy {
		st := inner(e)
		mu.Lock()
		apis = append(apis, st.(*strategy).cl.api())
		mu.Unlock()
		return st
	}
	runs := replayPriced(t, ss, 8000, pricing.Gemini(), f)
	for _, r := range runs {
		if r.Invalid != 0 || r.OverWindow != 0 || len(r.Turns) == 0 {
			t.Errorf("%s: %d turns, %d refused, %d over the window", r.Session, len(r.Turns), r.Invalid, r.OverWindow)
		}
	}
	for _, a := range apis {
		if a != llmtest.Gemini {
			t.Errorf("a Gemini CLI session replayed on %v", a)
		}
	}
	c.report(t)
}
