package llmtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// API names a wire format the server speaks.
type API int

const (
	Anthropic API = iota + 1 // POST /v1/messages
	OpenAI                   // POST /v1/chat/completions
	Responses                // POST /v1/responses
	Gemini                   // POST /v1beta/models/{model}:generateContent, :streamGenerateContent, :countTokens
)

func (a API) String() string {
	switch a {
	case Anthropic:
		return "anthropic"
	case OpenAI:
		return "openai"
	case Responses:
		return "responses"
	case Gemini:
		return "gemini"
	}
	return "unknown"
}

// Config sets up a Server. The zero value is a server with the real
// services' limits and no key check.
type Config struct {
	// APIKey, when set, must come with every request (x-api-key for
	// Anthropic, Authorization: Bearer for OpenAI); otherwise 401.
	APIKey string
	// Window is the most prompt tokens a request may have before it is
	// refused as too long; 0 means 200,000.
	Window int
	// MaxOutput is the largest max_tokens accepted; 0 means 128,000.
	MaxOutput int
	// MinCacheable is the shortest prefix an Anthropic breakpoint caches;
	// 0 means 1,024 (Sonnet's documented minimum).
	MinCacheable int
	// MinCached and CacheStep shape OpenAI's automatic caching: prefixes
	// from MinCached tokens (0: 1,024) are cached, reported in steps of
	// CacheStep tokens (0: 128).
	MinCached int
	CacheStep int
	// NoCache makes the OpenAI side a server without a prompt cache, as
	// Ollama and other OpenAI-compatible servers are: cached_tokens is
	// always 0.
	NoCache bool
	// Chunk is how many bytes of text each stream delta carries; 0: 16.
	Chunk int
	// Now is the clock for cache lifetimes; nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = 200_000
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = 128_000
	}
	if c.MinCacheable <= 0 {
		c.MinCacheable = 1_024
	}
	if c.MinCached <= 0 {
		c.MinCached = 1_024
	}
	if c.CacheStep <= 0 {
		c.CacheStep = 128
	}
	if c.Chunk <= 0 {
		c.Chunk = 16
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Call is one request the server received, as the test sees it afterwards.
type Call struct {
	N      int       // 1-based arrival order
	API    API       // which endpoint
	Time   time.Time // arrival
	Header http.Header
	Body   []byte // the raw request body

	// Decoded from the body when it parsed: the model, whether it asked to
	// stream, the system text, the tool names, and the messages in ctxkit's
	// model (OpenAI tool messages become tool_result blocks of a user
	// message, so both APIs read alike).
	Model  string
	Stream bool
	// MaxTokens is the answer the request asked room for (max_tokens,
	// max_completion_tokens; 0 when it did not say).
	MaxTokens int
	System    string
	Tools     []string
	Messages  []conv.Message

	// What the server answered.
	Status int
	Error  string    // the error message, when Status is not 200
	Fault  FaultKind // the injected fault, if any
	Prompt int       // prompt tokens counted
	Usage  llm.Usage // usage reported, in ctxkit's terms
}

// Rejection is a request the server refused because the real API would
// refuse it.
type Rejection struct {
	Call    *Call
	Message string
}

func (r Rejection) String() string {
	return fmt.Sprintf("request %d (%s): %s", r.Call.N, r.Call.API, r.Message)
}

// Server is an in-process stand-in for the Anthropic, OpenAI (chat
// completions and Responses) and Gemini APIs.
type Server struct {
	// URL is the server's base URL: the Anthropic SDK's base URL; the
	// OpenAI SDK's is URL+"/v1" (see BaseURL).
	URL string

	cfg Config
	hs  *httptest.Server

	mu       sync.Mutex
	queue    []Reply
	handle   func(*Call) Reply
	calls    []*Call
	n        int // requests received, TakeCalls or not
	rejected []Rejection
	anth     *prefixCache
	oai      *prefixCache
	gem      *prefixCache
}

// NewServer starts a server for the test t and closes it at cleanup, when
// it also fails t if any request was rejected and not taken back with
// TakeRejected.
func NewServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s := &Server{cfg: cfg.withDefaults(), anth: newPrefixCache(), oai: newPrefixCache()}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.hs.URL
	t.Cleanup(func() {
		s.hs.CloseClientConnections()
		s.hs.Close()
		if rs := s.Rejected(); len(rs) > 0 {
			var b strings.Builder
			for _, r := range rs {
				fmt.Fprintf(&b, "\n\t%s", r)
			}
			t.Errorf("llmtest: %d request(s) would have been rejected by the real API:%s", len(rs), b.String())
		}
	})
	return s
}

// NewHandler returns a stand-in that is not listening: an http.Handler for
// a server the caller runs itself (ctxkit bench's stand-in upstream for a
// proxy under test, which is not a test). It speaks, validates and bills
// exactly as a server from NewServer does; a request the real API would
// refuse is answered 400 and kept for Rejected, and nothing fails at any
// cleanup. URL is empty and Close does nothing.
func NewHandler(cfg Config) *Server {
	return &Server{cfg: cfg.withDefaults(), anth: newPrefixCache(), oai: newPrefixCache()}
}

