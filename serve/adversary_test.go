package serve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/store"
)

// The adversarial suite: each test plays one attack of issue 21 against
// the real server on loopback, with a stand-in upstream, and checks it
// fails. The numbers in the names are the rows.

// postAs sends body as the holder of key would, in session.
func (p *proxy) postAs(t testing.TB, key, session string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if session != "" {
		req.Header.Set("X-Claude-Code-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// withSystem is body with its system prompt's text replaced.
func withSystem(body []byte, name, system string) []byte {
	return bytes.Replace(body, []byte(`"text":"You are Claude Code. `+name+`"`), []byte(`"text":`+q(system)), 1)
}

// secretSummaries answers summary requests with a summary that quotes the
// requester's system prompt, as a real model's would carry what it read.
func secretSummaries(c *llmtest.Call) llmtest.Reply {
	if isSummaryCall(c) {
		if bytes.Contains(c.Body, []byte("SECRET-A")) {
			return llmtest.Text("Summary: Alice's private assistant worked on SECRET-A.")
		}
		return llmtest.Text("Summary: someone's assistant worked on the tests.")
	}
	return llmtest.Text(fmt.Sprintf("ok %d", c.N))
}

// Row 1: B, with another (here: an invalid) key, sends an over-window
// request with A's system prompt, first message and session id; the
// proxy rewrites B's request, and A's next requests must go upstream
// exactly as A sent them.
func TestAdversary1OtherTenantCannotChangeYourRequests(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000})
	crossTenantRewrites(t, up, p, p)
}

// crossTenantRewrites is row 1 against two proxies on one store (or one
// twice).
func crossTenantRewrites(t *testing.T, up *llmtest.Server, pa, pb *proxy) {
	s := sim{name: "shared", resultSize: 4000}
	if resp, data := pa.postAs(t, "sk-ant-alice", "same-session", s.body(1)); resp.StatusCode != 200 {
		t.Fatalf("A: %d %s", resp.StatusCode, data)
	}
	pb.postAs(t, "sk-ant-bogus-bob", "same-session", s.body(30))
	if bytes.Equal(up.Last().Body, s.body(30)) {
		t.Fatal("B's over-window request went upstream unchanged: the test tests nothing")
	}
	for n := 2; n <= 3; n++ {
		body := s.body(n)
		if resp, data := pa.postAs(t, "sk-ant-alice", "same-session", body); resp.StatusCode != 200 {
			t.Fatalf("A turn %d: %d %s", n, resp.StatusCode, data)
		}
		if got := up.Last().Body; !bytes.Equal(got, body) {
			t.Fatalf("A's turn %d went upstream as %d bytes, not as A sent it (%d bytes): B's decisions reached A", n, len(got), len(body))
		}
	}
	if ds, _, err := scoped(t, pa.store, "sk-ant-alice").Decisions(context.Background(), "cc:same-session"); err != nil || len(rewrites(ds)) != 0 {
		t.Fatalf("A's session holds %d decisions (%v); B made them", len(rewrites(ds)), err)
	}
}

// Row 2: a summary written from A's context never reaches B, whose
// messages are the same as A's, nor can B write A's summaries.
func TestAdversary2SummariesStayWithTheirTenant(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(secretSummaries)
	p := newProxy(t, up.URL, Config{Window: 20_000})
	crossTenantSummaries(t, up, p, p)
}

func crossTenantSummaries(t *testing.T, up *llmtest.Server, pa, pb *proxy) {
	s := sim{name: "same", resultSize: 4000, say: 1500}
	for n := 1; n <= 24; n++ {
		pa.postAs(t, "sk-ant-alice", "alice", withSystem(s.body(n), s.name, "Alice's private assistant. SECRET-A"))
	}
	if !strings.Contains(string(up.Last().Body), "SECRET-A.") {
		t.Fatal("A's requests carry no summary of A's context: the test tests nothing")
	}
	before := len(up.Calls())
	for n := 1; n <= 24; n++ {
		pb.postAs(t, "sk-ant-bob", "bob", withSystem(s.body(n), s.name, "Bob's assistant."))
	}
	summarized := false
	for _, c := range up.Calls()[before:] {
		if bytes.Contains(c.Body, []byte("SECRET-A")) {
			t.Fatalf("upstream call %d (B's) carries A's summary", c.N)
		}
		summarized = summarized || bytes.Contains(c.Body, []byte("Summary: someone's"))
	}
	if !summarized {
		t.Fatal("B's requests were never summarized: the test tests nothing")
	}
}

// Row 3: connections that announce a large body and send a little of it
// cost their bytes, not their Content-Length, and are closed at the body
// deadline.
func TestAdversary3IdleBodiesAreBounded(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{BodyTimeout: time.Second, MaxInFlight: 40})
	hs := NewHTTPServer(p.srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	const conns = 80
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var closed atomic.Int64
	done := make(chan struct{}, conns)
	start := time.Now()
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Api-Key: sk-%d\r\nContent-Length: %d\r\n\r\n", i, 32<<20-1)
		c.Write(bytes.Repeat([]byte(" "), 4096))
		go func() {
			defer func() { done <- struct{}{} }()
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				resp.Body.Close()
			}
			// An answer (408) or a closed connection: either way it is over.
			closed.Add(1)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	for range conns {
		<-done
	}
	took := time.Since(start)
	if closed.Load() != conns {
		t.Fatalf("%d of %d slow connections closed", closed.Load(), conns)
	}
	// 80 connections × 32 MB announced = 2.5 GB if allocated ahead.
	alloc := during.TotalAlloc - before.TotalAlloc
	if alloc > 64<<20 {
		t.Errorf("80 idle connections allocated %d MB; want their bytes, not their Content-Length", alloc>>20)
	}
	if rss := vmRSS(t); rss > 300<<20 {
		t.Errorf("RSS %d MB, want under 300 MB", rss>>20)
	}
	// 40 slots, 1 s each: two rounds.
	if took > 15*time.Second {
		t.Errorf("slow bodies held their connections %s; want the body deadline to close them", took)
	}
	t.Logf("80 slow bodies: %d kB allocated while open, all closed after %s", alloc>>10, took.Round(time.Millisecond))
}

// vmRSS is the process's resident set size.
func vmRSS(t *testing.T) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// nestedBody is a ~size-byte request whose first message holds a value
// nested depth deep with a cache breakpoint at every level (the shape that
// made the hash quadratic).
func nestedBody(size, depth int) []byte {
	var inner bytes.Buffer
	for inner.Len() < size {
		for range depth {
			inner.WriteString(`{"cache_control":{"type":"ephemeral"},"v":`)
		}
		inner.WriteString(`"x"`)
		inner.WriteString(strings.Repeat("}", depth))
		inner.WriteByte(',')
	}
	return []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"n","input":[` +
		strings.TrimSuffix(inner.String(), ",") + `],"cache_control":{"type":"ephemeral"}}]}]}`)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Row 4: a 300 kB deeply nested body costs well under 2 s of CPU.
func TestAdversary4NestedBodyIsCheap(t *testing.T) {
	up, _ := echoUpstream(t, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)
	p := newProxy(t, up.URL, Config{})
	brackets := []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"},"x":` +
		strings.Repeat("[", 150_000) + strings.Repeat("]", 150_000) + `}]}]}`)
	for _, body := range [][]byte{nestedBody(300_000, maxDepth-10), nestedBody(300_000, 300_000/45), brackets} {
		c0 := cpuTime()
		resp, _ := p.postAs(t, "sk-ant-x", "", body)
		cpu := cpuTime() - c0
		if cpu > 2*time.Second {
			t.Errorf("%s of CPU for a %d kB body", cpu, len(body)>>10)
		}
		t.Logf("%d kB: %s CPU, upstream answered %d", len(body)>>10, cpu.Round(time.Millisecond), resp.StatusCode)
	}
}

