package serve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Tenants. Everything the proxy keeps — sessions, decisions, summaries,
// originals, usage — belongs to the tenant of the request that made it,
// and a request reads only its own tenant's state (store.Scope). The
// tenant is an HMAC of the credential the client presented, keyed with the
// install's secret kept in the store: the key itself is never stored, and
// two people sharing a proxy share nothing but the process, whatever
// session ids or content their requests have in common.
//
// With proxy keys (Config.Keys, ctxkit serve --keys FILE), a request must
// carry a known proxy key; its tenant is the one the key names, and the
// proxy may put the real upstream credential in its place. An unknown key
// is answered 401 in the provider's shape before anything is read or
// stored.

// Labels under which credentials become tenants, so that a proxy key's
// tenant name never collides with someone's API key.
const (
	labelCredential = "credential"
	labelProxyKey   = "proxy-key"
)

// HeaderProxyKey carries a proxy key when the client's own credential
// goes upstream as it is (Claude Code: ANTHROPIC_CUSTOM_HEADERS).
const HeaderProxyKey = "X-Ctxkit-Key"

// Keys maps proxy keys to tenants: ctxkit serve --keys FILE.
type Keys struct {
	byHash map[[sha256.Size]byte]keyEntry
}

type keyEntry struct {
	tenant   string // the tenant's name in the file
	upstream string // the credential the proxy sends upstream instead ("" : the client's own)
}

// Len is the number of proxy keys.
func (k *Keys) Len() int { return len(k.byHash) }

// LoadKeys reads a keys file: one proxy key a line, "KEY TENANT
// [UPSTREAM]", where UPSTREAM is the real credential the proxy sends in
// its place (literally, or env:NAME for an environment variable's value).
// Blank lines and lines starting with # are skipped.
func LoadKeys(path string) (*Keys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--keys: %w", err)
	}
	defer f.Close()
	k, err := ParseKeys(f)
	if err != nil {
		return nil, fmt.Errorf("--keys %s: %w", path, err)
	}
	return k, nil
}

