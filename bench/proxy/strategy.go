package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/mcp"
	"github.com/ctxkit/ctxkit/serve"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// Models the replayed clients name; the proxy's window is its own
// configuration, not the model's.
const (
	anthropicModel = "claude-sonnet-4-5"
	openaiModel    = "gpt-5"
)

// MaxTokens is the max_tokens the replayed client asks for at window: the
// output reserve ctxkit's own strategy takes at that window (the engine's
// default, engine.Config.MaxTokens), so that the proxy and the engine's
// replay work with the same prompt budget. (Claude Code asks for 32,000,
// which at a 64k window leaves a proxy a third less room than the engine
// gives itself; a comparison at unequal budgets measures the budget.)
func MaxTokens(window int) int {
	cfg, err := engine.Config{Window: window, Keeper: engine.NewMemoryKeeper()}.Defaults()
	if err != nil {
		return max(window/4, 1)
	}
	return cfg.MaxTokens
}

// Serve is the "serve" strategy: each session replayed through ctxkit
// serve's real handler, an instance of its own per session (an in-memory
// store, the bench's window) behind a loopback listener, forwarding to a
// stand-in Upstream of its own.
func Serve() bench.Factory { return ServeWire("") }

// ServeWire is Serve with every session replayed on the wire named
// (one of Wires; "" picks each session's own client).
func ServeWire(wireName string) bench.Factory {
	return bench.Factory{
		Name:        "serve",
		Description: "ctxkit serve, the proxy: the session replayed as its client sends it (whole history, the client's anchors) through the real handler",
		Source:      "this module (package serve)",
		New:         func(e bench.Env) bench.Strategy { return newServe(e, wireName) },
	}
}

// Remote is the "proxy" strategy: each session replayed through the proxy
// listening at url (ctxkit serve, or another vendor's), which must forward
// to up. The proxy's window is its own configuration. recall, when not
// nil, is the proxy's recall tool for the client with a credential
// (StoreRecall for ctxkit serve's store): the recall ids the proxy names
// are resolved through it.
func Remote(url string, up *Upstream, recall func(key string) Recaller) bench.Factory {
	return RemoteWire(url, up, "", recall)
}

// RemoteWire is Remote with every session replayed on the wire named.
func RemoteWire(url string, up *Upstream, wireName string, recall func(key string) Recaller) bench.Factory {
	url = strings.TrimSuffix(url, "/")
	return bench.Factory{
		Name:        "proxy",
		Description: "the proxy at " + url + ", the session replayed as its client sends it",
		Source:      url,
		New: func(e bench.Env) bench.Strategy {
			s := newStrategy(e, wireName, url, up, &http.Client{}, nil)
			if recall != nil {
				s.recall = recall(s.key)
			}
			return s
		},
	}
}

func newServe(e bench.Env, wireName string) bench.Strategy {
	up := NewUpstream(e.Summarize)
	hsUp := httptest.NewServer(up)
	st, err := sqlite.Open(context.Background(), ":memory:")
	if err != nil {
		hsUp.Close()
		return &strategy{err: fmt.Errorf("serve's store: %w", err)}
	}
	srv, err := serve.New(serve.Config{
		AnthropicUpstream: hsUp.URL, OpenAIUpstream: hsUp.URL + "/v1", GeminiUpstream: hsUp.URL,
		Window: e.Window, KeepValue: e.KeepValue, Store: st, Logger: slog.New(slog.DiscardHandler),
		Clock: replayClock(e),
	})
	if err != nil {
		st.Close()
		hsUp.Close()
		return &strategy{err: fmt.Errorf("serve: %w", err)}
	}
	hs := httptest.NewServer(srv)
	s := newStrategy(e, wireName, hs.URL, up, hs.Client(), func() {
		hs.Close()
		hsUp.Close()
		st.Close()
	})
	s.recall = StoreRecall(st, s.key)
	return s
}

// StoreRecall is ctxkit serve's recall tool for the client with
// credential key: ctxkit mcp's lookup (mcp.Original) in that tenant's
// view of the proxy's store st, every page of it.
func StoreRecall(st store.Store, key string) Recaller {
	return func(ctx context.Context, id string) (string, bool) {
		secret, err := st.Secret(ctx)
		if err != nil {
			return "", false
		}
		tenant, err := serve.TenantOf(secret, nil, key)
		if err != nil {
			return "", false
		}
		scoped, err := store.Scope(st, tenant)
		if err != nil {
			return "", false
		}
		o, err := mcp.Original(ctx, mcp.Scope{Store: scoped}, id)
		if err != nil {
			return "", false
		}
		return string(o.Content), true
	}
}

