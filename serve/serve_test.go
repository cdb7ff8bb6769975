package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/store"
)

// checkSpliced asserts DESIGN.md invariant 7 on one request: up differs
// from client only where the engine decided. Outside the messages array
// every byte is the client's. Every upstream message is a client message,
// in order — byte for byte, or with the value of some blocks (a result's
// content, a text, a tool call's input) replaced and every other byte the
// client's — or a user message the engine made (a summary, a drop
// marker), whose parts are the client's byte for byte or text. Thinking
// blocks are never changed, and the newest message is the client's.
func checkSpliced(t *testing.T, client, up []byte) (changed, removed int) {
	t.Helper()
	c, err := parseAnthropic(client)
	if err != nil {
		t.Fatalf("client body: %v", err)
	}
	u, err := parseAnthropic(up)
	if err != nil {
		t.Fatalf("upstream body: %v\n%s", err, up)
	}
	if !bytes.Equal(client[:c.MsgsSpan.s], up[:u.MsgsSpan.s]) || !bytes.Equal(client[c.MsgsSpan.e:], up[u.MsgsSpan.e:]) {
		t.Fatalf("bytes outside messages changed")
	}
	raw := func(b []byte, sp span) []byte { return b[sp.s:sp.e] }
	clientBlocks := map[string]bool{}
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			clientBlocks[string(raw(client, b.Span))] = true
		}
	}
	ci := 0
	for _, um := range u.Messages {
		k := ci
		for k < len(c.Messages) && !bytes.Equal(raw(client, c.Messages[k].Span), raw(up, um.Span)) && !valuesOnly(client, c.Messages[k], up, um) {
			k++
		}
		if k < len(c.Messages) {
			if !bytes.Equal(raw(client, c.Messages[k].Span), raw(up, um.Span)) {
				changed++
			}
			removed += k - ci
			ci = k + 1
			continue
		}
		// A message the engine made.
		if um.Role != "user" {
			t.Fatalf("a made message of role %s: %.300s", um.Role, raw(up, um.Span))
		}
		for _, b := range um.Blocks {
			if !clientBlocks[string(raw(up, b.Span))] && b.Type != "text" {
				t.Fatalf("a made message carries a %s block that is not the client's: %.300s", b.Type, raw(up, b.Span))
			}
		}
	}
	removed += len(c.Messages) - ci
	// The newest message: the client's, or its blocks byte for byte at
	// the end of the message that begins with what the engine wrote.
	cn, un := c.Messages[len(c.Messages)-1], u.Messages[len(u.Messages)-1]
	if !bytes.Equal(raw(client, cn.Span), raw(up, un.Span)) {
		ok := len(un.Blocks) > len(cn.Blocks) && len(cn.Blocks) > 0
		for i := 0; ok && i < len(cn.Blocks); i++ {
			ok = bytes.Equal(raw(client, cn.Blocks[i].Span), raw(up, un.Blocks[len(un.Blocks)-len(cn.Blocks)+i].Span))
		}
		if !ok {
			t.Fatalf("the newest message changed:\nclient:   %.300s\nupstream: %.300s", raw(client, cn.Span), raw(up, un.Span))
		}
	}
	return changed, removed
}

// valuesOnly: the message is the client's but for the values of some
// blocks — a result's content, a text, a tool call's input — which the
// engine replaced; thinking never.
func valuesOnly(cb []byte, cm message, ub []byte, um message) bool {
	if cm.Role != um.Role || len(cm.Blocks) != len(um.Blocks) || len(cm.Blocks) == 0 {
		return false
	}
	for i := range cm.Blocks {
		c, u := cm.Blocks[i], um.Blocks[i]
		if bytes.Equal(cb[c.Span.s:c.Span.e], ub[u.Span.s:u.Span.e]) {
			continue
		}
		if c.Type != u.Type || c.Type == "thinking" || c.Type == "redacted_thinking" {
			return false
		}
		cv, uv := c.Content, u.Content
		switch c.Type {
		case "tool_use":
			cv, uv = c.Input, u.Input
		case "text":
			cv, uv = member(cb, c.Span, kText), member(ub, u.Span, kText)
		}
		if !cv.ok() || !uv.ok() {
			return false
		}
		// Outside the value, the block is the client's.
		if !bytes.Equal(cb[c.Span.s:cv.s], ub[u.Span.s:uv.s]) || !bytes.Equal(cb[cv.e:c.Span.e], ub[uv.e:u.Span.e]) {
			return false
		}
	}
	return true
}