// ServeHTTP answers one request as the provider would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r) }

// TakeCalls returns every request received so far and forgets them (and
// the rejections among them), so a long-running stand-in holds no request
// bodies it has handed over.
func (s *Server) TakeCalls() []*Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.calls
	s.calls, s.rejected = nil, nil
	return cs
}

// BaseURL is the base URL an SDK for api is configured with.
func (s *Server) BaseURL(api API) string {
	if api == OpenAI || api == Responses {
		return s.URL + "/v1"
	}
	return s.URL
}

// Enqueue adds replies to answer the next requests with, in order.
func (s *Server) Enqueue(rs ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, rs...)
	s.mu.Unlock()
}

// Handle sets the function that answers requests once the queue is empty.
// Without one, a request gets the text "reply N".
func (s *Server) Handle(f func(*Call) Reply) {
	s.mu.Lock()
	s.handle = f
	s.mu.Unlock()
}

// Calls returns every request received so far, in order.
func (s *Server) Calls() []*Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Call(nil), s.calls...)
}

// Last returns the latest request, or nil.
func (s *Server) Last() *Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil
	}
	return s.calls[len(s.calls)-1]
}

// Rejected returns the requests refused as invalid so far.
func (s *Server) Rejected() []Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Rejection(nil), s.rejected...)
}

// TakeRejected returns the requests refused as invalid and forgets them,
// for tests that send invalid requests on purpose.
func (s *Server) TakeRejected() []Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.rejected
	s.rejected = nil
	return rs
}

// Close shuts the server down; NewServer's cleanup does it too.
func (s *Server) Close() {
	if s.hs == nil {
		return
	}
	s.hs.CloseClientConnections()
	s.hs.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.n++
	c := &Call{N: s.n, Time: time.Now(), Header: r.Header.Clone(), Body: body, API: apiOf(r)}
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	switch c.API {
	case Anthropic:
		s.serveAnthropic(w, r, c)
	case OpenAI:
		s.serveOpenAI(w, r, c)
	case Responses:
		s.serveResponses(w, r, c)
	case Gemini:
		s.serveGemini(w, r, c)
	default:
		s.finish(c, http.StatusNotFound, "Not Found")
		writeJSON(w, http.StatusNotFound, nil, anthropicError("not_found_error", "Not Found", ""))
	}
}

func apiOf(r *http.Request) API {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		return Anthropic
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		return OpenAI
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		return Responses
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1beta/models/"):
		return Gemini
	}
	return 0
}

// finish records the answer to c.
func (s *Server) finish(c *Call, status int, msg string) {
	s.mu.Lock()
	c.Status, c.Error = status, msg
	s.mu.Unlock()
}

// reject records c as refused by the validator.
func (s *Server) reject(c *Call, msg string) {
	s.mu.Lock()
	c.Status, c.Error = http.StatusBadRequest, msg
	s.rejected = append(s.rejected, Rejection{Call: c, Message: msg})
	s.mu.Unlock()
}

// next picks the reply for c — the queue first, then the handler, then
// the default text — and records the fault it carries on c.
func (s *Server) next(c *Call) Reply {
	r := s.pick(c)
	if r.Fault != nil {
		s.mu.Lock()
		c.Fault = r.Fault.Kind
		s.mu.Unlock()
	}
	return r
}

func (s *Server) pick(c *Call) Reply {
	s.mu.Lock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return r
	}
	h := s.handle
	s.mu.Unlock()
	if h != nil {
		return h(c)
	}
	return Text(fmt.Sprintf("reply %d", c.N))
}

// overWindow sums the prompt's tokens and reports whether it exceeds the
// window (over), or fits but leaves less than maxTokens for the answer
// (answerOver: the window holds both; 0 when the API does not check it);
// either way the size is recorded on c (the API's own error goes back).
func (s *Server) overWindow(c *Call, ps []position, maxTokens int) (prompt int, over, answerOver bool) {
	for _, p := range ps {
		prompt += p.tokens
	}
	over, answerOver = prompt > s.cfg.Window, prompt <= s.cfg.Window && prompt+maxTokens > s.cfg.Window
	if over || answerOver {
		s.mu.Lock()
		c.Prompt = prompt
		s.mu.Unlock()
	}
	return prompt, over, answerOver
}

// record stores the counted prompt and the reported usage of c.
func (s *Server) record(c *Call, prompt int, u llm.Usage) {
	s.mu.Lock()
	c.Prompt, c.Usage = prompt, u
	s.mu.Unlock()
}

// wait sleeps d or until the client goes away; it reports whether the
// client is still there.
func wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// retryAfter formats d as the retry-after header does: seconds,
// fractional below one second so that tests can stay fast.
func retryAfter(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprint(int64(d / time.Second))
	}
	return fmt.Sprintf("%g", d.Seconds())
}

// chunks splits s into pieces of about n bytes on rune boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