// strategy replays one session through a proxy: it holds the history as
// the client holds it and sends all of it every turn.
type strategy struct {
	env    bench.Env
	url    string
	up     *Upstream
	client *http.Client
	close  func()
	err    error

	cl       client
	key      string // the credential: tells this replay's calls apart upstream
	sessID   string // the client's session id header
	msgs     []conv.Message
	recorded int // the recorded messages among msgs (the rest are recall round trips)

	// What the proxy did upstream for a recall round trip's request
	// besides forwarding it (its summaries), billed with the next
	// request's; and whether a call of it was refused.
	tripCalls   []bench.Call
	tripInvalid bool
	ids         map[string]*conv.Block // recorded id → the client's block

	// recall is the proxy's recall tool, when the bench can call it (the
	// serve strategy's store); idx finds the recorded block a recalled
	// original is, and known remembers what each proxy id resolved to.
	recall Recaller
	idx    originals
	known  map[string]string
	// reasoning is the recorded cost of each encrypted reasoning block
	// the client holds (the stand-in reports it, as the provider would).
	reasoning map[string]int

	// check, in tests, sees every request the client sent and what the
	// proxy forwarded for it.
	check func(client, upstream []byte)
}

func newStrategy(e bench.Env, wireName, url string, up *Upstream, client *http.Client, closeFn func()) *strategy {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	cl, err := clientFor(wireName, e.Family, e.Pricing.Automatic)
	return &strategy{
		env: e, url: url, up: up, client: client, close: closeFn, err: err,
		cl: cl, key: "sk-ctxkit-bench-" + id, sessID: id,
		ids: map[string]*conv.Block{}, idx: originals{}, known: map[string]string{},
		reasoning: map[string]int{},
	}
}

// Close releases the session's proxy and stand-in (the replay calls it).
func (s *strategy) Close() error {
	if s.up != nil {
		s.up.forget(s.key)
	}
	if s.close != nil {
		s.close()
	}
	return nil
}

// Step sends the whole history, as the client would, and returns what
// went upstream.
func (s *strategy) Step(ctx context.Context, arrived []conv.Message) (*llm.Request, bench.StepInfo, error) {
	var info bench.StepInfo
	if s.err != nil {
		return nil, info, s.err
	}
	for _, m := range arrived {
		m.Blocks = conv.CloneBlocks(m.Blocks)
		s.cl.echo(&m)
		s.msgs = append(s.msgs, m)
	}
	s.recorded += len(arrived)
	for i := len(s.msgs) - len(arrived); i < len(s.msgs); i++ {
		s.idx.add(&s.msgs[i])
		for j := range s.msgs[i].Blocks {
			b := &s.msgs[i].Blocks[j]
			if b.ID != "" {
				s.ids[b.ID] = b
			}
			if b.Type == conv.TypeRedactedThinking && b.Meta.Tokens > 0 {
				s.reasoning[b.Data] = b.Meta.Tokens
			}
		}
	}
	req := &llm.Request{Model: anthropicModel, MaxTokens: MaxTokens(s.env.Window), System: s.env.System, Tools: s.env.Tools, Messages: s.msgs}
	out, calls, invalid, err := s.exchange(ctx, req)
	if err != nil {
		return nil, info, err
	}
	info.AsSent = true
	info.Invalid = invalid || s.tripInvalid
	info.Calls = append(s.tripCalls, calls...)
	s.tripCalls, s.tripInvalid = nil, false
	info.Compactions = len(info.Calls)
	info.SummarizerCalls = len(info.Calls)
	info.RecallIDs = attribute(s.ids, req, out)
	resolve(ctx, s.recall, s.idx, s.ids, out, info.RecallIDs, s.known)
	return out, info, nil
}