func TestUntouchedBodyIsByteIdentical(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{})
	s := sim{name: "small", resultSize: 300}
	for n := 0; n <= 3; n++ {
		body := s.body(n)
		resp, _ := p.post(t, "/v1/messages", "", body)
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: status %d", n, resp.StatusCode)
		}
		if got := up.Last().Body; !bytes.Equal(got, body) {
			t.Fatalf("turn %d: upstream body differs from the client's\nclient:   %s\nupstream: %s", n, body, got)
		}
		// Headers verbatim: beta, version, key.
		h := up.Last().Header
		if h.Get("Anthropic-Beta") != "context-management-2025-06-27,interleaved-thinking-2025-05-14" || h.Get("X-Api-Key") != "sk-ant-test-secret" || h.Get("Anthropic-Version") != "2023-06-01" {
			t.Fatalf("headers not forwarded verbatim: %v", h)
		}
	}
}

func TestClearAndSummarizeSpliceOnly(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000})
	s := sim{name: "long", resultSize: 400, say: 100}
	var prev []byte
	sawClear, sawSummary := false, false
	for n := 1; n <= 80; n++ {
		body := s.body(n)
		resp, data := p.post(t, "/v1/messages", "sess-long", body)
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: status %d: %s", n, resp.StatusCode, data)
		}
		calls := up.Calls()
		last := calls[len(calls)-1]
		if isSummaryCall(last) {
			t.Fatalf("turn %d: the last call was a summary", n)
		}
		if last.Prompt > 20_000 {
			t.Fatalf("turn %d: upstream prompt %d tokens is over the window", n, last.Prompt)
		}
		cleared, removed := checkSpliced(t, body, last.Body)
		sawClear = sawClear || cleared > 0
		sawSummary = sawSummary || removed > 0
		// Thinking blocks: every one that went upstream is byte-identical to the client's.
		for _, th := range bytes.SplitAfter(last.Body, []byte(`"type":"thinking"`))[1:] {
			if !bytes.Contains(body, th[:bytes.IndexByte(th, '}')]) {
				t.Fatalf("turn %d: a thinking block changed", n)
			}
		}
		_ = prev
		prev = last.Body
	}
	// A compaction keeps only the pinned tail (compact's policy), whose
	// results are the Keep newest: at a 20k window results are summarized
	// before clearing them pays (TestChatCompletionsClears clears).
	if !sawSummary {
		t.Fatalf("cleared %v, summarized %v; want a summary over 80 turns at a 20k window", sawClear, sawSummary)
	}
	sess, err := p.tenant(t).Session(context.Background(), "cc:sess-long")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Totals.Compactions == 0 || sess.Totals.UpstreamTokens >= sess.Totals.ClientTokens {
		t.Fatalf("session totals %+v", sess.Totals)
	}
	// Later requests read the cache: the rewrite is prefix-stable.
	reads := 0
	for _, c := range up.Calls() {
		t.Logf("call %d prompt %d usage %+v", c.N, c.Prompt, c.Usage)
		if c.Usage.CacheRead > 0 {
			reads++
		}
	}
	if reads < 20 {
		t.Fatalf("only %d requests read the cache", reads)
	}
}

// turnsOf runs turns from..to of s through p and returns the upstream bodies.
func turnsOf(t *testing.T, p *proxy, up *llmtest.Server, s sim, session string, from, to int) [][]byte {
	var out [][]byte
	for n := from; n <= to; n++ {
		resp, data := p.post(t, "/v1/messages", session, s.body(n))
		if resp.StatusCode != 200 {
			t.Fatalf("%s turn %d: %d %s", s.name, n, resp.StatusCode, data)
		}
		out = append(out, up.Last().Body)
	}
	return out
}

func TestInterleavedSessionsNoCrossTalk(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	a, b := sim{name: "alpha", resultSize: 4000, say: 1500}, sim{name: "beta", resultSize: 3000, say: 1500}
	// Alone.
	pa := newProxy(t, up.URL, Config{Window: 20_000})
	alone := turnsOf(t, pa, up, a, "A", 1, 30)
	// Interleaved with another session, on a fresh store.
	p := newProxy(t, up.URL, Config{Window: 20_000})
	var mixed [][]byte
	for n := 1; n <= 30; n++ {
		mixed = append(mixed, turnsOf(t, p, up, a, "A", n, n)...)
		turnsOf(t, p, up, b, "B", n, n)
	}
	for i := range alone {
		if !bytes.Equal(alone[i], mixed[i]) {
			t.Fatalf("turn %d of session A differs when interleaved with B", i+1)
		}
		if bytes.Contains(mixed[i], []byte("beta")) {
			t.Fatalf("turn %d of session A carries session B's content", i+1)
		}
	}
}

