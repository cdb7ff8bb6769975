package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a Server.
type Config struct {
	// AnthropicUpstream is the Anthropic API's base URL (default
	// https://api.anthropic.com); OpenAIUpstream the OpenAI API's, with
	// its /v1 (default https://api.openai.com/v1).
	AnthropicUpstream string
	OpenAIUpstream    string
	// GeminiUpstream is the Gemini API's base URL, without its /v1beta
	// (default https://generativelanguage.googleapis.com).
	GeminiUpstream string
	// Window is the context window in tokens; 0: each request's model's
	// window from the llm package's model table (llm.DefaultWindow for a
	// model it does not know). A request goes upstream at most at
	// compact's hard limit for it: the window less the request's
	// max_tokens (at most 20,000, at most half the window), less the
	// token counter's error (compact.Config.Budget).
	Window int
	// Store keeps sessions and decisions; required.
	Store store.Store
	// Policy decides when consumed tool results are cleared (rung 2):
	// nil is the engine's default, cache-aware on the provider's prices.
	// Every other decision is the engine's (package engine), with its
	// defaults.
	Policy micro.Policy
	// KeepValue is the engine's knob between cost and recall
	// (engine.Config.KeepValue; 0: its default), the same for every
	// tenant: ctxkit bench --frontier shows what each setting costs.
	KeepValue float64
	// SummaryModel writes summaries; empty: the request's own model.
	SummaryModel string
	// FailClosed answers 502 when the engine fails on a request, instead
	// of forwarding it unchanged.
	FailClosed bool
	// MaxBody is the largest request body accepted (default 32 MB).
	MaxBody int64
	// Prices values tokens for the dollars-saved estimate (default
	// Anthropic's list prices).
	Prices *pricing.Table
	// Client sends upstream requests (default: a client with no timeout;
	// the client's own disconnect cancels). Redirects are never followed,
	// whatever its CheckRedirect: they go back to the client as they came.
	Client *http.Client
	Logger *slog.Logger
	// Clock is when a request arrives, the time the engine judges the
	// provider's cache lifetime by (engine.Config.Clock); time.Now when
	// nil. The bench's replay sets it to the recorded time of each request,
	// as it does for the engine it replays directly.
	Clock func() time.Time
	// ReplayClock: a request's HeaderReplayTime, when it has one, is its
	// time instead of Clock's (ctxkit serve --replay-clock, for ctxkit
	// bench --proxy; never on a proxy others use: a client would set the
	// time its own requests are judged by).
	ReplayClock bool

	// Keys, if not nil, are the proxy keys a request must carry (ctxkit
	// serve --keys); nil: the client's credential names its tenant.
	Keys *Keys
	// AllowedHosts are the Host header values (host names, no port)
	// accepted; "*" accepts any. Default: the loopback names. See
	// AllowedHosts.
	AllowedHosts []string
	// Retain is how long state is kept after its session's last request
	// (default 30 days); Maintain deletes what is older.
	Retain time.Duration
	// BodyTimeout bounds the time to receive a request's body (default 2
	// minutes); MaxInFlight the bodies being received at once (default
	// 64; more wait for a slot, holding no buffer).
	BodyTimeout time.Duration
	MaxInFlight int
}

// DefaultRetain is how long ctxkit serve keeps state by default.
const DefaultRetain = 30 * 24 * time.Hour

