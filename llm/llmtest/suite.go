package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Target describes a provider for the conformance suite.
type Target struct {
	// API is the wire format the provider speaks.
	API API
	// KeyEnv is the environment variable the provider reads its key from.
	KeyEnv string
	// KeyOptional says the provider works without a key once it is given
	// a base URL (servers on the local machine need none).
	KeyOptional bool
	// New makes a provider configured by s.
	New func(s Settings) (llm.Provider, error)
}

// Settings is what the suite configures a provider with.
type Settings struct {
	// BaseURL is where to send requests; "" means the provider's default,
	// which the suite only uses to check the missing-key error and never
	// dials.
	BaseURL       string
	Model         string
	Retry         llm.Retry
	Timeout       time.Duration // the per-attempt silence timeout
	BadRequestDir string        // where rejected requests are saved
	HTTPClient    *http.Client  // nil means the provider's default
	Logger        *slog.Logger
}

// suiteKey is the key the suite puts in the environment; it must never
// appear in an error, a log line or a saved file.
const suiteKey = "sk-llmtest-SECRET-7f3a9c"

const suiteTimeout = time.Second

type suite struct {
	t      Target
	logBuf *syncBuffer
}

// TestProvider runs the conformance suite against target: text and tool
// turns, parallel tool calls, streaming events, usage with cache figures
// across requests sharing a prefix, every fault and its error or retry,
// the missing key, 401 without retry, a 400 shown as the API words it with
// its request saved, and no secret leaking into errors, logs or files.
// Each case runs against its own Server, whose validator also checks every
// request the provider sends.
//
// It sets the key's environment variable, so t and its parents must not be
// parallel.
func TestProvider(t *testing.T, target Target) {
	s := &suite{t: target, logBuf: &syncBuffer{}}
	t.Run("text", s.text)
	t.Run("tool-use", s.toolUse)
	t.Run("parallel-tools", s.parallelTools)
	t.Run("thinking", s.thinking)
	t.Run("cache", s.cache)
	t.Run("faults", s.faults)
	t.Run("give-up", s.giveUp)
	t.Run("auth", s.auth)
	t.Run("prompt-too-long", s.promptTooLong)
	t.Run("bad-request", s.badRequest)
	t.Run("network", s.network)
	t.Run("cancel", s.cancel)
	t.Run("missing-key", s.missingKey)
	t.Run("concurrent", s.concurrent)
	if strings.Contains(s.logBuf.String(), suiteKey) {
		t.Errorf("the API key appears in the provider's log output")
	}
}

const suiteModel = "llmtest-model"

func (s *suite) settings(t *testing.T, srv *Server) Settings {
	st := Settings{
		Model:         suiteModel,
		Retry:         llm.Retry{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond, MaxWait: 10 * time.Second},
		Timeout:       suiteTimeout,
		BadRequestDir: t.TempDir(),
		Logger:        slog.New(slog.NewTextHandler(s.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if srv != nil {
		st.BaseURL = srv.BaseURL(s.t.API)
	}
	return st
}

// setup starts a server and a provider talking to it.
func (s *suite) setup(t *testing.T, cfg Config) (*Server, llm.Provider, Settings) {
	t.Helper()
	t.Setenv(s.t.KeyEnv, suiteKey)
	if cfg.APIKey == "" {
		cfg.APIKey = suiteKey
	}
	srv := NewServer(t, cfg)
	st := s.settings(t, srv)
	p, err := s.t.New(st)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, p, st
}

// recorder collects streamed events.
type recorder struct {
	mu  sync.Mutex
	evs []llm.Event
}

func (r *recorder) on(e llm.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

// since returns the events after the last EventRetry: the ones of the
// attempt that succeeded.
func (r *recorder) since() []llm.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.evs) - 1; i >= 0; i-- {
		if r.evs[i].Kind == llm.EventRetry {
			return append([]llm.Event(nil), r.evs[i+1:]...)
		}
	}
	return append([]llm.Event(nil), r.evs...)
}

func (r *recorder) retries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Kind == llm.EventRetry {
			n++
		}
	}
	return n
}