func TestRestartKeepsDecisions(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	s := sim{name: "restart", resultSize: 4000, say: 1500}
	ref := turnsOf(t, newProxy(t, up.URL, Config{Window: 20_000}), up, s, "R", 1, 30)

	path := t.TempDir() + "/serve.db"
	st1 := openStore(t, path)
	p1 := newProxy(t, up.URL, Config{Window: 20_000, Store: st1})
	got := turnsOf(t, p1, up, s, "R", 1, 18)
	p1.Close()
	st1.Close()
	p2 := newProxy(t, up.URL, Config{Window: 20_000, Store: openStore(t, path)})
	got = append(got, turnsOf(t, p2, up, s, "R", 19, 30)...)
	for i := range ref {
		if !bytes.Equal(ref[i], got[i]) {
			t.Fatalf("turn %d after a restart differs from the uninterrupted run", i+1)
		}
	}
}

// TestSavedIsTheEngines: what the status page and the store say a session
// saved is the engine's account, request by request, and a mirror rebuilt
// after a restart, which steps the engine through the whole history again,
// adds only its own request's share: the session comes to the same figure
// as an uninterrupted run.
func TestSavedIsTheEngines(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	s := sim{name: "saved", resultSize: 4000, say: 1500}
	saved := func(st store.Store) float64 {
		t.Helper()
		// The usage of a request is recorded once its response is out:
		// wait for the last one.
		for range 200 {
			ss, err := st.Sessions(context.Background(), 10)
			if err != nil || len(ss) != 1 {
				t.Fatalf("sessions: %v, %d", err, len(ss))
			}
			if ss[0].Totals.Requests == 30 {
				return ss[0].Totals.SavedUSD
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("the usage of 30 requests was never recorded")
		return 0
	}
	ref := openStore(t, "")
	turnsOf(t, newProxy(t, up.URL, Config{Window: 20_000, Store: ref}), up, s, "S", 1, 30)
	want := saved(ref)
	if want == 0 {
		// At a 20k window the compactions the window forces cost more
		// than the session saves against sending everything (which the
		// window would not take): the account is negative, not empty.
		t.Fatal("the session's account is empty after 30 turns that compacted")
	}

	path := filepath.Join(t.TempDir(), "serve.db")
	st1 := openStore(t, path)
	p1 := newProxy(t, up.URL, Config{Window: 20_000, Store: st1})
	turnsOf(t, p1, up, s, "S", 1, 18)
	p1.Close()
	st1.Close()
	st2 := openStore(t, path)
	turnsOf(t, newProxy(t, up.URL, Config{Window: 20_000, Store: st2}), up, s, "S", 19, 30)
	if got := saved(st2); math.Abs(got-want) > 1e-9 {
		t.Errorf("after a restart the session saved $%.6f, uninterrupted $%.6f", got, want)
	}
}

func TestFailOpen(t *testing.T) {
	echo, bodies := echoUpstream(t, `{"type":"message","content":[],"usage":{"input_tokens":3,"output_tokens":1}}`)
	bad := [][]byte{
		[]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},]}`),
		[]byte(`{"model":"m","messages":"not a list"}`),
		[]byte(`not json at all`),
	}
	p := newProxy(t, echo.URL, Config{})
	for i, b := range bad {
		resp, _ := p.post(t, "/v1/messages", "", b)
		if resp.StatusCode != 200 {
			t.Fatalf("body %d: status %d", i, resp.StatusCode)
		}
		if got := bodies(); !bytes.Equal(got[i], b) {
			t.Fatalf("body %d forwarded as %q, want unchanged", i, got[i])
		}
	}
	m := metricsText(t, p)
	if !strings.Contains(m, `ctxkit_serve_fail_open_total{provider="anthropic",reason="parse"} 3`) {
		t.Fatalf("fail-open not counted:\n%s", grep(m, "fail_open"))
	}
	pc := newProxy(t, echo.URL, Config{FailClosed: true})
	resp, data := pc.post(t, "/v1/messages", "", bad[0])
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(data), `"type":"error"`) {
		t.Fatalf("--fail-closed: %d %s", resp.StatusCode, data)
	}
}

func metricsText(t *testing.T, p *proxy) string {
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestBodyLimit(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{MaxBody: 4096})
	big := sim{name: "big", resultSize: 8000}.body(1)
	resp, data := p.post(t, "/v1/messages", "", big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), `"type":"request_too_large"`) {
		t.Fatalf("anthropic: %d %s", resp.StatusCode, data)
	}
	resp, data = p.post(t, "/v1/chat/completions", "", big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), `"error":{"message"`) {
		t.Fatalf("openai: %d %s", resp.StatusCode, data)
	}
	if len(up.Calls()) != 0 {
		t.Fatal("an oversize body went upstream")
	}
}

func TestUpstreamErrorsForwardedFaithfully(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header string
		body   string
	}{
		{"429", 429, "7", `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_1"}`},
		{"529", 529, "", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"500", 500, "", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
		{"400 prompt too long", 400, "", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set("Retry-After", tt.header)
				}
				w.Header().Set("X-Should-Retry", "true")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer upstream.Close()
			p := newProxy(t, upstream.URL, Config{})
			resp, data := p.post(t, "/v1/messages", "", sim{name: "e", resultSize: 100}.body(1))
			if resp.StatusCode != tt.status || string(data) != tt.body || resp.Header.Get("Retry-After") != tt.header || resp.Header.Get("X-Should-Retry") != "true" {
				t.Fatalf("got %d %q retry-after %q; want %d %q %q", resp.StatusCode, data, resp.Header.Get("Retry-After"), tt.status, tt.body, tt.header)
			}
		})
	}
}