// ParseKeys reads a keys file's lines (see LoadKeys).
func ParseKeys(r io.Reader) (*Keys, error) {
	k := &Keys{byHash: map[[sha256.Size]byte]keyEntry{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("line %d: want KEY TENANT [UPSTREAM-CREDENTIAL], got %d fields", n, len(f))
		}
		if len(f[0]) < 16 {
			return nil, fmt.Errorf("line %d: a proxy key must be at least 16 characters (make one with: openssl rand -hex 24)", n)
		}
		e := keyEntry{tenant: f[1]}
		if len(f) == 3 {
			e.upstream = f[2]
			if name, ok := strings.CutPrefix(f[2], "env:"); ok {
				e.upstream = os.Getenv(name)
				if e.upstream == "" {
					return nil, fmt.Errorf("line %d: environment variable %s is empty or not set", n, name)
				}
			}
		}
		h := sha256.Sum256([]byte(f[0]))
		if _, dup := k.byHash[h]; dup {
			return nil, fmt.Errorf("line %d: the key is listed twice", n)
		}
		k.byHash[h] = e
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(k.byHash) == 0 {
		return nil, errors.New("no keys in the file")
	}
	return k, nil
}

func (k *Keys) lookup(key string) (keyEntry, bool) {
	e, ok := k.byHash[sha256.Sum256([]byte(key))]
	return e, ok
}

// credential returns the credential a request carries and the header it
// came in: x-api-key, Authorization: Bearer, x-goog-api-key or Gemini's
// ?key=.
func credential(r *http.Request) (value, header string) {
	if v := r.Header.Get("X-Api-Key"); v != "" {
		return v, "X-Api-Key"
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && v != "" {
		return strings.TrimSpace(v), "Authorization"
	}
	if v := r.Header.Get("X-Goog-Api-Key"); v != "" {
		return v, "X-Goog-Api-Key"
	}
	if v := r.URL.Query().Get("key"); v != "" {
		return v, "?key"
	}
	return "", ""
}

// setCredential puts the upstream credential where the provider wants it,
// replacing whatever the client sent.
func setCredential(r *http.Request, provider, cred string) {
	for _, h := range []string{"X-Api-Key", "Authorization", "X-Goog-Api-Key"} {
		r.Header.Del(h)
	}
	if q := r.URL.Query(); q.Has("key") {
		q.Set("key", cred)
		r.URL.RawQuery = q.Encode()
		return
	}
	switch provider {
	case providerOpenAI:
		r.Header.Set("Authorization", "Bearer "+cred)
	case providerGemini:
		r.Header.Set("X-Goog-Api-Key", cred)
	default:
		r.Header.Set("X-Api-Key", cred)
	}
}

// dropCredential removes a credential header (a proxy key must never go
// upstream).
func dropCredential(r *http.Request, header string) {
	if header == "?key" {
		q := r.URL.Query()
		q.Del("key")
		r.URL.RawQuery = q.Encode()
		return
	}
	r.Header.Del(header)
}

// TenantOf is the tenant id ctxkit serve gives requests carrying
// credential (with keys, a proxy key: ErrUnknownKey if it is not one). ctxkit
// mcp uses it to recall within the same tenant.
func TenantOf(secret []byte, keys *Keys, credential string) (string, error) {
	if keys == nil {
		return store.Tenant(secret, labelCredential, credential), nil
	}
	e, ok := keys.lookup(credential)
	if !ok {
		return "", ErrUnknownKey
	}
	return store.Tenant(secret, labelProxyKey, e.tenant), nil
}

// ErrUnknownKey: a key that is not among --keys.
var ErrUnknownKey = errors.New("not a proxy key of --keys")

// tenantKey is the context key of a request's tenant-scoped store.
type tenantKey struct{}

type tenantScope struct {
	id string
	st store.Store
}

// st is the store of the request's tenant; without one every call fails
// (errNoTenant), so state is never read or written outside a tenant.
func (s *Server) st(ctx context.Context) store.Store {
	if t, ok := ctx.Value(tenantKey{}).(tenantScope); ok {
		return t.st
	}
	return unscoped{}
}

// tenantID is the request's tenant ("" when none).
func tenantID(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(tenantScope)
	return t.id
}

// secret is the install's secret, read from the store once.
func (s *Server) secret(ctx context.Context) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if s.secretVal != nil {
		return s.secretVal, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := s.root.Secret(ctx)
	if err != nil {
		return nil, err
	}
	s.secretVal = v
	return v, nil
}

// admit checks the request's proxy key (with Config.Keys) or credential
// and returns its context carrying the tenant's store. ok false: it has
// answered (401, or 415 for a body a web page could send). A request it cannot scope (the store is down) gets a
// context without a tenant: it goes upstream unchanged and leaves no state.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, provider string) (context.Context, bool) {
	if simpleContentType(r.Header.Get("Content-Type")) {
		s.m.requests.WithLabelValues(provider, "any", "rejected").Inc()
		s.fail(w, provider, http.StatusUnsupportedMediaType, "invalid_request_error", "ctxkit serve: the body must be application/json")
		return nil, false
	}
	var label, who string
	if s.cfg.Keys != nil {
		key, header := r.Header.Get(HeaderProxyKey), HeaderProxyKey
		if key == "" {
			key, header = credential(r)
		}
		e, ok := s.cfg.Keys.lookup(key)
		if !ok {
			s.m.requests.WithLabelValues(provider, "any", "unauthorized").Inc()
			s.unauthorized(w, provider, "ctxkit serve: invalid proxy key (send one of --keys in x-api-key, Authorization: Bearer or "+HeaderProxyKey+")")
			return nil, false
		}
		r.Header.Del(HeaderProxyKey)
		switch {
		case e.upstream != "":
			setCredential(r, provider, e.upstream)
		case header != HeaderProxyKey:
			dropCredential(r, header)
		}
		label, who = labelProxyKey, e.tenant
	} else {
		// No credential at all is one tenant of its own (an upstream
		// without keys, or a request the upstream will refuse).
		cred, _ := credential(r)
		label, who = labelCredential, cred
	}
	secret, err := s.secret(r.Context())
	if err != nil {
		s.log.Warn("reading the install secret; forwarding without state", "err", err)
		return r.Context(), true
	}
	id := store.Tenant(secret, label, who)
	st, err := store.Scope(s.root, id)
	if err != nil {
		return r.Context(), true
	}
	return context.WithValue(r.Context(), tenantKey{}, tenantScope{id: id, st: st}), true
}

// simpleContentType reports whether a body of type ct is one a browser
// sends cross-site without asking first (a CORS "simple" request): no API
// client sends those, a hostile page would.
func simpleContentType(ct string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
	switch strings.TrimSpace(mt) {
	case "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
		return true
	}
	return false
}

func (s *Server) unauthorized(w http.ResponseWriter, provider, msg string) {
	typ := "authentication_error"
	if provider == providerOpenAI {
		typ = "invalid_api_key"
	}
	s.fail(w, provider, http.StatusUnauthorized, typ, msg)
}

// hostAllowed reports whether the request's Host (and Origin, when a
// browser sent one) names this proxy: a DNS-rebinding page's requests
// carry its own host name and are refused.
func (s *Server) hostAllowed(r *http.Request) bool {
	if !s.allowed(r.Host) {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !s.allowed(u.Host) {
			return false
		}
	}
	return true
}

func (s *Server) allowed(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 (a health check): no browser sends none
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, a := range s.hosts {
		if a == "*" || a == host {
			return true
		}
	}
	return false
}

// AllowedHosts is the Host check's list for a listen address: the
// loopback names when it is a loopback address, the address itself when it
// is another one, and extra (ctxkit serve --allowed-hosts). A wildcard
// address without extra allows any host ("*"): the caller warns.
func AllowedHosts(listen string, extra []string) []string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	out := append([]string(nil), extra...)
	ip := net.ParseIP(host)
	switch {
	case host == "localhost" || ip != nil && ip.IsLoopback():
		out = append(out, loopbackHosts...)
	case host == "" || ip != nil && ip.IsUnspecified():
		if len(extra) == 0 {
			out = append(out, "*")
		}
		out = append(out, loopbackHosts...)
	default:
		out = append(out, strings.ToLower(host))
	}
	return out
}

