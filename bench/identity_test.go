package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
	"github.com/ctxkit/ctxkit/wire"
)

// recordingProvider passes requests to the real provider and keeps every
// request the agent sent with the usage that came back.
type recordingProvider struct {
	p     agent.Provider
	mu    sync.Mutex
	reqs  [][]byte // the requests sent, model and max_tokens left out
	usage []llm.Usage
}

func (r *recordingProvider) Stream(ctx context.Context, req *llm.Request, on func(llm.Event)) (*llm.Response, error) {
	bare := *req
	bare.Model, bare.MaxTokens = "", 0
	data, err := wire.EncodeAnthropic(&bare)
	if err != nil {
		return nil, err
	}
	resp, err := r.p.Stream(ctx, req, on)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.reqs = append(r.reqs, data)
		r.usage = append(r.usage, resp.Usage)
	}
	return resp, err
}

// recordingStore is the agent's transcript, keeping a copy of the header
// and of every message as the agent appended it: the agent's own record
// of the session, before any edit.
type recordingStore struct {
	*transcript.Store
	system []conv.Block
	tools  []conv.Tool
	msgs   []conv.Message
}

func (s *recordingStore) SetHeader(ctx context.Context, system []conv.Block, ts []conv.Tool) error {
	s.system, s.tools = conv.CloneBlocks(system), append([]conv.Tool(nil), ts...)
	return s.Store.SetHeader(ctx, system, ts)
}

func (s *recordingStore) Append(ctx context.Context, m conv.Message) error {
	if err := s.Store.Append(ctx, m); err != nil {
		return err
	}
	m.Blocks = conv.CloneBlocks(m.Blocks)
	s.msgs = append(s.msgs, m)
	return nil
}

// TestAgentReplayIdentity is issue 10's proof that the bench measures what
// the agent runs: the agent works a scripted task against the llmtest
// Anthropic server (three rounds and compactions in a 20k window; a task
// this short is no evidence that clearing or rung 1 would pay back, so do
// no harm leaves its results whole), and its own record of the session is then
// replayed through the bench's ctxkit strategy, which observes the usage
// the agent's provider reported. Every request the replay builds must be
// byte-identical to the one the agent sent (model and max_tokens aside:
// transport settings the replay does not know). Without the observed usage
// the replay compacts at another request and the test fails.
func TestAgentReplayIdentity(t *testing.T) {
	ws := t.TempDir()
	for i := range 6 {
		var sb strings.Builder
		for j := range 60 {
			fmt.Fprintf(&sb, "func handler%d_%d(w http.ResponseWriter, r *http.Request) { serve(w, r, %d) }\n", i, j, j)
		}
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("h%d.go", i)), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := llmtest.NewServer(t, llmtest.Config{})
	var script []llmtest.Reply
	for i := range 6 {
		script = append(script, llmtest.Calls(fmt.Sprintf("Reading handler file %d.", i),
			llmtest.Use(tools.NameRead, fmt.Sprintf(`{"file_path":"h%d.go"}`, i))))
		script = append(script, llmtest.Calls("Checking the build.",
			llmtest.Use(tools.NameBash, fmt.Sprintf(`{"command":"seq 1 %d"}`, 150+10*i))))
		if i%2 == 1 {
			script = append(script, llmtest.Text(fmt.Sprintf("Round %d done: the handlers look right.", i)))
		}
	}
	srv.Enqueue(script...)
	t.Setenv(anthropic.KeyEnv, "test-key")
	p, err := anthropic.New("claude-sonnet-4-5", anthropic.WithBaseURL(srv.BaseURL(llmtest.Anthropic)))
	if err != nil {
		t.Fatal(err)
	}
	rp := &recordingProvider{p: p}
	ts, err := tools.New(ws, tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	st, err := transcript.Create(filepath.Join(t.TempDir(), "session"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	store := &recordingStore{Store: st}
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	a, err := agent.New(context.Background(), agent.Config{
		Provider: rp, Model: "claude-sonnet-4-5", Window: 20_000, Pricing: pricing.Anthropic(),
		Tools: ts, Store: store, Workspace: ws, Summarizer: summarize.NewExtractive(),
		Clock: func() time.Time { return now }, // within the cache lifetime throughout
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	for _, prompt := range []string{"Review handlers 0 and 1.", "Now handlers 2 and 3.", "And handlers 4 and 5."} {
		if _, err := a.Run(ctx, prompt); err != nil {
			t.Fatalf("%q: %v", prompt, err)
		}
	}
	stats := a.Stats()
	if stats.Compactions == 0 {
		t.Fatalf("the task should compact: %+v", stats)
	}

	// The replay: the agent's record, arriving as the bench feeds a
	// recording, with the usage the agent's provider reported.
	s := newCtxkit(Env{System: store.system, Tools: store.tools, Window: 20_000,
		Counter: tokens.NewEstimator(), Pricing: pricing.Anthropic(), MinCacheTokens: 1024})
	n, prev := 0, 0
	for k, m := range store.msgs {
		if m.Role != conv.RoleAssistant {
			continue
		}
		got, _, err := s.Step(ctx, store.msgs[prev:k])
		if err != nil {
			t.Fatalf("replay, request %d: %v", n+1, err)
		}
		prev = k
		if n >= len(rp.reqs) {
			t.Fatalf("the replay built more requests than the agent sent (%d)", len(rp.reqs))
		}
		gb, wb := encodeBare(t, got), rp.reqs[n]
		if !bytes.Equal(gb, wb) {
			t.Fatalf("request %d differs from the agent's:\n%s", n+1, firstDiff(wb, gb))
		}
		s.(Observer).Observe(rp.usage[n])
		n++
	}
	if n != len(rp.reqs) {
		t.Fatalf("replayed %d requests, the agent sent %d", n, len(rp.reqs))
	}
	t.Logf("%d requests byte-identical; agent: %d compactions, %d compressed, %d cleared", n, stats.Compactions, stats.Compressed, stats.Cleared)
}

// encodeBare is the request's Anthropic body without the transport
// settings a replay does not know (model, max_tokens).
func encodeBare(t *testing.T, req *llm.Request) []byte {
	t.Helper()
	r := *req
	r.Model, r.MaxTokens = "", 0
	data, err := wire.EncodeAnthropic(&r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func firstDiff(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(i-200, 0)
	return fmt.Sprintf("at byte %d\nagent:  …%s…\nreplay: …%s…", i, want[lo:min(i+200, len(want))], got[lo:min(i+200, len(got))])
}