func streamBody(s sim, n int) []byte {
	return bytes.Replace(s.body(n), []byte(`"stream":false`), []byte(`"stream":true`), 1)
}

func TestSSEPassthroughWithPings(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	// The stall: the first events arrive, then the upstream is silent for a
	// while. An unbuffered proxy delivers the first events before the stall ends.
	up.Enqueue(llmtest.Reply{Text: "hello there, streaming", Fault: &llmtest.Fault{Kind: llmtest.Stall, Delay: 1500 * time.Millisecond, Events: 3}})
	p := newProxy(t, up.URL, Config{})
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", bytes.NewReader(streamBody(sim{name: "sse", resultSize: 100}, 1)))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	firstAt := time.Duration(0)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			if firstAt == 0 {
				firstAt = time.Since(start)
			}
			events = append(events, ev)
		}
	}
	if firstAt > time.Second {
		t.Fatalf("the first event came after %v: the stream was buffered", firstAt)
	}
	joined := strings.Join(events, ",")
	if !strings.Contains(joined, "ping") || !strings.HasSuffix(joined, "message_stop") {
		t.Fatalf("events %s; want pings passed on and a complete stream", joined)
	}
}

func TestCutStreamIsCutForTheClient(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	up.Enqueue(llmtest.Reply{Text: "a long reply that will be cut", Fault: &llmtest.Fault{Kind: llmtest.CutStream, Events: 3}})
	p := newProxy(t, up.URL, Config{})
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", bytes.NewReader(streamBody(sim{name: "cut", resultSize: 100}, 1)))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("the client read a clean end of a cut stream: %s", data)
	}
	if !bytes.Contains(data, []byte("message_start")) {
		t.Fatalf("the events before the cut were lost: %q", data)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	canceled := make(chan struct{})
	started := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "event: ping\ndata: {\"type\": \"ping\"}\n\n")
		w.(http.Flusher).Flush()
		close(started)
		select {
		case <-r.Context().Done():
			close(canceled)
		case <-time.After(10 * time.Second):
		}
	}))
	defer upstream.Close()
	p := newProxy(t, upstream.URL, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/messages", bytes.NewReader(streamBody(sim{name: "dc", resultSize: 100}, 1)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	resp.Body.Close()
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not canceled after the client disconnected")
	}
}