var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// unscoped is the store outside any tenant: it refuses everything.
type unscoped struct{}

var errNoTenant = fmt.Errorf("serve: %w", store.ErrNoTenant)

func (unscoped) Session(context.Context, string) (store.Session, error) {
	return store.Session{}, errNoTenant
}
func (unscoped) Sessions(context.Context, int) ([]store.Session, error) { return nil, errNoTenant }
func (unscoped) Decisions(context.Context, string) ([]store.Decision, int64, error) {
	return nil, 0, errNoTenant
}
func (unscoped) Commit(context.Context, store.Session, int64, []store.Decision) (int64, error) {
	return 0, errNoTenant
}
func (unscoped) PutSummary(context.Context, store.Summary) error { return errNoTenant }
func (unscoped) Summary(context.Context, string) (store.Summary, error) {
	return store.Summary{}, errNoTenant
}
func (unscoped) PutOriginals(context.Context, []store.Original) error { return errNoTenant }
func (unscoped) Original(context.Context, string) (store.Original, error) {
	return store.Original{}, errNoTenant
}
func (unscoped) AddUsage(context.Context, store.Usage) error     { return errNoTenant }
func (unscoped) Secret(context.Context) ([]byte, error)          { return nil, errNoTenant }
func (unscoped) Prune(context.Context, time.Time) (int64, error) { return 0, errNoTenant }
func (unscoped) Size(context.Context) (int64, error)             { return 0, errNoTenant }
func (unscoped) Close() error                                    { return nil }