// exchange sends req as the client would, and returns what the proxy
// forwarded for it, decoded, the proxy's other upstream calls for it (its
// summaries), and whether a call was refused or answered other than 200.
func (s *strategy) exchange(ctx context.Context, req *llm.Request) (*llm.Request, []bench.Call, bool, error) {
	path, body, err := s.cl.encode(req, s.sessID)
	if err != nil {
		return nil, nil, false, fmt.Errorf("the client's request: %w", err)
	}
	newest, err := s.newest()
	if err != nil {
		return nil, nil, false, err
	}
	s.up.expect(s.key, newest, s.report())
	status, n, err := s.send(ctx, path, body)
	if err != nil {
		return nil, nil, false, err
	}
	calls, as := s.up.take(s.key)
	fwd := -1
	for i, c := range calls {
		if c.N == n {
			fwd = i
		}
	}
	if fwd < 0 {
		// A proxy that drops the provider's request id: the forwarded
		// request is the last that ends with the client's newest message.
		for i := range calls {
			if r := as[i].req; r != nil && len(r.Messages) > 0 && endsWithNewest(&r.Messages[len(r.Messages)-1], &newest) {
				fwd = i
			}
		}
	}
	if fwd < 0 && len(calls) > 0 && status == http.StatusOK {
		// Nor one that names no request (Gemini's) and changed the
		// newest message: a proxy forwards after its own calls.
		fwd = len(calls) - 1
	}
	if fwd < 0 {
		return nil, nil, false, fmt.Errorf("the proxy answered %d and sent nothing upstream for it (%d other requests)", status, len(calls))
	}
	if s.check != nil {
		s.check(body, calls[fwd].Body)
	}
	invalid := status != http.StatusOK
	others := []bench.Call{}
	for i := range calls {
		r := as[i].req
		if r == nil {
			invalid = true // the stand-in refused it, as the provider would
			continue
		}
		if i == fwd {
			continue
		}
		others = append(others, bench.Call{Request: r, Output: s.env.Counter.Count(as[i].text)})
	}
	out := as[fwd].req
	if out == nil {
		if out, err = s.cl.decode(calls[fwd].Body); err != nil {
			return nil, nil, false, fmt.Errorf("what the proxy sent upstream does not decode: %w", err)
		}
	}
	return out, others, invalid, nil
}

// newest is the client's newest message as the stand-in decodes it.
func (s *strategy) newest() (conv.Message, error) {
	one := &llm.Request{Model: anthropicModel, MaxTokens: MaxTokens(s.env.Window), Messages: s.msgs[len(s.msgs)-1:]}
	_, b, err := s.cl.encode(one, s.sessID)
	var r *llm.Request
	if err == nil {
		r, err = s.cl.decode(b)
	}
	if err != nil || len(r.Messages) == 0 {
		return conv.Message{}, fmt.Errorf("the client's newest message: %w", errors.Join(err, errors.New("no message")))
	}
	return r.Messages[len(r.Messages)-1], nil
}

// send posts body to the proxy as the client would and returns the
// status and the number of the stand-in's call that answered it.
func (s *strategy) send(ctx context.Context, path string, body []byte) (int, int, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	hr.Header.Set("Content-Type", "application/json")
	s.cl.header(hr.Header, s.key, s.sessID)
	if s.env.Now != nil {
		// When the recording says the request was sent: a proxy started
		// with --replay-clock judges the cache's lifetime by it, as the
		// engine the bench replays directly does (serve.Config.Clock for
		// the serve strategy's own).
		if t := s.env.Now(); !t.IsZero() {
			hr.Header.Set(serve.HeaderReplayTime, t.UTC().Format(time.RFC3339Nano))
		}
	}
	resp, err := s.client.Do(hr)
	if err != nil {
		return 0, 0, fmt.Errorf("the proxy: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, callNumber(resp.Header), nil
}

// Recalled adds a recall round trip to the client's history
// (bench.RecallKeeper): an agent's history keeps the model's recall calls
// and what they returned, and the client resends them with every later
// request, as it does through ctxkit serve with ctxkit mcp's recall tool.
// The results are mapped to the originals they hold.
func (s *strategy) Recalled(msgs []conv.Message, ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	for _, m := range msgs {
		m.Blocks = conv.CloneBlocks(m.Blocks)
		s.cl.echo(&m) // the model's calls carry what its provider gave them (Gemini's signatures)
		for i := range m.Blocks {
			b := &m.Blocks[i]
			if b.ID != "" {
				s.ids[b.ID] = b
			}
			if b.Type == conv.TypeToolResult && i < len(ids) {
				out[b.ID] = ids[i]
			}
		}
		s.msgs = append(s.msgs, m)
	}
	if len(msgs) > 0 && s.err == nil {
		// The client sends the recall's result to the model: a request
		// of its own through the proxy, which decides on it as on any
		// other (its report; its summaries, billed with the next
		// request's). The round trip itself is billed by the bench's
		// rule, as for every strategy.
		req := &llm.Request{Model: anthropicModel, MaxTokens: MaxTokens(s.env.Window), System: s.env.System, Tools: s.env.Tools, Messages: s.msgs}
		_, calls, invalid, err := s.exchange(context.Background(), req)
		if err != nil {
			s.err = fmt.Errorf("the recall's request: %w", err)
		}
		s.tripCalls = append(s.tripCalls, calls...)
		s.tripInvalid = s.tripInvalid || invalid
	}
	return out
}

// replayClock is the replay's clock for the proxy's engine, as the bench
// gives it to the engine it replays directly (bench.Env.Now): the recorded
// time of each request, or the wall clock when the recording has none.
func replayClock(e bench.Env) func() time.Time {
	return func() time.Time {
		if e.Now != nil {
			if t := e.Now(); !t.IsZero() {
				return t
			}
		}
		return time.Now()
	}
}