func TestSessionKeys(t *testing.T) {
	r := &request{Provider: "anthropic", UserID: "user_x_account_y_session_0b7c9d1e-aaaa-bbbb-cccc-123456789012"}
	tests := []struct {
		name   string
		header string
		req    *request
		want   string
	}{
		{"header", "abc", r, "cc:abc"},
		{"user_id", "", r, "cc:0b7c9d1e-aaaa-bbbb-cccc-123456789012"},
		{"user_id json", "", &request{UserID: `{"device_id":"d","session_id":"s-1"}`}, "cc:s-1"},
		{"prompt_cache_key", "", &request{CacheKey: "k"}, "pck:k"},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("X-Claude-Code-Session-Id", tt.header)
		}
		if got := sessionKey(h, tt.req); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	// The hash fallback: same system and first message, same session,
	// whatever follows.
	s := sim{name: "h", resultSize: 100}
	a, _ := parseAnthropic(bytes.Replace(s.body(1), []byte("session_h"), []byte(""), 1))
	b, _ := parseAnthropic(bytes.Replace(s.body(3), []byte("session_h"), []byte(""), 1))
	ka, kb := sessionKey(http.Header{}, a), sessionKey(http.Header{}, b)
	if !strings.HasPrefix(ka, "h:") || ka != kb {
		t.Errorf("hash keys %q %q", ka, kb)
	}
}

func TestEndpoints(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{})
	p.post(t, "/v1/messages", "page", sim{name: "page", resultSize: 100}.body(1))
	for _, tt := range []struct{ path, want string }{
		{"/healthz", `{"status":"ok"}`},
		{"/", fingerprint(tenantOf(t, p.store, testKey) + "/cc:page")},
		{"/metrics", "ctxkit_serve_added_latency_seconds_bucket"},
	} {
		resp, err := http.Get(p.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s: %d, want %q in\n%.500s", tt.path, resp.StatusCode, tt.want, b)
		}
		if strings.Contains(string(b), "cc:page") {
			t.Errorf("GET %s shows the session id", tt.path)
		}
	}
	// Everything else passes through: count_tokens goes upstream as is (the
	// test server does not know it: its 404 comes back unmodified).
	resp, data := p.post(t, "/v1/messages/count_tokens", "", []byte(`{"model":"m","messages":[]}`))
	if resp.StatusCode != 404 || !strings.Contains(string(data), "not_found_error") {
		t.Fatalf("count_tokens: %d %s", resp.StatusCode, data)
	}
}

func TestConflictUsesTheWinner(t *testing.T) {
	// Two proxies on one store decide for one session at once: every
	// upstream body of a turn is the same.
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	st := openStore(t, "")
	p1 := newProxy(t, up.URL, Config{Window: 20_000, Store: st})
	p2 := newProxy(t, up.URL, Config{Window: 20_000, Store: st})
	s := sim{name: "race", resultSize: 4000}
	turnsOf(t, p1, up, s, "X", 1, 9)
	body := s.body(10)
	var wg sync.WaitGroup
	for _, p := range []*proxy{p1, p2, p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.post(t, "/v1/messages", "X", body)
		}()
	}
	wg.Wait()
	calls := up.Calls()
	var bodies [][]byte
	for _, c := range calls[len(calls)-4:] {
		bodies = append(bodies, c.Body)
	}
	for _, b := range bodies[1:] {
		if !bytes.Equal(b, bodies[0]) {
			t.Fatal("concurrent requests of one session went upstream with different rewrites")
		}
	}
	ds, _, err := scoped(t, st, testKey).Decisions(context.Background(), "cc:X")
	if err != nil || len(ds) == 0 {
		t.Fatalf("decisions %v %v", ds, err)
	}
	_ = errors.Is(err, store.ErrConflict)
}

func TestWindowPerModel(t *testing.T) {
	tests := []struct {
		window int
		model  string
		want   int
	}{
		{0, "claude-sonnet-4-5", 200_000},
		{0, "gpt-5.1", 400_000},
		{0, "gpt-4o-mini", 128_000},
		{0, "a-local-model", llm.DefaultWindow},
		{60_000, "claude-sonnet-4-5", 60_000},
		{60_000, "gpt-5.1", 60_000},
	}
	for _, tt := range tests {
		p := newProxy(t, "http://127.0.0.1:1", Config{Window: tt.window})
		if got := p.srv.window(tt.model); got != tt.want {
			t.Errorf("--window %d, model %s: window %d, want %d", tt.window, tt.model, got, tt.want)
		}
		// The engine deciding on the request has compact's limit for that window.
		req := &request{Model: tt.model, MaxOut: 1_000_000}
		m, err := p.srv.newMirror("k", req, p.srv.window(tt.model), "")
		if err != nil {
			t.Fatal(err)
		}
		// (max_tokens at or over the window stands for a quarter of it: engineConfig.)
		if got, want := m.e.Budget().Limit, (compact.Config{Window: tt.want, MaxOutput: tt.want / 4}).Budget().Limit; got != want {
			t.Errorf("--window %d, model %s: limit %d, want %d", tt.window, tt.model, got, want)
		}
	}
}