// Row 5: a page on another origin (DNS rebinding or cross-site) is
// refused; neither the status page nor /metrics shows session ids.
func TestAdversary5ForeignHostAndNoSessionIDs(t *testing.T) {
	up, _ := echoUpstream(t, `{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}`)
	p := newProxy(t, up.URL, Config{})
	p.postAs(t, "sk-ant-a", "0b7c9d1e-aaaa-bbbb-cccc-123456789012", sim{name: "h", resultSize: 100}.body(1))
	for _, tt := range []struct {
		name         string
		host, origin string
		want         int
	}{
		{"rebound host", "evil.example:8788", "", http.StatusForbidden},
		{"cross-site origin", "", "http://evil.example", http.StatusForbidden},
		{"loopback", "", "", http.StatusOK},
		{"localhost", "localhost:8788", "http://localhost:8788", http.StatusOK},
	} {
		for _, path := range []string{"/", "/v1/messages"} {
			method, body := http.MethodGet, []byte(nil)
			if path != "/" {
				method, body = http.MethodPost, sim{name: "h", resultSize: 100}.body(1)
			}
			req, _ := http.NewRequest(method, p.URL+path, bytes.NewReader(body))
			req.Header.Set("X-Api-Key", "sk-ant-a")
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s %s: %d, want %d", tt.name, path, resp.StatusCode, tt.want)
			}
		}
	}
	// A form post a web page can send without asking is refused.
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", strings.NewReader(string(sim{name: "h", resultSize: 100}.body(1))))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST: %v %v, want 415", resp.Status, err)
	}
	for _, path := range []string{"/", "/metrics"} {
		resp, err := http.Get(p.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, leak := range []string{"0b7c9d1e", "cc:", "sk-ant", tenantOf(t, p.store, "sk-ant-a")} {
			if strings.Contains(string(b), leak) {
				t.Errorf("GET %s shows %q", path, leak)
			}
		}
	}
}

