package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/serve"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// TestBenchProxy starts ctxkit serve pointing at the stand-in upstream
// bench --proxy runs, and measures it over HTTP: the same replay as the
// in-process serve strategy, so the same figures.
func TestBenchProxy(t *testing.T) {
	clearProviderEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := ln.Addr().String()
	ln.Close() // bench listens there itself
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const window = "20000"
	srv, err := serve.New(serve.Config{
		AnthropicUpstream: "http://" + upstream, OpenAIUpstream: "http://" + upstream + "/v1",
		Window: 20000, Store: st, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	out, errOut, err := runBench(t, "--proxy", hs.URL, "--proxy-store", filepath.Join(dir, "serve.db"), "--upstream", upstream, "--window", window, "--strategies", "none,serve,proxy", "--json")
	if err != nil {
		t.Fatalf("bench --proxy: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "stand-in upstream at http://"+upstream) {
		t.Errorf("stderr does not say where the stand-in listens:\n%s", errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	by := map[string]bench.StrategyReport{}
	for _, s := range rep.Strategies {
		by[s.Name] = s
	}
	in, over := by["serve"], by["proxy"]
	if over.Name == "" || over.Failed > 0 || over.CostUSD <= 0 {
		t.Fatalf("no proxy figures: %+v", rep.Strategies)
	}
	if over.CostUSD != in.CostUSD || over.EvidenceRecall != in.EvidenceRecall || over.PeakContextTokens != in.PeakContextTokens {
		t.Errorf("through the running proxy: $%.4f recall %.3f peak %d; in-process: $%.4f recall %.3f peak %d",
			over.CostUSD, over.EvidenceRecall, over.PeakContextTokens, in.CostUSD, in.EvidenceRecall, in.PeakContextTokens)
	}

	// A proxy that is not there is a clear error, before any replay.
	hs.Close()
	_, _, err = runBench(t, "--proxy", hs.URL, "--upstream", "127.0.0.1:0", "--strategies", "none,proxy")
	if err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("bench --proxy with no proxy: %v", err)
	}
}