// TestHealthz: 200 while the store answers, 503 with the reason when it
// cannot be read.
func TestHealthz(t *testing.T) {
	for _, tt := range []struct {
		name       string
		closeStore bool
		status     int
		want       string
	}{
		{"store reachable", false, http.StatusOK, `{"status":"ok"}`},
		{"store unreachable", true, http.StatusServiceUnavailable, `"status":"degraded"`},
	} {
		p := newProxy(t, "http://127.0.0.1:1", Config{})
		if tt.closeStore {
			p.store.Close()
		}
		resp, err := http.Get(p.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %s; want %d with %s", tt.name, resp.StatusCode, b, tt.status, tt.want)
		}
	}
}

// TestChunkedBody: a body without a Content-Length is read to its end,
// and refused with 413 past --max-body.
func TestChunkedBody(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{MaxBody: 64 << 10})
	for _, tt := range []struct {
		name   string
		body   []byte
		status int
	}{
		{"small", sim{name: "chunk", resultSize: 2000}.body(2), http.StatusOK},
		{"too large", sim{name: "chunk", resultSize: 40_000}.body(2), http.StatusRequestEntityTooLarge},
	} {
		// A reader of unknown length: the client sends it chunked.
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", io.MultiReader(bytes.NewReader(tt.body)))
		req.Header.Set("X-Api-Key", "sk-ant-test-secret")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, resp.StatusCode, data, tt.status)
		}
	}
	if calls := up.Calls(); len(calls) != 1 || !bytes.Equal(calls[0].Body, sim{name: "chunk", resultSize: 2000}.body(2)) {
		t.Errorf("upstream got %d requests; want the small body, unchanged", len(calls))
	}
}

// roundTrip is an http.RoundTripper from a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUpstreamBodyReplays: the spliced upstream body has its length set
// and can be read again through GetBody (the HTTP client replays a request
// on a new connection when a kept-alive one was closed under it).
func TestUpstreamBodyReplays(t *testing.T) {
	var first, again []byte
	var length int64
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		first, _ = io.ReadAll(r.Body)
		length = r.ContentLength
		if r.GetBody != nil {
			b, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			again, _ = io.ReadAll(b)
		}
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"type":"message","content":[],"usage":{"input_tokens":1,"output_tokens":1}}`)), Request: r}, nil
	})}
	p := newProxy(t, "http://127.0.0.1:1", Config{Window: 20_000, Client: client})
	s := sim{name: "replay", resultSize: 4000, say: 1200}
	var sawSplice bool
	for n := 1; n <= 12; n++ {
		body := s.body(n)
		if resp, data := p.post(t, "/v1/messages", "replay", body); resp.StatusCode != 200 {
			t.Fatalf("turn %d: %d %s", n, resp.StatusCode, data)
		}
		if int64(len(first)) != length || !bytes.Equal(first, again) {
			t.Fatalf("turn %d: read %d bytes (length %d), replayed %d; want the same bytes twice", n, len(first), length, len(again))
		}
		sawSplice = sawSplice || !bytes.Equal(first, body)
	}
	if !sawSplice {
		t.Fatal("no request was rewritten: the test did not exercise a spliced body")
	}
}

// TestRefusedLeavesNoTrace: a request the upstream refuses (a wrong key)
// stores nothing — no original, no summary, no decision — though the
// engine decided on it; the same history accepted later stores them.
func TestRefusedLeavesNoTrace(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusUnauthorized
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		st := status
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		if st != http.StatusOK {
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":2}}`)
	}))
	t.Cleanup(hs.Close)
	p := newProxy(t, hs.URL, Config{Policy: micro.Eager{}})
	s := sim{name: "refused", resultSize: 900}
	ctx := context.Background()
	c, _ := parseAnthropic(s.body(6))
	first := c.Messages[2].Blocks[0].Hash
	for n := 1; n <= 6; n++ {
		if resp, _ := p.post(t, "/v1/messages", "refused", s.body(n)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("turn %d: %d", n, resp.StatusCode)
		}
	}
	if _, err := p.original(t, first); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused request stored an original: %v", err)
	}
	if ds, v, err := p.tenant(t).Decisions(ctx, "cc:refused"); err != nil || len(ds) != 0 || v != 0 {
		t.Fatalf("a refused request stored decisions: %v v%d %v", ds, v, err)
	}
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if resp, _ := p.post(t, "/v1/messages", "refused", s.body(6)); resp.StatusCode != http.StatusOK {
		t.Fatalf("accepted: %d", resp.StatusCode)
	}
	if _, err := p.original(t, first); err != nil {
		t.Fatalf("the accepted request's original is not stored: %v", err)
	}
	if ds, _, err := p.tenant(t).Decisions(ctx, "cc:refused"); err != nil || len(ds) == 0 {
		t.Fatalf("the accepted request's decisions are not stored: %v %v", ds, err)
	}
}