func joined(evs []llm.Event, k llm.EventKind) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == k {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// newConv starts a conversation with a system prompt, one tool and the
// user's first words.
func newConv(text string) *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a careful coding agent under test.")},
		Tools: []conv.Tool{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`)},
			{Name: "Grep", Description: "Search files.", InputSchema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)},
		},
	}
	c.System[0].ID = c.NewID()
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, text)}})
	return c
}

// request builds the request for c, failing t if c is not a valid one.
func request(t *testing.T, c *conv.Conversation) *llm.Request {
	t.Helper()
	if vs := conv.CheckRequest(c); len(vs) > 0 {
		t.Fatalf("suite bug: invalid conversation: %v", vs)
	}
	c = c.Clone()
	return &llm.Request{Model: suiteModel, MaxTokens: 1024, System: c.System, Tools: c.Tools, Messages: c.Messages}
}

// appendResponse adds the assistant's message to c, checking the
// invariants.
func appendResponse(t *testing.T, c *conv.Conversation, resp *llm.Response) {
	t.Helper()
	c.Append(resp.Message)
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("the response breaks the conversation invariants: %v", vs)
	}
}

func (s *suite) stream(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, *recorder) {
	t.Helper()
	var rec recorder
	resp, err := p.Stream(context.Background(), req, rec.on)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return resp, &rec
}

func checkUsage(t *testing.T, got llm.Usage, c *Call) {
	t.Helper()
	if got != c.Usage {
		t.Errorf("usage = %+v, the server reported %+v", got, c.Usage)
	}
	if got.Prompt() != c.Prompt {
		t.Errorf("usage counts a prompt of %d tokens, the server counted %d", got.Prompt(), c.Prompt)
	}
	if got.Output <= 0 {
		t.Errorf("usage has no output tokens: %+v", got)
	}
}

func (s *suite) text(t *testing.T) {
	srv, p, _ := s.setup(t, Config{})
	const text = "Hello from the test server, sent in several small pieces."
	srv.Enqueue(Text(text))
	c := newConv("Say hello.")
	resp, rec := s.stream(t, p, request(t, c))
	if len(resp.Message.Blocks) != 1 || resp.Message.Blocks[0].Type != conv.TypeText || resp.Message.Blocks[0].Text != text {
		t.Fatalf("message = %+v, want one text block %q", resp.Message, text)
	}
	if resp.Message.Role != conv.RoleAssistant {
		t.Errorf("role = %q", resp.Message.Role)
	}
	if resp.StopReason != "end_turn" {
		t.Errorf("stop reason = %q, want end_turn", resp.StopReason)
	}
	if got := joined(rec.since(), llm.EventText); got != text {
		t.Errorf("streamed text = %q, want %q", got, text)
	}
	if n := len(rec.since()); n < 2 {
		t.Errorf("got %d events; the text should arrive in pieces", n)
	}
	call := srv.Last()
	checkUsage(t, resp.Usage, call)
	if !call.Stream {
		t.Errorf("the request did not ask to stream")
	}
	if call.Model != suiteModel {
		t.Errorf("model sent = %q, want %q", call.Model, suiteModel)
	}
	if !strings.Contains(call.System, "careful coding agent") {
		t.Errorf("system prompt sent = %q", call.System)
	}
	if len(call.Tools) != 2 || call.Tools[0] != "Read" || call.Tools[1] != "Grep" {
		t.Errorf("tools sent = %v", call.Tools)
	}
	if len(call.Messages) != 1 || call.Messages[0].Blocks[0].Text != "Say hello." {
		t.Errorf("messages sent = %+v", call.Messages)
	}
	appendResponse(t, c, resp)
}

func (s *suite) toolUse(t *testing.T) {
	srv, p, _ := s.setup(t, Config{})
	// Keys out of alphabetical order: the input must come back byte for
	// byte, since re-serializing it would break the prompt cache.
	const input = `{"path":"main.go","limit":10}`
	srv.Enqueue(Calls("Let me read it.", Use("Read", input)), Text("It is a main package."))
	c := newConv("What is in main.go?")
	resp, rec := s.stream(t, p, request(t, c))
	if resp.StopReason != "tool_use" {
		t.Errorf("stop reason = %q, want tool_use", resp.StopReason)
	}
	var use *conv.Block
	for i := range resp.Message.Blocks {
		if b := &resp.Message.Blocks[i]; b.Type == conv.TypeToolUse {
			use = b
		}
	}
	if use == nil {
		t.Fatalf("no tool_use in %+v", resp.Message)
	}
	if use.Name != "Read" || use.ToolUseID == "" || string(use.Input) != input {
		t.Errorf("tool_use = %s %s %s, want Read with input %s", use.Name, use.ToolUseID, use.Input, input)
	}
	if resp.Message.Blocks[0].Type != conv.TypeText || resp.Message.Blocks[0].Text != "Let me read it." {
		t.Errorf("the text before the call is missing: %+v", resp.Message.Blocks[0])
	}
	var names []string
	for _, e := range rec.since() {
		if e.Kind == llm.EventToolUse {
			names = append(names, e.Name)
		}
	}
	if len(names) != 1 || names[0] != "Read" {
		t.Errorf("tool-use events = %v, want [Read]", names)
	}
	checkUsage(t, resp.Usage, srv.Last())

	appendResponse(t, c, resp)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(use.ToolUseID, "Read", "package main\n\nfunc main() {}\n", false)}})
	resp2, _ := s.stream(t, p, request(t, c))
	if resp2.StopReason != "end_turn" || len(resp2.Message.Blocks) != 1 {
		t.Errorf("second turn = %+v", resp2)
	}
	sent := srv.Last().Messages
	last := sent[len(sent)-1]
	if len(last.Blocks) == 0 || last.Blocks[0].Type != conv.TypeToolResult || last.Blocks[0].ToolUseID != use.ToolUseID ||
		!strings.Contains(last.Blocks[0].ResultText(), "package main") {
		t.Errorf("the tool result was not sent as such: %+v", last)
	}
	if prev := sent[len(sent)-2]; string(prev.Blocks[len(prev.Blocks)-1].Input) != input {
		t.Errorf("the tool call went back as %s, want %s byte for byte", prev.Blocks[len(prev.Blocks)-1].Input, input)
	}
}

func (s *suite) parallelTools(t *testing.T) {
	srv, p, _ := s.setup(t, Config{})
	srv.Enqueue(Calls("", Use("Read", `{"path":"a.go"}`), Use("Read", `{"path":"b.go"}`), Use("Grep", `{"pattern":"TODO"}`)), Text("Done."))
	c := newConv("Look at a.go, b.go and the TODOs.")
	resp, rec := s.stream(t, p, request(t, c))
	var uses []conv.Block
	for _, b := range resp.Message.Blocks {
		if b.Type == conv.TypeToolUse {
			uses = append(uses, b)
		}
	}
	if len(uses) != 3 {
		t.Fatalf("got %d tool calls, want 3: %+v", len(uses), resp.Message)
	}
	ids := map[string]bool{}
	for i, want := range []string{`{"path":"a.go"}`, `{"path":"b.go"}`, `{"pattern":"TODO"}`} {
		if string(uses[i].Input) != want {
			t.Errorf("call %d input = %s, want %s", i, uses[i].Input, want)
		}
		ids[uses[i].ToolUseID] = true
	}
	if len(ids) != 3 {
		t.Errorf("tool call ids are not distinct: %v", ids)
	}
	n := 0
	for _, e := range rec.since() {
		if e.Kind == llm.EventToolUse {
			n++
		}
	}
	if n != 3 {
		t.Errorf("got %d tool-use events, want 3", n)
	}
	appendResponse(t, c, resp)
	var results []conv.Block
	for _, u := range uses {
		results = append(results, conv.NewToolResult(u.ToolUseID, u.Name, "result of "+string(u.Input), false))
	}
	results[2].IsError = true
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: results})
	s.stream(t, p, request(t, c))
	sent := srv.Last().Messages
	got := 0
	for _, b := range sent[len(sent)-1].Blocks {
		if b.Type == conv.TypeToolResult && ids[b.ToolUseID] {
			got++
		}
	}
	if got != 3 {
		t.Errorf("%d of 3 results were sent: %+v", got, sent[len(sent)-1])
	}
}

func (s *suite) thinking(t *testing.T) {
	srv, p, _ := s.setup(t, Config{})
	const thought = "The user wants a greeting; a short one will do."
	srv.Enqueue(Reply{Thinking: thought, Text: "Hi!"}, Text("Bye!"))
	c := newConv("Greet me.")
	resp, rec := s.stream(t, p, request(t, c))
	if got := joined(rec.since(), llm.EventThinking); got != thought {
		t.Errorf("streamed thinking = %q, want %q", got, thought)
	}
	if got := joined(rec.since(), llm.EventText); got != "Hi!" {
		t.Errorf("streamed text = %q", got)
	}
	for _, b := range resp.Message.Blocks {
		if b.Type == conv.TypeThinking && (b.Text != thought || b.Signature == "") {
			t.Errorf("thinking block = %+v, want the whole thought with its signature", b)
		}
	}
	// The thinking goes back with the next request, untouched, or not at
	// all; the server verifies its signature.
	appendResponse(t, c, resp)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Now say goodbye.")}})
	s.stream(t, p, request(t, c))
}

func (s *suite) cache(t *testing.T) {
	srv, p, _ := s.setup(t, Config{MinCacheable: 64, MinCached: 64, CacheStep: 16})
	c := newConv(strings.Repeat("Here is a long description of the task at hand. ", 40))
	c.System[0].Text += strings.Repeat(" Follow the project rules.", 60)
	anchor := func(req *llm.Request) *llm.Request {
		req.System[len(req.System)-1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
		last := &req.Messages[len(req.Messages)-1]
		last.Blocks[len(last.Blocks)-1].CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
		return req
	}
	srv.Enqueue(Text("First answer."), Text("Second answer."))
	first, _ := s.stream(t, p, anchor(request(t, c)))
	checkUsage(t, first.Usage, srv.Last())
	if first.Usage.CacheRead != 0 {
		t.Errorf("first request read %d tokens from an empty cache", first.Usage.CacheRead)
	}
	if s.t.API == Anthropic && first.Usage.CacheWrite == 0 {
		t.Errorf("first request wrote nothing to the cache at its breakpoints: %+v", first.Usage)
	}
	appendResponse(t, c, first)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "And then?")}})
	second, _ := s.stream(t, p, anchor(request(t, c)))
	checkUsage(t, second.Usage, srv.Last())
	if second.Usage.CacheRead == 0 {
		t.Errorf("second request shares a prefix but read nothing from the cache: %+v", second.Usage)
	}
	if s.t.API == Anthropic && second.Usage.CacheRead != first.Usage.CacheWrite {
		t.Errorf("second request read %d tokens, the first wrote %d", second.Usage.CacheRead, first.Usage.CacheWrite)
	}
	if second.Usage.CacheRead >= second.Usage.Prompt() {
		t.Errorf("cache read %d is not less than the prompt %d", second.Usage.CacheRead, second.Usage.Prompt())
	}
}

// faults: each fault once, then a good answer; the provider must retry
// and return the good answer, with only its events after the retry.
func (s *suite) faults(t *testing.T) {
	cases := []struct {
		name  string
		fault Fault
		gap   time.Duration // the least time between the two attempts
	}{
		{"rate-limited", Fault{Kind: RateLimited, RetryAfter: 150 * time.Millisecond}, 150 * time.Millisecond},
		{"overloaded", Fault{Kind: Overloaded, RetryAfter: 100 * time.Millisecond}, 100 * time.Millisecond},
		{"server-error", Fault{Kind: ServerError}, 0},
		{"cut-stream", Fault{Kind: CutStream, Events: 4}, 0},
		{"truncate", Fault{Kind: Truncate, Events: 4}, 0},
		{"stream-error", Fault{Kind: StreamError, Events: 4}, 0},
		// The client's clock starts a little before the server sees the
		// request, so only half the timeout is a safe lower bound.
		{"slow", Fault{Kind: Slow, Delay: time.Minute}, suiteTimeout / 2},
		{"stall", Fault{Kind: Stall, Events: 4, Delay: time.Minute}, suiteTimeout / 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, p, _ := s.setup(t, Config{})
			const good = "The complete answer, after the fault."
			bad := Reply{Text: "This answer will not arrive whole, it is cut off early.", Fault: &tc.fault}
			srv.Enqueue(bad, Text(good))
			resp, rec := s.stream(t, p, request(t, newConv("Go on.")))
			if len(resp.Message.Blocks) != 1 || resp.Message.Blocks[0].Text != good {
				t.Errorf("message = %+v, want the good answer", resp.Message)
			}
			if got := joined(rec.since(), llm.EventText); got != good {
				t.Errorf("text streamed after the retry = %q, want %q", got, good)
			}
			if rec.retries() != 1 {
				t.Errorf("got %d retry events, want 1", rec.retries())
			}
			calls := srv.Calls()
			if len(calls) != 2 {
				t.Fatalf("server saw %d requests, want 2", len(calls))
			}
			if gap := calls[1].Time.Sub(calls[0].Time); gap < tc.gap {
				t.Errorf("retried after %s, want at least %s", gap, tc.gap)
			}
			if !bytes.Equal(calls[0].Body, calls[1].Body) {
				t.Errorf("the retry sent a different body")
			}
			checkUsage(t, resp.Usage, calls[1])
		})
	}
}

// giveUp: a fault on every attempt ends in llm.ErrUnavailable after the
// policy's attempts.
func (s *suite) giveUp(t *testing.T) {
	for _, kind := range []FaultKind{Overloaded, ServerError, CutStream, Truncate} {
		t.Run(kind.String(), func(t *testing.T) {
			srv, p, st := s.setup(t, Config{})
			for range st.Retry.Attempts {
				srv.Enqueue(Reply{Text: "never whole", Fault: &Fault{Kind: kind, Events: 1}})
			}
			_, err := p.Stream(context.Background(), request(t, newConv("Go on.")), nil)
			t.Logf("error: %v", err)
			var ae *llm.APIError
			if !errors.Is(err, llm.ErrUnavailable) || !errors.As(err, &ae) {
				t.Fatalf("err = %v, want an *llm.APIError that is llm.ErrUnavailable", err)
			}
			if kind != CutStream && kind != Truncate && ae.Status < 500 {
				t.Errorf("status = %d, want the server's 5xx", ae.Status)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(st.Retry.Attempts)) {
				t.Errorf("error %q does not say how many attempts were made", err)
			}
			if n := len(srv.Calls()); n != st.Retry.Attempts {
				t.Errorf("server saw %d requests, want %d", n, st.Retry.Attempts)
			}
			if strings.Contains(err.Error(), suiteKey) {
				t.Errorf("the error shows the API key")
			}
		})
	}
}

func (s *suite) auth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault *Fault
		key   string // the key the server expects
	}{
		{"401", &Fault{Kind: Unauthorized}, ""},
		{"403", &Fault{Kind: Forbidden}, ""},
		{"wrong-key", nil, "sk-llmtest-the-right-one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, p, _ := s.setup(t, Config{APIKey: tc.key})
			if tc.fault != nil {
				srv.Enqueue(Fail(*tc.fault), Text("must not be reached"))
			}
			_, err := p.Stream(context.Background(), request(t, newConv("Hi.")), nil)
			t.Logf("error: %v", err)
			var ae *llm.APIError
			if !errors.Is(err, llm.ErrAuth) || !errors.As(err, &ae) {
				t.Fatalf("err = %v, want llm.ErrAuth", err)
			}
			if errors.Is(err, llm.ErrUnavailable) {
				t.Errorf("an auth failure must not read as unavailable")
			}
			if n := len(srv.Calls()); n != 1 {
				t.Errorf("server saw %d requests; a refused key must not be retried", n)
			}
			if ae.Message != srv.Last().Error {
				t.Errorf("message = %q, the server said %q", ae.Message, srv.Last().Error)
			}
			if strings.Contains(err.Error(), suiteKey) {
				t.Errorf("the error shows the API key")
			}
		})
	}
}

func (s *suite) promptTooLong(t *testing.T) {
	srv, p, _ := s.setup(t, Config{Window: 300})
	srv.Enqueue(Text("must not be reached"))
	_, err := p.Stream(context.Background(), request(t, newConv(strings.Repeat("a very long paste ", 200))), nil)
	t.Logf("error: %v", err)
	var ae *llm.APIError
	if !errors.Is(err, llm.ErrPromptTooLong) || !errors.As(err, &ae) {
		t.Fatalf("err = %v, want llm.ErrPromptTooLong", err)
	}
	if ae.Message != srv.Last().Error {
		t.Errorf("message = %q, the server said %q", ae.Message, srv.Last().Error)
	}
	if ae.Status != http.StatusBadRequest {
		t.Errorf("status = %d, want 400", ae.Status)
	}
	if n := len(srv.Calls()); n != 1 {
		t.Errorf("server saw %d requests; prompt-too-long must not be retried", n)
	}
	if len(srv.Rejected()) != 0 {
		t.Errorf("a long prompt is not an invalid request")
	}
}

func (s *suite) badRequest(t *testing.T) {
	srv, p, st := s.setup(t, Config{})
	// An orphan tool result: the engine must never send one; the server
	// refuses it as the real API does.
	req := request(t, newConv("Hi."))
	req.Messages[0].Blocks = append([]conv.Block{conv.NewToolResult("toolu_orphan", "Read", "stray", false)}, req.Messages[0].Blocks...)
	_, err := p.Stream(context.Background(), req, nil)
	t.Logf("error: %v", err)
	var ae *llm.APIError
	if !errors.Is(err, llm.ErrBadRequest) || !errors.As(err, &ae) {
		t.Fatalf("err = %v, want llm.ErrBadRequest", err)
	}
	rej := srv.TakeRejected()
	if len(rej) != 1 {
		t.Fatalf("server rejected %d requests, want 1", len(rej))
	}
	if ae.Message != rej[0].Message {
		t.Errorf("message = %q, want the server's %q as is", ae.Message, rej[0].Message)
	}
	if !strings.Contains(err.Error(), rej[0].Message) {
		t.Errorf("error %q does not show the server's message", err)
	}
	if n := len(srv.Calls()); n != 1 {
		t.Errorf("server saw %d requests; a 400 must not be retried", n)
	}
	files, _ := filepath.Glob(filepath.Join(st.BadRequestDir, "*"))
	if len(files) != 1 {
		t.Fatalf("%d files saved in the bad-request folder, want 1", len(files))
	}
	data, rerr := os.ReadFile(files[0])
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !bytes.Equal(data, srv.Last().Body) {
		t.Errorf("saved request differs from the one sent:\n%s\n%s", data, srv.Last().Body)
	}
	if !strings.Contains(err.Error(), files[0]) {
		t.Errorf("error %q does not name the saved file %s", err, files[0])
	}
	if bytes.Contains(data, []byte(suiteKey)) {
		t.Errorf("the saved request contains the API key")
	}
}

func (s *suite) network(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		t.Setenv(s.t.KeyEnv, suiteKey)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		st := s.settings(t, nil)
		st.BaseURL = "http://" + addr
		if s.t.API == OpenAI {
			st.BaseURL += "/v1"
		}
		p, err := s.t.New(st)
		if err != nil {
			t.Fatal(err)
		}
		var rec recorder
		_, err = p.Stream(context.Background(), request(t, newConv("Hi.")), rec.on)
		t.Logf("error: %v", err)
		if !errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("err = %v, want llm.ErrUnavailable", err)
		}
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name the address", err)
		}
		// Nothing listens on this machine's port: waiting will not change
		// that, so the provider says so at once instead of retrying.
		if rec.retries() != 0 || !strings.Contains(err.Error(), "nothing is listening") {
			t.Errorf("got %d retries and %q, want none and a message that nothing is listening", rec.retries(), err)
		}
	})
	t.Run("dns", func(t *testing.T) {
		t.Setenv(s.t.KeyEnv, suiteKey)
		const host = "api.llmtest.invalid"
		st := s.settings(t, nil)
		st.BaseURL = "http://" + host
		if s.t.API == OpenAI {
			st.BaseURL += "/v1"
		}
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}}
		st.HTTPClient = &http.Client{Transport: tr}
		p, err := s.t.New(st)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Stream(context.Background(), request(t, newConv("Hi.")), nil)
		t.Logf("error: %v", err)
		if !errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("err = %v, want llm.ErrUnavailable", err)
		}
		if !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "no such host") {
			t.Errorf("error %q does not say which host could not be resolved", err)
		}
	})
}

func (s *suite) cancel(t *testing.T) {
	srv, p, _ := s.setup(t, Config{})
	srv.Enqueue(Reply{Text: "late", Fault: &Fault{Kind: Slow, Delay: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.Calls()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := p.Stream(ctx, request(t, newConv("Hi.")), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(srv.Calls()); n != 1 {
		t.Errorf("server saw %d requests; a cancelled call must not be retried", n)
	}
}

func (s *suite) missingKey(t *testing.T) {
	t.Setenv(s.t.KeyEnv, "")
	st := s.settings(t, nil)
	_, err := s.t.New(st)
	t.Logf("error: %v", err)
	if !errors.Is(err, llm.ErrMissingKey) {
		t.Fatalf("New without a key = %v, want llm.ErrMissingKey", err)
	}
	if !strings.Contains(err.Error(), s.t.KeyEnv) {
		t.Errorf("error %q does not name %s", err, s.t.KeyEnv)
	}
	if !s.t.KeyOptional {
		return
	}
	srv := NewServer(t, Config{})
	st = s.settings(t, srv)
	p, err := s.t.New(st)
	if err != nil {
		t.Fatalf("New with a base URL and no key: %v", err)
	}
	s.stream(t, p, request(t, newConv("Hi.")))
	h := srv.Last().Header
	if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
		t.Errorf("a request without a key carried credentials: %v", h)
	}
}

func (s *suite) concurrent(t *testing.T) {
	srv, p, _ := s.setup(t, Config{})
	srv.Handle(func(c *Call) Reply {
		return Text("answer to " + c.Messages[0].Blocks[0].Text)
	})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		q := fmt.Sprintf("question %d", i)
		req := request(t, newConv(q))
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := p.Stream(context.Background(), req, func(llm.Event) {})
			if err != nil {
				errs <- err
				return
			}
			if got := resp.Message.Blocks[0].Text; got != "answer to "+q {
				errs <- fmt.Errorf("got %q for %q", got, q)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