func TestAllowedHosts(t *testing.T) {
	for _, tt := range []struct {
		listen string
		extra  []string
		want   string
	}{
		{"127.0.0.1:8788", nil, "localhost,127.0.0.1,::1"},
		{"[::1]:8788", nil, "localhost,127.0.0.1,::1"},
		{"10.0.0.5:8788", nil, "10.0.0.5"},
		{"0.0.0.0:8788", nil, "*,localhost,127.0.0.1,::1"},
		{":8788", []string{"ctx.example.com"}, "ctx.example.com,localhost,127.0.0.1,::1"},
	} {
		if got := strings.Join(AllowedHosts(tt.listen, tt.extra), ","); got != tt.want {
			t.Errorf("AllowedHosts(%q, %v) = %s, want %s", tt.listen, tt.extra, got, tt.want)
		}
	}
}

// Row 6: an upstream redirect goes back to the client; the key and the
// prompt never reach the other host.
func TestAdversary6RedirectsAreNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal", code)
		}))
		t.Cleanup(up.Close)
		p := newProxy(t, up.URL, Config{})
		for _, path := range []string{"/v1/messages", "/v1/models"} {
			req, _ := http.NewRequest(http.MethodPost, p.URL+path, bytes.NewReader(sim{name: "r", resultSize: 100}.body(1)))
			req.Header.Set("X-Api-Key", "sk-ant-secret")
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != code || resp.Header.Get("Location") != other.URL+"/steal" {
				t.Errorf("%s, upstream %d: the client got %d (Location %q), want the redirect unchanged", path, code, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the proxy followed %d redirects to another host", n)
	}
}

// Row 7: after the retention period nothing of a session is left.
func TestAdversary7RetentionDeletesOldState(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000, Retain: time.Hour})
	s := sim{name: "old", resultSize: 4000, say: 1500}
	turnsOf(t, p, up, s, "old", 1, 24)
	st := p.tenant(t)
	ctx := context.Background()
	sess, err := st.Session(ctx, "cc:old")
	if err != nil || sess.Totals.Compactions == 0 {
		t.Fatalf("the session made no state to delete: %+v %v", sess.Totals, err)
	}
	ds, _, _ := st.Decisions(ctx, "cc:old")
	var hashes, keys []string
	for _, d := range ds {
		if d.Kind == store.KindClear {
			hashes = append(hashes, d.Hashes...)
		}
		if d.Key != "" {
			keys = append(keys, d.Key)
		}
	}
	if len(keys) == 0 {
		t.Fatalf("no originals or summaries to delete (%d decisions)", len(ds))
	}
	p.srv.gc(ctx) // within retention: nothing goes
	if _, err := st.Session(ctx, "cc:old"); err != nil {
		t.Fatalf("retention deleted a live session: %v", err)
	}
	p.srv.cfg.Retain = time.Millisecond
	time.Sleep(5 * time.Millisecond)
	p.srv.gc(ctx)
	if _, err := st.Session(ctx, "cc:old"); err == nil {
		t.Error("the session outlived retention")
	}
	if ds, v, _ := st.Decisions(ctx, "cc:old"); len(ds) != 0 || v != 0 {
		t.Errorf("%d decisions outlived retention", len(ds))
	}
	for _, h := range hashes {
		if _, err := st.Original(ctx, store.OriginalKey("cc:old", h)); err == nil {
			t.Errorf("original %s outlived retention", h)
		}
	}
	for _, k := range keys {
		if _, err := st.Summary(ctx, k); err == nil {
			t.Errorf("summary %s outlived retention", k)
		}
	}
	if m := metricsText(t, p); !strings.Contains(m, "ctxkit_serve_store_bytes ") || strings.Contains(m, "ctxkit_serve_pruned_rows_total 0") {
		t.Errorf("metrics lack the store size or the pruned rows:\n%s", grep(m, "store_bytes|pruned"))
	}
}