// TestCompactionKeepsClaudeMd: what Claude Code opens a session with (its
// CLAUDE.md reminder in the first message) goes upstream as the client
// sent it on every request, through the proxy's compactions too — as
// Claude Code sends it again after compacting itself.
// TestSummaryLeavesKeptWordsOut: the engine keeps the user's newest words
// verbatim through a compaction and leaves them out of what it gives its
// summarizer; the summary request the proxy sends upstream on the client's
// prefix says so, naming the message from which they stay, and what it
// says stays does: the request after the compaction holds each of those
// words once. Before, the upstream was asked to summarize them too.
func TestSummaryLeavesKeptWordsOut(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 32_000})
	up.Handle(summaryAware)
	// Small results: the context grows slowly, so the cost model leaves
	// a compaction room for the user's words, at a keep value above 1
	// (at the default a compaction keeps only what it must).
	p := newProxy(t, up.URL, Config{Window: 32_000, KeepValue: 4})
	s := sim{name: "words", resultSize: 300, say: 60, words: 3}
	said := 0
	for n := 1; n <= 400 && said < 1; n++ {
		resp, data := p.post(t, "/v1/messages", "sess-words", s.body(n))
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: status %d: %s", n, resp.StatusCode, data)
		}
		calls := up.TakeCalls()
		main := calls[len(calls)-1].Body
		newest := ""
		for i := n; i >= 1 && newest == ""; i-- {
			newest = s.said(i)
		}
		for _, c := range calls[:len(calls)-1] {
			if !isSummaryCall(c) || !bytes.Contains(c.Body, []byte("The user's own words from the message that begins")) {
				continue
			}
			said++
			t.Logf("turn %d: summary request says the user's words stay", n)
			// The newest words are the first a compaction keeps: what
			// the instruction says stays is in the request after it.
			if got := bytes.Count(main, jsonString(newest)); got != 1 {
				t.Errorf("turn %d: the summary request says the user's words stay, and the request after it holds %q %d times", n, newest, got)
			}
		}
	}
	if said == 0 {
		t.Fatal("no summary request said which of the user's words stay")
	}
}

func TestCompactionKeepsClaudeMd(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000})
	claudeMd := "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nContents of /repo/CLAUDE.md:\n\nAlways run `make lint` before committing.\n</system-reminder>"
	s := sim{name: "rules", resultSize: 400, say: 100, opening: claudeMd}
	want := jsonString(claudeMd)
	summarized := false
	for n := 1; n <= 80; n++ {
		resp, data := p.post(t, "/v1/messages", "sess-rules", s.body(n))
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: status %d: %s", n, resp.StatusCode, data)
		}
		calls := up.TakeCalls()
		for _, c := range calls[:len(calls)-1] {
			// A summary of a region the conversation opens with is told
			// that CLAUDE.md stays.
			if isSummaryCall(c) && bytes.Contains(c.Body, []byte(`from the message that begins \"\u003csystem-reminder`)) && !bytes.Contains(c.Body, []byte(keptOpeningSentence)) {
				t.Errorf("turn %d: a summary of the opening region does not say CLAUDE.md stays", n)
			}
		}
		last := calls[len(calls)-1].Body
		summarized = summarized || bytes.Contains(last, []byte("Goal: fix the failing tests."))
		if got := bytes.Count(last, want); got != 1 {
			t.Fatalf("turn %d (summarized before: %v): CLAUDE.md went upstream %d times", n, summarized, got)
		}
	}
	if !summarized {
		t.Fatal("no compaction over 80 turns at a 20k window")
	}
}
