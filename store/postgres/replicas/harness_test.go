package replicas

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/serve"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/postgres/pgtest"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

var pg pgtest.Shared

func TestMain(m *testing.M) {
	code := pg.Main(m)
	if buildOnce.path != "" {
		os.RemoveAll(filepath.Dir(buildOnce.path))
	}
	os.Exit(code)
}

// window is the proxy's context window in the tests: small enough that a
// 20-turn session crosses the clearing and the compaction thresholds (the
// engine's: the eager policy clears early, and the engine compacts before
// the hard threshold).
const window = 48000

// agent is a scripted coding agent: each turn it reads a file with cat
// (8 kB of tool result; a shell read, which micro does not preserve as it
// does a Read tool's until stale) after a paragraph of reasoning, and resends its whole
// history, as Claude Code does. Its history is its own (the upstream's
// replies are not added), so two runs send the same bytes.
type agent struct {
	session string
	msgs    []string // raw JSON messages
	key     string   // the API key it sends (default agentKey)
	system  string   // its system prompt (default "You are a coding agent.")
}

// agentKey is the API key agents send unless told otherwise.
const agentKey = "sk-ant-test-dummy"

// tenantView is st as the tenant of key sees it.
func tenantView(t testing.TB, st store.Store, key string) store.Store {
	t.Helper()
	v, err := store.Scope(st, tenantID(t, st, key))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tenantID is the tenant the proxy gives key's requests.
func tenantID(t testing.TB, st store.Store, key string) string {
	t.Helper()
	secret, err := st.Secret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, err := serve.TenantOf(secret, nil, key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newAgent(session string) *agent {
	return &agent{session: session, msgs: []string{`{"role":"user","content":"Read the files f0.go … f29.go and tell me what the package does."}`}}
}

func (a *agent) turn(k int) {
	// The session's name in every turn: sessions share no content, so no
	// summary or original is shared between them by content hash.
	reasoning := strings.Repeat(fmt.Sprintf("Step %d of %s: the previous file declares types used by the next. ", k, a.session), 75)
	input := fmt.Sprintf(`{"command":"cat f%d.go"}`, k)
	a.msgs = append(a.msgs,
		fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q},{"type":"tool_use","id":"toolu_%02d","name":"Bash","input":%s}]}`, reasoning, k, input),
		fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%02d","content":%q}]}`, k, fileBody(k)))
}

func fileBody(k int) string {
	var b strings.Builder
	for i := 0; b.Len() < 8000; i++ {
		fmt.Fprintf(&b, "func F%d_%d(x int) int { return x*%d + %d } // file %d\n", k, i, i, k, k)
	}
	return b.String()
}

func (a *agent) body(stream bool) []byte {
	system := a.system
	if system == "" {
		system = "You are a coding agent."
	}
	return fmt.Appendf(nil, `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%t,"system":%q,"tools":[`+
		`{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}},`+
		`{"name":"recall","description":"Get back a cleared tool result","input_schema":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}],`+
		`"messages":[%s]}`, stream, system, strings.Join(a.msgs, ","))
}

// send posts the agent's request to a replica and reads the whole answer.
func (a *agent) send(ctx context.Context, base string, stream bool) (int, []byte, error) {
	return a.sendWith(ctx, base, stream, nil)
}

