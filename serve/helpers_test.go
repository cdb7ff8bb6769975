package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/mcp"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/tokens"
)

// echoUpstream answers every request with reply and keeps the bodies it
// received.
func echoUpstream(t testing.TB, reply string) (*httptest.Server, func() [][]byte) {
	var mu sync.Mutex
	var got [][]byte
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}))
	t.Cleanup(hs.Close)
	return hs, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}
}

// proxy is a ctxkit serve under test.
type proxy struct {
	*httptest.Server
	srv   *Server
	store store.Store
}

func openStore(t testing.TB, path string) store.Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "serve.db")
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newProxy(t testing.TB, upstream string, cfg Config) *proxy {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = openStore(t, "")
	}
	cfg.AnthropicUpstream = upstream
	if cfg.OpenAIUpstream == "" {
		cfg.OpenAIUpstream = upstream + "/v1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &proxy{Server: hs, srv: srv, store: cfg.Store}
}

// testKey is the API key post sends.
const testKey = "sk-ant-test-secret"

// tenantOf is the tenant id the proxy gives requests carrying key.
func tenantOf(t testing.TB, st store.Store, key string) string {
	t.Helper()
	secret, err := st.Secret(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return store.Tenant(secret, labelCredential, key)
}

// scoped is st as the tenant of key sees it.
func scoped(t testing.TB, st store.Store, key string) store.Store {
	t.Helper()
	v, err := store.Scope(st, tenantOf(t, st, key))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tenantOf is the proxy's store as requests carrying key see it.
func (p *proxy) tenantOf(key string, t testing.TB) store.Store { return scoped(t, p.store, key) }

// tenant is the proxy's store as post's requests see it.
func (p *proxy) tenant(t testing.TB) store.Store { return scoped(t, p.store, testKey) }

// original is the original stored for the block whose content hash is
// hash, found as ctxkit mcp finds it, by its recall id (the hash's first
// idLen digits: the tests' blocks share no prefix).
func (p *proxy) original(t testing.TB, hash string) (store.Original, error) {
	return mcp.Original(context.Background(), mcp.Scope{Store: p.tenant(t)}, hash[:idLen])
}

// tenantContext is the context a request of post's carries into prepare.
func (p *proxy) tenantContext(t testing.TB) context.Context {
	return context.WithValue(context.Background(), tenantKey{}, tenantScope{id: tenantOf(t, p.store, testKey), st: p.tenant(t)})
}

// post sends body to the proxy as Claude Code would.
func (p *proxy) post(t testing.TB, path, session string, body []byte) (*http.Response, []byte) {
	t.Helper()
	return p.postWith(t, path, session, body, nil)
}

// postWith is post with the headers extra besides.
func (p *proxy) postWith(t testing.TB, path, session string, body []byte, extra http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", testKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "context-management-2025-06-27,interleaved-thinking-2025-05-14")
	if session != "" {
		req.Header.Set("X-Claude-Code-Session-Id", session)
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// sim builds the requests of a Claude Code-like session: a system prompt
// with a cache breakpoint, tools, thinking enabled, context_management, an
// unknown field, key orders and spacing of its own, and n tool rounds whose
// results are big; the newest block carries the moving cache breakpoint.
type sim struct {
	name       string
	resultSize int    // bytes per tool result
	recall     bool   // offer an MCP recall tool
	say        int    // bytes of assistant text per turn
	opening    string // client text before the task in the first message (a CLAUDE.md reminder)
	words      int    // every words turns the user says something with the tool result (0: never)
}

// said is what the user says with turn i's tool result, "" when nothing.
func (s sim) said(i int) string {
	if s.words == 0 || i%s.words != 0 {
		return ""
	}
	return fmt.Sprintf("Also keep the API of pkg%d stable.", i)
}

func (s sim) text(i int) string {
	t := fmt.Sprintf("Step %d.", i)
	for len(t) < s.say {
		t += fmt.Sprintf(" Reasoning about step %d of %s.", i, s.name)
	}
	return t
}

func (s sim) result(i int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s result %d\n", s.name, i)
	for j := 0; sb.Len() < s.resultSize; j++ {
		fmt.Fprintf(&sb, "%s line %d of result %d: func F%d() { return %d }\n", s.name, j, i, j, i*j)
	}
	return sb.String()
}

func q(s string) string { return string(jsonString(s)) }

// body is the request after n tool rounds.
func (s sim) body(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":1024,"diagnostics":{"z":2,"a":1},`)
	b.WriteString(`"system":[{"type":"text","text":"You are Claude Code. ` + s.name + `","cache_control":{"type":"ephemeral"}}],`)
	tools := `{"name":"Bash","description":"run","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},` +
		`{"name":"Read","description":"read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}`
	if s.recall {
		tools += `,{"name":"mcp__ctxkit__recall","description":"recall","input_schema":{"type":"object","properties":{"id":{"type":"string"}}}}`
	}
	b.WriteString(`"tools":[` + tools + `],`)
	b.WriteString(`"thinking":{"type":"enabled","budget_tokens":512},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},`)
	b.WriteString(`"metadata":{"user_id":"user_abc_account_def_session_` + s.name + `"},`)
	b.WriteString("\"messages\": [\n  ")
	last := func(i int) string {
		if i == n {
			return `,"cache_control":{"type":"ephemeral"}`
		}
		return ""
	}
	opening := ""
	if s.opening != "" {
		opening = `{"type":"text","text":` + q(s.opening) + `},`
	}
	b.WriteString(`{"role":"user","content":[` + opening + `{"type":"text","text":` + q("Task for "+s.name+": fix the failing tests.") + last(0) + `}]}`)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%s_%d", s.name, i)
		th := fmt.Sprintf("I should look at step %d.", i)
		tool, input := "Bash", fmt.Sprintf(`{"command":"go test ./pkg%d/..."}`, i)
		if i%2 == 0 {
			tool, input = "Read", fmt.Sprintf(`{"file_path":"/repo/pkg%d/file.go"}`, i)
		}
		fmt.Fprintf(&b, ",\n  {\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":%s,\"signature\":%s},{\"type\":\"text\",\"text\":%s},{\"type\":\"tool_use\",\"id\":%q,\"name\":%q,\"input\":%s}]}",
			q(th), q(llmtest.Signature(th)), q(s.text(i)), id, tool, input)
		if w := s.said(i); w != "" {
			fmt.Fprintf(&b, ",\n  {\"content\":[{\"tool_use_id\":%q,\"type\":\"tool_result\",\"content\":%s},{\"type\":\"text\",\"text\":%s%s}],\"role\":\"user\"}", id, q(s.result(i)), q(w), last(i))
			continue
		}
		fmt.Fprintf(&b, ",\n  {\"content\":[{\"tool_use_id\":%q,\"type\":\"tool_result\",\"content\":%s%s}],\"role\":\"user\"}", id, q(s.result(i)), last(i))
	}
	b.WriteString("\n],\"stream\":false}")
	return b.Bytes()
}

// summaryAware answers the proxy's summary requests with a summary and
// everything else with text.
func summaryAware(c *llmtest.Call) llmtest.Reply {
	if isSummaryCall(c) {
		return llmtest.Text("Goal: fix the failing tests. Done: ran go test in several packages; read files.")
	}
	return llmtest.Text(fmt.Sprintf("ok %d", c.N))
}

// isSummaryCall reports whether c is one of the proxy's summary requests:
// a transcript (SummaryPrompt is its system prompt) or the client's own
// request with the instruction (which starts with SummaryPrompt) appended.
func isSummaryCall(c *llmtest.Call) bool { return bytes.Contains(c.Body, []byte(SummaryPrompt)) }

// recallMark is the recall id the engine leaves where it took something
// out: a placeholder, a cut, an index line.
var recallMark = regexp.MustCompile(`recall [0-9a-f]{6,16}`)

// countBody is a request body's tokens as the engine counts them: its
// messages, system prompt and tools, each part with the project's
// estimator, images at their fixed cost.
func countBody(t testing.TB, body []byte) int {
	t.Helper()
	var req *request
	var err error
	switch {
	case bytes.Contains(body, []byte(`"input":[`)):
		req, err = parseResponses(body)
	case bytes.Contains(body, []byte(`"system":`)) || !bytes.Contains(body, []byte(`"role":"system"`)) && !bytes.Contains(body, []byte(`"tool_calls"`)) && !bytes.Contains(body, []byte(`"role":"tool"`)):
		req, err = parseAnthropic(body)
	default:
		req, err = parseChat(body)
	}
	if err != nil {
		t.Fatalf("counting a body: %v", err)
	}
	c := &conv.Conversation{}
	m := &mirror{c: c}
	m.setFixed(req)
	counter := tokens.NewEstimator()
	n := c.Tokens(counter).Total()
	for _, msg := range req.Messages {
		r := roleOf(msg.Role)
		if r == "" {
			continue
		}
		for _, p := range partsOf(req.Body, msg) {
			b := convBlock(req.Body, msg, p, r)
			n += conv.BlockTokens(&b, counter)
		}
		n += 4
	}
	return n
}

// rewrites are the decisions in ds that change requests (not the
// provider's reports the engine observed, store.KindObserved and
// store.KindRefused).
func rewrites(ds []store.Decision) []store.Decision {
	var out []store.Decision
	for _, d := range ds {
		if d.Kind != store.KindObserved && d.Kind != store.KindRefused {
			out = append(out, d)
		}
	}
	return out
}
