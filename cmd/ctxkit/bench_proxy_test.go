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
	for _, tt := range []struct{ wire, pricing string }{
		{"", "anthropic"},       // Claude Code on Messages
		{"responses", "openai"}, // Codex CLI on the Responses API
		{"gemini", "gemini"},    // Gemini CLI on the Gemini API
	} {
		t.Run(tt.pricing+"/"+tt.wire, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			upstream := ln.Addr().String()
			ln.Close() // bench listens there itself
			dbPath := filepath.Join(t.TempDir(), "serve.db")
			st, err := sqlite.Open(context.Background(), dbPath)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			const window = "20000"
			srv, err := serve.New(serve.Config{
				AnthropicUpstream: "http://" + upstream, OpenAIUpstream: "http://" + upstream + "/v1", GeminiUpstream: "http://" + upstream,
				Window: 20000, Store: st, Logger: slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()

			args := []string{"--proxy", hs.URL, "--proxy-store", dbPath, "--upstream", upstream, "--window", window, "--pricing", tt.pricing, "--strategies", "none,serve,proxy", "--json"}
			if tt.wire != "" {
				args = append(args, "--wire", tt.wire)
			}
			out, errOut, err := runBench(t, args...)
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
			if over.Name == "" || over.Failed > 0 || over.CostUSD <= 0 || over.InvalidRequests > 0 {
				t.Fatalf("no proxy figures: %+v", rep.Strategies)
			}
			if over.CostUSD != in.CostUSD || over.EvidenceRecall != in.EvidenceRecall || over.PeakContextTokens != in.PeakContextTokens {
				t.Errorf("through the running proxy: $%.4f recall %.3f peak %d; in-process: $%.4f recall %.3f peak %d",
					over.CostUSD, over.EvidenceRecall, over.PeakContextTokens, in.CostUSD, in.EvidenceRecall, in.PeakContextTokens)
			}
		})
	}

	// A proxy that is not there is a clear error, before any replay; so is
	// a wire the bench does not speak.
	_, _, err := runBench(t, "--proxy", "http://127.0.0.1:1", "--upstream", "127.0.0.1:0", "--strategies", "none,proxy")
	if err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("bench --proxy with no proxy: %v", err)
	}
	_, _, err = runBench(t, "--wire", "grpc", "--strategies", "none,serve")
	if err == nil || !strings.Contains(err.Error(), "--wire \"grpc\": want one of anthropic, chat, responses, gemini") {
		t.Errorf("bench --wire grpc: %v", err)
	}
}