// request is the agent's request to a replica, with extra headers.
func (a *agent) request(ctx context.Context, base string, stream bool, h http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/messages", bytes.NewReader(a.body(stream)))
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	key := a.key
	if key == "" {
		key = agentKey
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("x-claude-code-session-id", a.session)
	return req, nil
}

// sendWith is send with extra headers.
func (a *agent) sendWith(ctx context.Context, base string, stream bool, h http.Header) (int, []byte, error) {
	req, err := a.request(ctx, base, stream, h)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// upstream is an llmtest Anthropic server answering every request with a
// short text (summaries included), optionally stalling one request.
type upstream struct {
	*llmtest.Server
	mu    sync.Mutex
	stall func(*llmtest.Call) bool
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{Server: llmtest.NewServer(t, llmtest.Config{})}
	u.Handle(func(c *llmtest.Call) llmtest.Reply {
		u.mu.Lock()
		stall := u.stall != nil && u.stall(c)
		if stall {
			u.stall = nil
		}
		u.mu.Unlock()
		if stall {
			return llmtest.Fail(llmtest.Fault{Kind: llmtest.Stall, Events: 1, Delay: 30 * time.Second})
		}
		if isSummary(c) {
			return llmtest.Text(fmt.Sprintf("The agent read %d messages of Go files f*.go; nothing is open.", len(c.Messages)))
		}
		return llmtest.Text("ok")
	})
	return u
}

// stallNext makes the next request that f accepts stall mid-stream.
func (u *upstream) stallNext(f func(*llmtest.Call) bool) {
	u.mu.Lock()
	u.stall = f
	u.mu.Unlock()
}

// waitStalled waits until the request stallNext chose has arrived and
// is stalling.
func (u *upstream) waitStalled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		u.mu.Lock()
		done := u.stall == nil
		u.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the request to stall never reached the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isSummary: the proxy's summary requests, on a transcript or on the
// client's own request (the instruction starts with SummaryPrompt).
func isSummary(c *llmtest.Call) bool { return bytes.Contains(c.Body, []byte(serve.SummaryPrompt)) }

// forwarded are the bodies of the agent requests the upstream received
// (summary requests left out), in arrival order.
func (u *upstream) forwarded() [][]byte {
	var out [][]byte
	for _, c := range u.Calls() {
		if !isSummary(c) {
			out = append(out, c.Body)
		}
	}
	return out
}

func (u *upstream) summaries() int {
	n := 0
	for _, c := range u.Calls() {
		if isSummary(c) {
			n++
		}
	}
	return n
}

// replica is an in-process ctxkit serve on its own connection pool.
type replica struct {
	URL   string
	store *postgres.Store
	hs    *httptest.Server
}

func startReplica(t *testing.T, dsn string, up *upstream) *replica {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, st, up)
}

func serveOn(t testing.TB, st store.Store, up *upstream) *replica {
	t.Helper()
	// The eager clearing policy: the faults are aimed at the turns that
	// clear and compact, and a 20-turn session is too short for the
	// cache-aware rule to clear before compaction (micro's doc).
	srv, err := serve.New(serve.Config{AnthropicUpstream: up.URL, Window: window, Store: st,
		Policy: micro.Eager{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	r := &replica{URL: hs.URL, hs: hs}
	r.store, _ = st.(*postgres.Store)
	t.Cleanup(func() {
		hs.Close()
		st.Close()
	})
	return r
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the sum of a Prometheus counter's series on /metrics.
func metric(t *testing.T, base, name string) float64 {
	_, body := get(t, base+"/metrics")
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			sum += v
		}
	}
	return sum
}

// ctxkitBinary builds ./cmd/ctxkit once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
}

func ctxkitBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ctxkit-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "ctxkit")
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out, err := exec.Command(gobin, "build", "-o", buildOnce.path, "github.com/ctxkit/ctxkit/cmd/ctxkit").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build ./cmd/ctxkit: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// process is `ctxkit serve` running as its own process.
type process struct {
	URL string
	cmd *exec.Cmd
}

func startProcess(t *testing.T, dsn string, up *upstream) *process {
	t.Helper()
	cmd := exec.Command(ctxkitBinary(t), "serve", "--listen", "127.0.0.1:0", "--store", dsn,
		"--anthropic-upstream", up.URL, "--window", fmt.Sprint(window), "--policy", "eager")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		t.Fatalf("ctxkit serve did not start: %v\n%s", err, stderr.String())
	}
	_, addr, ok := strings.Cut(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	if !ok {
		t.Fatalf("ctxkit serve's first line %q names no address", line)
	}
	p.URL = addr
	go io.Copy(io.Discard, stdout)
	return p
}

// countPlaceholders counts cleared tool results in a forwarded body.
func countPlaceholders(body []byte) int { return bytes.Count(body, []byte("[cleared: ")) }

func hasSummary(body []byte) bool { return bytes.Contains(body, []byte(`[Summary of turns`)) }

func mustJSON(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("not JSON: %.200s", b)
	}
}

// profile plays n turns of the agent's session through one replica on the
// embedded store and returns what went upstream, with the first turn that
// cleared and the first that compacted (-1: none): the tests aim their
// faults at those turns whatever the proxy's policy.
type profile struct {
	forwarded                [][]byte
	firstClear, firstCompact int
}

func profileOf(t *testing.T, session string, n int) profile {
	t.Helper()
	up := newUpstream(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	r := serveOn(t, st, up)
	a := newAgent(session)
	for k := range n {
		a.turn(k)
		if status, body, err := a.send(context.Background(), r.URL, false); err != nil || status != 200 {
			t.Fatalf("profile turn %d: %d %v %.300s", k, status, err, body)
		}
	}
	p := profile{forwarded: up.forwarded(), firstClear: -1, firstCompact: -1}
	for k, b := range p.forwarded {
		if p.firstClear < 0 && countPlaceholders(b) > 0 {
			p.firstClear = k
		}
		if p.firstCompact < 0 && hasSummary(b) {
			p.firstCompact = k
		}
	}
	if p.firstClear < 0 || p.firstCompact < 0 {
		t.Fatalf("in %d turns the proxy cleared first at turn %d and compacted first at %d: the tests need both", n, p.firstClear, p.firstCompact)
	}
	return p
}

// rewrites are the decisions in ds that change requests (not what the
// proxy observed of the provider's responses, store.KindObserved).
func rewrites(ds []store.Decision) []store.Decision {
	var out []store.Decision
	for _, d := range ds {
		if d.Kind != store.KindObserved {
			out = append(out, d)
		}
	}
	return out
}