// A request the upstream refuses (401) leaves no usage behind: a stranger
// with a bad key cannot grow the store by sending requests.
func TestRefusedCredentialLeavesNoUsage(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	}))
	t.Cleanup(up.Close)
	p := newProxy(t, up.URL, Config{})
	for i := range 5 {
		resp, _ := p.postAs(t, "sk-ant-bogus", fmt.Sprint("s", i), sim{name: "bogus", resultSize: 100}.body(1))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want the upstream's 401", resp.StatusCode)
		}
	}
	if ss, _ := p.store.Sessions(context.Background(), 10); len(ss) != 0 {
		t.Fatalf("refused requests left %d sessions", len(ss))
	}
}

// Proxy keys: an unknown key is refused in the provider's shape before
// the store is touched; a known one goes upstream as the real credential.
func TestProxyKeys(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	keys, err := ParseKeys(strings.NewReader("# team\nproxy-key-alice-0123456789 alice sk-ant-real-upstream\nproxy-key-bob-0123456789 bob\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, up.URL, Config{Keys: keys})
	body := sim{name: "k", resultSize: 100}.body(1)
	resp, data := p.postAs(t, "sk-ant-not-a-proxy-key", "s", body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(data), `"authentication_error"`) {
		t.Fatalf("unknown key: %d %s, want a 401 authentication_error", resp.StatusCode, data)
	}
	if n := len(up.Calls()); n != 0 {
		t.Fatalf("an unknown key's request reached upstream (%d calls)", n)
	}
	if ss, _ := p.store.Sessions(context.Background(), 10); len(ss) != 0 {
		t.Fatalf("an unknown key's request left %d sessions", len(ss))
	}
	resp, data = p.postAs(t, "proxy-key-alice-0123456789", "s", body)
	if resp.StatusCode != 200 {
		t.Fatalf("alice: %d %s", resp.StatusCode, data)
	}
	if h := up.Last().Header; h.Get("X-Api-Key") != "sk-ant-real-upstream" {
		t.Fatalf("alice's request went upstream with x-api-key %q, want the real credential", h.Get("X-Api-Key"))
	}
	// Bob's entry has no upstream credential: his own goes up as it is,
	// his proxy key in X-Ctxkit-Key never does.
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Api-Key", "sk-ant-bobs-own")
	req.Header.Set(HeaderProxyKey, "proxy-key-bob-0123456789")
	r2, err := http.DefaultClient.Do(req)
	if err != nil || r2.StatusCode != 200 {
		t.Fatalf("bob: %v %v", r2, err)
	}
	r2.Body.Close()
	h := up.Last().Header
	if h.Get("X-Api-Key") != "sk-ant-bobs-own" || h.Get(HeaderProxyKey) != "" {
		t.Fatalf("bob's request went upstream with x-api-key %q and %s %q", h.Get("X-Api-Key"), HeaderProxyKey, h.Get(HeaderProxyKey))
	}
	for _, c := range up.Calls() {
		for k, vs := range c.Header {
			for _, v := range vs {
				if strings.Contains(v, "proxy-key-") {
					t.Fatalf("a proxy key went upstream in %s", k)
				}
			}
		}
	}
}