// Server is the proxy: an http.Handler.
type Server struct {
	cfg       Config
	root      store.Store // every tenant's state: reached only through st(ctx)
	hosts     []string
	slots     chan struct{} // bodies being read
	anthropic *url.URL
	openai    *url.URL
	geminiUp  *url.URL
	m         *metrics
	log       *slog.Logger
	mux       *http.ServeMux

	parses  *parseCache
	mirrors *mirrors          // the engine's state per conversation, a cache
	counter *tokens.Estimator // the project's token estimator

	secretMu  sync.Mutex
	secretVal []byte

	onLatency func(time.Duration) // tests: sees every added latency

	errs atomic.Int64 // requests answered with an error since the start (status page)
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("serve: no store")
	}
	if cfg.AnthropicUpstream == "" {
		cfg.AnthropicUpstream = "https://api.anthropic.com"
	}
	if cfg.OpenAIUpstream == "" {
		cfg.OpenAIUpstream = "https://api.openai.com/v1"
	}
	if cfg.GeminiUpstream == "" {
		cfg.GeminiUpstream = "https://generativelanguage.googleapis.com"
	}
	if cfg.Window < 0 {
		cfg.Window = 0
	}
	if err := engine.CheckKeepValue(cfg.KeepValue); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 32 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Prices == nil {
		p := pricing.Anthropic()
		cfg.Prices = &p
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
			ForceAttemptHTTP2: true, ResponseHeaderTimeout: 0,
		}}
	}
	// Upstream redirects go back to the client unchanged: following one
	// would send the key (and on 307/308 the prompt) to another host.
	c := *cfg.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cfg.Client = &c
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retain <= 0 {
		cfg.Retain = DefaultRetain
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 2 * time.Minute
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64
	}
	var hosts []string
	for _, h := range cfg.AllowedHosts {
		hosts = append(hosts, strings.ToLower(strings.Trim(h, "[]")))
	}
	if len(hosts) == 0 {
		hosts = loopbackHosts
	}
	s := &Server{cfg: cfg, root: cfg.Store, hosts: hosts, slots: make(chan struct{}, cfg.MaxInFlight), m: newMetrics(), log: cfg.Logger,
		parses: newParseCache(), mirrors: newMirrors(), counter: tokens.NewEstimator()}
	// State is reached only through the request's tenant (s.st(ctx)):
	// code that reaches for the store without one gets errors, not
	// another tenant's rows.
	s.cfg.Store = unscoped{}
	var err error
	if s.anthropic, err = parseUpstream(cfg.AnthropicUpstream); err != nil {
		return nil, fmt.Errorf("--anthropic-upstream: %w", err)
	}
	if s.openai, err = parseUpstream(cfg.OpenAIUpstream); err != nil {
		return nil, fmt.Errorf("--openai-upstream: %w", err)
	}
	if s.geminiUp, err = parseUpstream(cfg.GeminiUpstream); err != nil {
		return nil, fmt.Errorf("--gemini-upstream: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.engine(providerAnthropic, "messages"))
	mux.HandleFunc("POST /v1/chat/completions", s.engine(providerOpenAI, "chat"))
	mux.HandleFunc("POST /v1/responses", s.engine(providerOpenAI, "responses"))
	mux.HandleFunc("POST /v1beta/models/{call}", s.gemini)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /{$}", s.status)
	mux.HandleFunc("/", s.passthrough)
	s.mux = mux
	return s, nil
}

func parseUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// window is the context window of a request for model: Config.Window if
// set, else the model's own.
func (s *Server) window(model string) int {
	if s.cfg.Window > 0 {
		return s.cfg.Window
	}
	return llm.LookupModel(model).Window
}

const (
	providerAnthropic = "anthropic"
	providerOpenAI    = "openai"
)

// ServeHTTP implements http.Handler. A request whose Host (or a
// browser's Origin) is not this proxy's is refused before anything else.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r) {
		s.m.requests.WithLabelValues(providerOf(r), "any", "forbidden_host").Inc()
		http.Error(w, "ctxkit serve: Host "+jsonQuote(r.Host)+" is not this proxy's (ctxkit serve --allowed-hosts)", http.StatusForbidden)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func jsonQuote(s string) string { return string(jsonString(textfmt.Clip(s, 100))) }

// upstreamURL maps the client's path onto the provider's base URL.
func (s *Server) upstreamURL(provider string, in *url.URL) string {
	base := s.anthropic
	path := in.Path
	switch provider {
	case providerOpenAI:
		base = s.openai
		path = strings.TrimPrefix(path, "/v1")
	case providerGemini:
		base = s.geminiUp
	}
	u := *base
	u.Path = base.Path + path
	u.RawQuery = in.RawQuery
	return u.String()
}

func providerOf(r *http.Request) string {
	if r.Header.Get("X-Goog-Api-Key") != "" || strings.HasPrefix(r.URL.Path, "/v1beta/") || strings.HasPrefix(r.URL.Path, "/upload/v1beta/") {
		return providerGemini
	}
	if r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "" || strings.HasPrefix(r.URL.Path, "/v1/messages") {
		return providerAnthropic
	}
	if strings.HasPrefix(r.URL.Path, "/v1/chat/") || strings.HasPrefix(r.URL.Path, "/v1/responses") ||
		strings.HasPrefix(r.URL.Path, "/v1/embeddings") || strings.HasPrefix(r.URL.Path, "/v1/completions") {
		return providerOpenAI
	}
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return providerOpenAI
	}
	return providerAnthropic
}

// passthrough forwards any other request byte for byte.
func (s *Server) passthrough(w http.ResponseWriter, r *http.Request) {
	provider := providerOf(r)
	if s.cfg.Keys != nil {
		if _, ok := s.admit(w, r, provider); !ok {
			return
		}
	}
	s.m.requests.WithLabelValues(provider, "other", "passthrough").Inc()
	s.forward(w, r, provider, r.Body, r.ContentLength, nil, nil)
}

