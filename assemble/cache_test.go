package assemble_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
	"github.com/ctxkit/ctxkit/health"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/wire"
)

// serverTokens counts the way the test server does, so anchor placement
// and the server's minimum cacheable length agree.
type serverTokens struct{}

func (serverTokens) Count(s string) int { return llmtest.Tokens(s) }

// script is what the fake model does in each round: the parallel calls of
// each step, then a closing text.
var script = [][]int{
	{1, 2},      // round 1: one call, then two in parallel
	{25, 25, 3}, // round 2: twice 25 parallel calls (beyond the 20-block lookback), then 3
	{},          // round 3: a plain answer
	{1, 1, 1},   // round 4: three steps
}

// run plays the script against the wire-faithful test server: every user
// message goes through Turn, every request through Build, the body is
// posted as the engine would send it, and the reply is appended. It
// returns the usage of every request and health's reports.
func run(t *testing.T, cfg assemble.Config, perturb func(req int, c *conv.Conversation)) ([]llm.Usage, []health.Report, health.Stats) {
	t.Helper()
	srv := llmtest.NewServer(t, llmtest.Config{})
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("- Run the tests before saying you are done.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Workspace, cfg.Dir, cfg.Model, cfg.MaxTokens, cfg.Counter = openRoot(t, ws), ws, "claude-sonnet-4-5", 4096, serverTokens{}
	b, err := assemble.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mon := health.New(health.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a careful coding agent.\n"+strings.Repeat("Follow the instructions exactly. ", 200))},
		Tools:  append([]conv.Tool(nil), convtest.Tools...),
	}
	c.Stamp(c.System)
	ctx := context.Background()
	var usages []llm.Usage
	var reports []health.Report
	n := 0
	send := func() conv.Message {
		t.Helper()
		n++
		if perturb != nil {
			perturb(n, c)
		}
		a, err := b.Build(c, []assemble.Todo{{Content: fmt.Sprintf("step %d", n), Status: "in_progress"}})
		if err != nil {
			t.Fatal(err)
		}
		body, err := wire.EncodeAnthropic(a.Request)
		if err != nil {
			t.Fatal(err)
		}
		hr, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %s", n, resp.StatusCode, out)
		}
		msg, err := wire.DecodeAnthropicMessage(out)
		if err != nil {
			t.Fatal(err)
		}
		u := srv.Last().Usage
		usages = append(usages, u)
		reports = append(reports, mon.Observe(ctx, a.Request, u, time.Now()))
		return msg
	}
	for r, steps := range script {
		var calls []llmtest.Reply
		for s, k := range steps {
			var tc []llmtest.ToolCall
			for i := range k {
				tc = append(tc, llmtest.Use("Read", fmt.Sprintf(`{"file_path":"r%d/s%d/f%d.go"}`, r, s, i)))
			}
			calls = append(calls, llmtest.Calls("", tc...))
		}
		srv.Enqueue(append(calls, llmtest.Text(fmt.Sprintf("round %d done", r)))...)
		in := assemble.Input{Text: fmt.Sprintf("task %d: please work on it", r)}
		for {
			if _, err := b.Turn(ctx, c, in); err != nil {
				t.Fatal(err)
			}
			reply := send()
			c.Append(reply)
			var results []conv.Block
			for _, bl := range reply.Blocks {
				if bl.Type == conv.TypeToolUse {
					results = append(results, conv.NewToolResult(bl.ToolUseID, bl.Name, strings.Repeat("content of "+string(bl.Input)+"\n", 20), false))
				}
			}
			if len(results) == 0 {
				break
			}
			in = assemble.Input{Results: results}
		}
	}
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatal(vs)
	}
	return usages, reports, mon.Stats()
}

// TestCacheAgainstServer: on a scripted session against the simulated
// prompt cache, every request after the first reads from the cache —
// including the one after a turn of 25 parallel calls, thanks to the
// lookback anchor — and health sees no thrash.
func TestCacheAgainstServer(t *testing.T) {
	usages, reports, stats := run(t, assemble.Config{}, nil)
	if len(usages) != 12 {
		t.Fatalf("%d requests, want 12", len(usages))
	}
	for i, u := range usages {
		if i == 0 {
			if u.CacheWrite == 0 {
				t.Errorf("request 1 wrote nothing: %+v", u)
			}
			continue
		}
		if u.CacheRead == 0 {
			t.Errorf("request %d read nothing from the cache: %+v", i+1, u)
		}
		// all but the newest turn's few blocks and the recap come from
		// or go to the cache
		if u.Input > 600 {
			t.Errorf("request %d sent %d uncached input tokens", i+1, u.Input)
		}
	}
	for _, r := range reports {
		if r.Thrash != nil || r.Turn.Miss {
			t.Errorf("turn %d: %+v", r.Turn.N, r)
		}
	}
	if stats.HitRate < 0.7 {
		t.Errorf("hit rate %.2f", stats.HitRate)
	}
	t.Logf("hit rate %.3f over %d requests, usage %+v", stats.HitRate, stats.Turns, stats.Usage)
}

// TestLookbackAnchorMatters is the control: told that the provider looks
// back 1000 blocks, Build places no lookback anchor, and the request after
// the 25 parallel calls reads far less.
func TestLookbackAnchorMatters(t *testing.T) {
	with, _, _ := run(t, assemble.Config{}, nil)
	without, _, _ := run(t, assemble.Config{Lookback: 1000}, nil)
	// The request answering the second 25 calls: the previous request
	// wrote at the first 25 results, 26 blocks back, and before that only
	// at the start of the round.
	const wide = 5
	if with[wide].CacheRead <= without[wide].CacheRead+1000 {
		t.Errorf("cache read after the wide turn: %d with the lookback anchor, %d without", with[wide].CacheRead, without[wide].CacheRead)
	}
	t.Logf("after the wide turn: read %d, wrote %d with the lookback anchor; read %d, wrote %d without",
		with[wide].CacheRead, with[wide].CacheWrite, without[wide].CacheRead, without[wide].CacheWrite)
}

// TestThrashAgainstServer: a system prompt with a clock in it defeats the
// cache, and health names the system prompt.
func TestThrashAgainstServer(t *testing.T) {
	_, reports, stats := run(t, assemble.Config{}, func(req int, c *conv.Conversation) {
		c.System[0].SetText(fmt.Sprintf("Time: 12:%02d\n%s", req, strings.Repeat("Follow the instructions exactly. ", 200)), conv.RungFull)
	})
	var th *health.Thrash
	for _, r := range reports {
		if r.Thrash != nil && th == nil {
			th = r.Thrash
		}
	}
	if th == nil || th.Change == nil || th.Change.Layer != health.LayerSystem || th.Change.Index != 0 {
		t.Fatalf("thrash %+v (stats %+v)", th, stats)
	}
	if stats.Thrashes < 2 || stats.HitRate > 0.01 {
		t.Errorf("stats %+v", stats)
	}
}

// openRoot opens dir as the workspace, the way the agent does.
func openRoot(t *testing.T, dir string) assemble.Workspace {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.FS().(assemble.Workspace)
}
