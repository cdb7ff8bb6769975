package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/summarize"
)

const (
	agentModel   = "claude-sonnet-4-5"
	summaryModel = "claude-haiku-4-5"
)

// provider is the real Anthropic adapter pointed at a test server, with
// quick retries.
func provider(t *testing.T, srv *llmtest.Server, model string) llm.Provider {
	t.Helper()
	t.Setenv(anthropic.KeyEnv, "test-key")
	p, err := anthropic.New(model, anthropic.WithBaseURL(srv.BaseURL(llmtest.Anthropic)), anthropic.WithRetry(llm.Retry{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}), anthropic.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var ephemeral = json.RawMessage(`{"type":"ephemeral"}`)

// assemble stands in for the assembly step: the conversation as a request
// with cache anchors at the end of the system prompt, on the last tool, and
// on the last block of the message before the newest user message.
func assemble(c *conv.Conversation) (*llm.Request, error) {
	req := &llm.Request{Model: agentModel, MaxTokens: 4096}
	sys := conv.NewText(conv.SourceSystem, "You are a careful coding agent working in a Go repository. "+strings.Repeat("Follow the project's rules. ", 40))
	sys.CacheControl = ephemeral
	req.System = []conv.Block{sys}
	req.Tools = []conv.Tool{
		{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Name: "Edit", Description: "Edit a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"}}}`), CacheControl: ephemeral},
	}
	for _, m := range c.Messages {
		m.Blocks = append([]conv.Block(nil), m.Blocks...)
		req.Messages = append(req.Messages, m)
	}
	if n := len(req.Messages); n >= 2 {
		m := &req.Messages[n-2]
		last := m.Blocks[len(m.Blocks)-1].Clone()
		last.CacheControl = ephemeral
		m.Blocks[len(m.Blocks)-1] = last
	}
	return req, nil
}

// reusingLadder is a round-mode ladder on the test config whose model
// summarizer, behind srv, reuses the agent's prompt (assemble).
func reusingLadder(t *testing.T, srv *llmtest.Server) *Ladder {
	t.Helper()
	s := summarize.NewLLM(provider(t, srv, summaryModel), summaryModel, summarize.LLMOptions{})
	cfg := testConfig()
	cfg.Mode = ModeRound
	cfg.Prefix = assemble
	return New(s, cfg)
}

// TestCacheReusingCompaction: the compaction request reuses the agent's
// prefix, and the test server's simulated cache reports it as a read.
func TestCacheReusingCompaction(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	agent := provider(t, srv, agentModel)
	c := session(6, 2, 400)
	withRequest(c, "Round 7: keep going.")
	ctx := context.Background()

	// The agent's last request, which wrote the cache.
	req, _ := assemble(c)
	srv.Enqueue(llmtest.Text("ok"))
	if _, err := agent.Stream(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	first := srv.Last()
	if first.Usage.CacheWrite == 0 {
		t.Fatalf("the agent request wrote no cache: %+v", first.Usage)
	}

	srv.Enqueue(llmtest.Text("<analysis>going through it</analysis>\n<summary>\n## Task and intent\nRefactor modules 1-6.\n## Artifact trail\n- `src/r1_s0.go` — edited\n</summary>"))
	cp := reusingLadder(t, srv)
	k := newKeeper()
	k.record(c)
	res, err := cp.Compact(ctx, c, k, "")
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, c)
	call := srv.Last()
	if call.N != 2 || call.Model != agentModel || len(call.Tools) != 2 {
		t.Fatalf("compaction request: model %q tools %v (n=%d)", call.Model, call.Tools, call.N)
	}
	if call.Usage.CacheRead == 0 || call.Usage.CacheRead < first.Usage.CacheWrite*9/10 {
		t.Errorf("compaction request read %d tokens from the cache; the agent request wrote %d", call.Usage.CacheRead, first.Usage.CacheWrite)
	}
	if res.Usage.CacheRead != call.Usage.CacheRead || len(res.Summaries) == 0 || !res.Summaries[0].CacheReuse {
		t.Errorf("result %+v does not report the cache reuse", res)
	}
	t.Logf("agent request: write %d; compaction request: read %d, write %d, input %d", first.Usage.CacheWrite, call.Usage.CacheRead, call.Usage.CacheWrite, call.Usage.Input)
	if got := summaries(c); len(got) == 0 || strings.Contains(got[0].Text, "<analysis>") || !strings.Contains(got[0].Text, "Refactor modules 1-6.") {
		t.Errorf("summary text: %+v", got)
	}
}

func TestLLMFaults(t *testing.T) {
	summary := "<summary>\n## Task and intent\nrefactor\n</summary>"
	for name, tt := range map[string]struct {
		replies  []llmtest.Reply
		window   int
		wantKind string
		reason   string
		notes    bool
		// fitted: the transcript fits the window, the max_tokens asked
		// does not; the retry asks for the room left, dropping nothing.
		fitted  bool
		timeout time.Duration // default 30 s: only the timeout case races the clock
	}{
		"timeout": {
			replies:  []llmtest.Reply{llmtest.Fail(llmtest.Fault{Kind: llmtest.Slow, Delay: 2 * time.Second})},
			wantKind: "extractive",
			reason:   "timed out",
			timeout:  300 * time.Millisecond,
		},
		"error after retries": {
			replies:  []llmtest.Reply{llmtest.Fail(llmtest.Fault{Kind: llmtest.ServerError}), llmtest.Fail(llmtest.Fault{Kind: llmtest.ServerError}), llmtest.Fail(llmtest.Fault{Kind: llmtest.Overloaded}), llmtest.Fail(llmtest.Fault{Kind: llmtest.Overloaded})},
			wantKind: "extractive",
			reason:   "unavailable",
		},
		"auth": {
			replies:  []llmtest.Reply{llmtest.Fail(llmtest.Fault{Kind: llmtest.Unauthorized})},
			wantKind: "extractive",
			reason:   "authentication",
		},
		"tool call instead of text": {
			replies:  []llmtest.Reply{llmtest.Calls("", llmtest.Use("Bash", `{"command":"ls"}`))},
			wantKind: "extractive",
			reason:   "tool",
		},
		"stream cut then ok": {
			replies:  []llmtest.Reply{llmtest.Fail(llmtest.Fault{Kind: llmtest.CutStream, Events: 1}), llmtest.Text(summary)},
			wantKind: "llm",
		},
		// The summary request itself is too long for the summary model's
		// window: the oldest rounds are dropped, with a marker, and it
		// retries.
		"summary request too long": {
			replies:  []llmtest.Reply{llmtest.Text(summary)},
			window:   3_500,
			wantKind: "llm",
			notes:    true,
		},
		"summary answer too long for the window": {
			replies:  []llmtest.Reply{llmtest.Text(summary)},
			window:   16_000,
			wantKind: "llm",
			fitted:   true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Config{Window: tt.window})
			srv.Enqueue(tt.replies...)
			c := session(6, 2, 400)
			withRequest(c, "go on")
			k := newKeeper()
			k.record(c)
			cfg := testConfig()
			cfg.Mode = ModeRound
			cfg.Timeout = 30 * time.Second
			if tt.timeout > 0 {
				cfg.Timeout = tt.timeout
			}
			cp := New(summarize.NewLLM(provider(t, srv, summaryModel), summaryModel, summarize.LLMOptions{}), cfg)
			res, err := cp.Before(context.Background(), c, k)
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, c)
			if len(res.Summaries) == 0 || res.Summaries[0].Kind != tt.wantKind {
				t.Fatalf("summaries %+v fallbacks %+v, want kind %s", res.Summaries, res.Fallbacks, tt.wantKind)
			}
			if tt.reason != "" && (len(res.Fallbacks) == 0 || !strings.Contains(strings.ToLower(res.Fallbacks[0].Reason), tt.reason)) {
				t.Errorf("fallbacks %+v, want a reason with %q", res.Fallbacks, tt.reason)
			}
			if tt.notes {
				var sawMarker bool
				for _, call := range srv.Calls() {
					for _, m := range call.Messages {
						for _, b := range m.Blocks {
							if strings.Contains(b.Text, summarize.TruncationMarker) {
								sawMarker = true
							}
						}
					}
				}
				if !sawMarker {
					t.Error("no retry carried the truncation marker")
				}
				srv.TakeRejected()
			}
			if tt.fitted {
				calls := srv.Calls()
				if len(calls) != 2 || calls[0].Status != 400 || !strings.Contains(calls[0].Error, "exceed context limit") {
					for _, c := range calls {
						t.Logf("call %d: status %d prompt %d max_tokens %d %s", c.N, c.Status, c.Prompt, c.MaxTokens, c.Error)
					}
					t.Fatalf("%d calls, want one refused for its max_tokens, then one more", len(calls))
				}
				if c := calls[1]; c.Status != 200 || c.Prompt != calls[0].Prompt || c.Prompt+c.MaxTokens > tt.window {
					t.Errorf("the retry: status %d, prompt %d (refused: %d), max_tokens %d, window %d", c.Status, c.Prompt, calls[0].Prompt, c.MaxTokens, tt.window)
				}
			}
		})
	}
}

// TestLLMCircuitBreaker: a summarizer that keeps failing on the test
// server stops automatic compaction after three compactions.
func TestLLMCircuitBreaker(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Handle(func(*llmtest.Call) llmtest.Reply { return llmtest.Fail(llmtest.Fault{Kind: llmtest.ServerError}) })
	cfg := testConfig()
	cfg.ThrashRepeats = -1
	cp := New(summarize.NewLLM(provider(t, srv, summaryModel), summaryModel, summarize.LLMOptions{}), cfg)
	k := newKeeper()
	b := newBuilder()
	var err error
	for r := 1; r <= 30 && err == nil && cp.State().Stopped == nil; r++ {
		if r > 1 {
			b.say("done")
		}
		b.user(fmt.Sprintf("Round %d", r))
		b.steps(r, 2, 500)
		k.record(b.c)
		_, err = cp.Before(context.Background(), b.c, k)
		mustCheck(t, b.c)
	}
	if !errors.Is(cp.State().Stopped, ErrCircuitOpen) {
		t.Fatalf("state %+v, err %v", cp.State(), err)
	}
	n := len(srv.Calls())
	for range 5 {
		b.steps(50, 2, 800)
		k.record(b.c)
		if _, err := cp.Before(context.Background(), b.c, k); err != nil {
			if !errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("err = %v", err)
			}
			break
		}
	}
	if len(srv.Calls()) != n {
		t.Errorf("%d summary requests after the breaker opened", len(srv.Calls())-n)
	}
}

// TestRoundCutTwiceOneCall: a single round compacted again and again, with
// the model summarizer reusing the agent's prompt. Each compaction after
// the first folds the round's earlier summary into its own in its one
// request: no merge request follows, and the one summary left covers the
// round from its first turn.
func TestRoundCutTwiceOneCall(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	n := 0
	srv.Handle(func(*llmtest.Call) llmtest.Reply {
		n++
		return llmtest.Text(fmt.Sprintf("<summary>\n## Task and intent\n- cut %d\n## Artifact trail\n- `src/r1_s0.go` — edited\n</summary>", n))
	})
	cp := reusingLadder(t, srv)
	b := newBuilder()
	b.user("Fix issue 1458: the reader must never drop private tags.")
	k := newKeeper()
	compactions := 0
	for i := 0; i < 60 && compactions < 3; i++ {
		b.steps(1, 1, 350)
		k.record(b.c)
		before := len(srv.Calls())
		res, err := cp.Before(context.Background(), b.c, k)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		mustCheck(t, b.c)
		if res.Compactions == 0 {
			continue
		}
		compactions++
		if got := len(srv.Calls()) - before; got != 1 {
			t.Errorf("compaction %d made %d requests, want 1", compactions, got)
		}
		if compactions > 1 {
			if !strings.Contains(string(srv.Last().Body), "an earlier summary") {
				t.Errorf("compaction %d's request does not name the earlier summary it replaces", compactions)
			}
		}
	}
	if compactions < 2 {
		t.Fatalf("%d compactions: the round was not cut twice", compactions)
	}
	ss := summaries(b.c)
	if len(ss) != 1 || !ss[0].Merged || ss[0].Span.First != 1 || !strings.Contains(ss[0].Text, "folding in the earlier summary") {
		t.Fatalf("want one summary folding the earlier ones from turn 1, got %+v", ss)
	}
}