// hop-by-hop headers are the connection's, not the request's (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends the request upstream with body and copies the answer back.
// Headers go as upstreamHeader leaves them; the client's disconnect
// cancels the upstream call. observe, if not nil,
// sees the response bytes as they pass.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, provider string, body io.Reader, n int64, again func(status int, body []byte) (io.Reader, int64, bool), observe func(status int, h http.Header) io.Writer) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, s.upstreamURL(provider, r.URL), body)
	if err != nil {
		s.fail(w, provider, http.StatusBadGateway, "api_error", "ctxkit serve: bad upstream request: "+err.Error())
		return
	}
	out.Header = upstreamHeader(r.Header)
	out.ContentLength = n
	if sr, ok := body.(*splicedReader); ok {
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(sr.x.reader()), nil }
	}
	resp, err := s.cfg.Client.Do(out)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away; nothing to answer
		}
		s.log.Warn("upstream unreachable", "provider", provider, "path", r.URL.Path, "err", redact(err))
		s.fail(w, provider, http.StatusBadGateway, "api_error", "ctxkit serve: upstream unreachable: "+redact(err))
		return
	}
	defer resp.Body.Close()
	if again != nil && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge) {
		// An error answer that may refuse the request for its size:
		// read (at most maxRefusal bytes) before anything reaches the
		// client, who gets it as it came unless it goes again.
		buf, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusal+1))
		if err == nil && len(buf) <= maxRefusal {
			if body, n, ok := again(resp.StatusCode, buf); ok {
				s.forward(w, r, provider, body, n, nil, observe)
				return
			}
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), resp.Body), resp.Body}
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	if resp.Uncompressed {
		w.Header().Del("Content-Encoding")
		w.Header().Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	var dst io.Writer = w
	if observe != nil {
		if o := observe(resp.StatusCode, resp.Header); o != nil {
			dst = io.MultiWriter(w, o)
		}
	}
	if err := copyFlush(dst, w, resp.Body); err != nil && r.Context().Err() == nil {
		// The upstream broke off mid-response: break the client's response
		// too, rather than end it cleanly and hide the cut.
		s.log.Warn("upstream response cut", "provider", provider, "path", r.URL.Path, "err", redact(err))
		panic(http.ErrAbortHandler)
	}
}

// copyFlush copies src to dst, flushing after every read so server-sent
// events (pings included) reach the client as they arrive.
// It returns the upstream's read error, nil at a clean end.
func copyFlush(dst io.Writer, w http.ResponseWriter, src io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			_ = rc.Flush() // a writer that cannot flush still gets every byte
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// redact keeps URLs' userinfo and query out of logged errors.
func redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// fail answers an error in the provider's error shape.
func (s *Server) fail(w http.ResponseWriter, provider string, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch provider {
	case providerOpenAI:
		fmt.Fprintf(w, `{"error":{"message":%s,"type":%q,"param":null,"code":%q}}`, jsonString(msg), typ, typ)
		return
	case providerGemini:
		fmt.Fprintf(w, `{"error":{"code":%d,"message":%s,"status":%q}}`, status, jsonString(msg), geminiStatus(status))
		return
	}
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%s}}`, typ, jsonString(msg))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	if _, _, err := s.root.Decisions(ctx, "healthz"); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"status":"degraded","store":%s}`, jsonString(err.Error()))
		return
	}
	io.WriteString(w, `{"status":"ok"}`)
}

// NewHTTPServer returns the http.Server ctxkit serve runs h in: a request's
// headers must arrive within 10 seconds and an idle connection closes
// after two minutes (the body's deadline is Config.BodyTimeout, set per
// request; responses have none, as a stream may run long).
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 1 << 20}
}

// readBody reads at most MaxBody bytes as they arrive: memory grows with
// the bytes received, never ahead of them on an announced Content-Length.
// At most MaxInFlight bodies are read at once, each within BodyTimeout.
// ok false means it answered (413, 408) or the client went away.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, provider string) ([]byte, bool) {
	if r.ContentLength > s.cfg.MaxBody {
		s.tooLarge(w, provider)
		return nil, false
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-r.Context().Done():
		return nil, false
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	// The deadline is the body's only: the connection's read for the
	// client going away (which cancels the request) must not hit it.
	defer rc.SetReadDeadline(time.Time{})
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, 64<<10)))
	}
	_, err := buf.ReadFrom(body)
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		s.tooLarge(w, provider)
		return nil, false
	case errors.As(err, &ne) && ne.Timeout():
		s.m.requests.WithLabelValues(provider, "any", "body_timeout").Inc()
		w.Header().Set("Connection", "close")
		s.fail(w, provider, http.StatusRequestTimeout, "request_timeout", fmt.Sprintf("ctxkit serve: the request body did not arrive within %s", s.cfg.BodyTimeout))
		return nil, false
	case err != nil:
		return nil, false // the client went away mid-body
	}
	return buf.Bytes(), true
}

func (s *Server) tooLarge(w http.ResponseWriter, provider string) {
	s.m.requests.WithLabelValues(provider, "any", "rejected").Inc()
	s.fail(w, provider, http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("Request exceeds the maximum allowed number of bytes (%d; ctxkit serve --max-body).", s.cfg.MaxBody))
}
