package serve

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/store"
)

// errUntouched: the request is one the proxy must not change (it continues
// server-side state); it goes upstream as it came.
var errUntouched = errors.New("request continues server-side state")

// outcome is what preparing one request did.
type outcome struct {
	session     string
	model       string
	clientTok   int
	upstreamTok int
	clears      int
	compactions int
	recalls     int
	summaryTime time.Duration
	// saved is what the request changed the engine's account by: what
	// the session has saved against sending everything (engine.Saved).
	saved float64
}

func (s *Server) engine(provider, endpoint string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, ok := s.admit(w, r, provider)
		if !ok {
			return
		}
		body, ok := s.readBody(w, r, provider)
		if !ok {
			return
		}
		at, err := s.requestTime(r.Header)
		if err != nil {
			s.m.requests.WithLabelValues(provider, endpoint, "bad_request").Inc()
			s.fail(w, provider, http.StatusBadRequest, "invalid_request_error", "ctxkit serve: "+err.Error())
			return
		}
		start := time.Now()
		d, err := s.prepare(ctx, r.Header, provider, endpoint, body, at)
		defer s.settle(d, 0) // nothing stored unless the upstream accepted the request
		oc := &d.oc
		out := d.out
		result := "applied"
		switch {
		case errors.Is(err, errUntouched):
			out, result = &spliced{body: body}, "passthrough"
		case err != nil && r.Context().Err() != nil:
			return // the client went away
		case err != nil:
			reason := "engine"
			if errors.Is(err, errSyntax) {
				reason = "parse"
			}
			s.m.failOpen.WithLabelValues(provider, reason).Inc()
			if s.cfg.FailClosed {
				s.log.Error("engine failed; answering 502 (--fail-closed)", "provider", provider, "endpoint", endpoint, "err", err)
				s.m.requests.WithLabelValues(provider, endpoint, "fail_closed").Inc()
				s.failed(provider, http.StatusBadGateway)
				s.fail(w, provider, http.StatusBadGateway, "api_error", "ctxkit serve could not process this request: "+err.Error())
				return
			}
			s.log.Warn("engine failed; forwarding the request unchanged", "provider", provider, "endpoint", endpoint, "err", err)
			out, result = &spliced{body: body}, "fail_open"
			oc.clientTok = s.counter.Count(string(body))
			oc.upstreamTok = oc.clientTok
		case len(out.sp) == 0:
			result = "unchanged"
		}
		s.m.requests.WithLabelValues(provider, endpoint, result).Inc()
		added := time.Since(start) - oc.summaryTime
		s.m.latency.WithLabelValues(provider).Observe(added.Seconds())
		if s.onLatency != nil {
			s.onLatency(added)
		}
		var u usageWatch
		refused := false // the upstream refused the credential: no usage kept for it
		answered := 0    // the upstream's status; 0 when the proxy answered itself
		// A refusal for size: the engine retries, and the request goes
		// again (refused.go).
		again := func(status int, b []byte) (io.Reader, int64, bool) {
			if result != "applied" && result != "unchanged" {
				return nil, 0, false
			}
			sp, l, ok := s.resend(d, status, b)
			if !ok {
				return nil, 0, false
			}
			s.m.resent.WithLabelValues(provider).Inc()
			s.log.Info("the upstream refused the request for its size; sent again as the engine decided at the sizes it stated", "session", d.session, "window", l.Window, "prompt", l.Prompt, "max_tokens", l.MaxTokens, "tokens", oc.upstreamTok)
			return sp.reader(), int64(sp.len()), true
		}
		s.forward(w, r, provider, out.reader(), int64(out.len()), again, func(status int, h http.Header) io.Writer {
			answered = status
			refused = status == http.StatusUnauthorized || status == http.StatusForbidden
			s.settle(d, status)
			if status != http.StatusOK {
				return nil
			}
			u.stream = strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
			return &u
		})
		if answered != http.StatusOK {
			// An error, the upstream's or the proxy's own 502: counted
			// as one, never as a request of the session — the upstream's
			// even when the client has gone by the time it is counted
			// (it had the answer); the proxy's only when the client was
			// still there to get it.
			if answered != 0 || r.Context().Err() == nil {
				s.failed(provider, cmp.Or(answered, http.StatusBadGateway))
			}
			return
		}
		if refused {
			oc.session = "" // metrics only
		}
		if answered == http.StatusOK {
			s.observe(d, u.result())
		}
		s.record(ctx, provider, *oc, &u, result == "fail_open")
	}
}

// failed counts a request answered with status, an error.
func (s *Server) failed(provider string, status int) {
	s.errs.Add(1)
	s.m.errors.WithLabelValues(provider, strconv.Itoa(status)).Inc()
}

// record adds the request's usage to the metrics and its session.
func (s *Server) record(ctx context.Context, provider string, oc outcome, u *usageWatch, failOpen bool) {
	up := u.result()
	saved := oc.saved
	s.m.clientTok.WithLabelValues(provider).Add(float64(oc.clientTok))
	s.m.upstreamTok.WithLabelValues(provider).Add(float64(oc.upstreamTok))
	s.m.cacheRead.WithLabelValues(provider).Add(float64(up.cacheRead))
	s.m.cacheWrite.WithLabelValues(provider).Add(float64(up.cacheWrite))
	s.m.saved.WithLabelValues(provider).Add(saved)
	s.m.recalls.WithLabelValues(provider).Add(float64(oc.recalls))
	if oc.session == "" {
		return
	}
	fo := int64(0)
	if failOpen {
		fo = 1
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.st(ctx).AddUsage(ctx, store.Usage{Session: oc.session, Provider: provider, Model: oc.model,
		ClientTokens: int64(oc.clientTok), UpstreamTokens: int64(oc.upstreamTok), Input: up.input, CacheRead: up.cacheRead,
		CacheWrite: up.cacheWrite, Output: up.output, SavedUSD: saved, Clears: int64(oc.clears), Compactions: int64(oc.compactions), FailOpen: fo})
	if err != nil {
		s.log.Warn("recording usage", "session", oc.session, "err", err)
	}
}

// decided is what preparing one request decided: the upstream body, the
// outcome for the metrics, and the mirror it was decided on, locked until
// settle stores what it decided (or forgets it).
type decided struct {
	ctx     context.Context // the request's, with its tenant
	at      time.Time       // when the request came
	out     *spliced
	oc      outcome
	m       *mirror
	session string
	req     *request
	version int64 // the session's version in the store when the request came
	settled bool
	// answer is the max_tokens the engine left room for, when it is less
	// than the client asked (0: the client's stands).
	answer int
	// resent: the upstream refused the request for its size and it went
	// again as the engine retried it (refused.go).
	resent bool
}

// prepare turns the client's body into the upstream body: it brings the
// conversation's mirror up to the request (the engine decides), and
// splices the engine's edits into the client's bytes. On success the
// mirror stays locked until settle.
func (s *Server) prepare(ctx context.Context, h http.Header, provider, endpoint string, body []byte, at time.Time) (*decided, error) {
	d := &decided{at: at}
	req, err := s.parse(ctx, provider, endpoint, body)
	if err != nil {
		return d, err
	}
	d.req, d.ctx = req, ctx
	d.oc.model = req.Model
	d.oc.session = sessionKey(h, req)
	d.session = d.oc.session
	d.oc.recalls = countRecalls(req)
	// The session's version: what the store holds of it (another
	// replica may have decided since), and whether the store answers at
	// all — nothing is rewritten whose originals it could not keep.
	switch sess, err := s.st(ctx).Session(ctx, d.session); {
	case err == nil:
		d.version = sess.Version
	case !errors.Is(err, store.ErrNotFound):
		return d, fmt.Errorf("reading the session: %w", err)
	}
	window := s.window(req.Model)
	recallTool := recallToolOf(req)
	// A mirror is its tenant's: the same session id or history under
	// another credential is another conversation.
	key := mirrorKey(tenantID(ctx), d.session, req, window, req.MaxOut, recallTool)
	var m *mirror
	for attempt := 0; ; attempt++ {
		var merr error
		m = s.mirrors.get(key, tenantID(ctx), func() *mirror {
			nm, err := s.newMirror(key, req, window, recallTool)
			if err != nil {
				merr = err
				return &mirror{key: key, broken: true}
			}
			return nm
		})
		if merr != nil {
			s.mirrors.drop(m)
			return d, fmt.Errorf("starting the engine: %w", merr)
		}
		m.mu.Lock()
		if m.broken {
			m.mu.Unlock()
			s.mirrors.drop(m)
			continue
		}
		if err := s.loadObservations(ctx, m, d.session); err != nil {
			m.broken = true
			m.mu.Unlock()
			s.mirrors.drop(m)
			return d, err
		}
		m.pending = pending{observed: m.unsaved}
		m.unsaved = nil
		m.zs.req, m.zs.h, m.zs.session, m.zs.spent = req, h, d.session, 0
		r, ok, err := m.step(ctx, req, d.at)
		d.oc.summaryTime = m.zs.spent
		if err != nil {
			m.broken = true
			m.mu.Unlock()
			s.mirrors.drop(m)
			return d, fmt.Errorf("deciding: %w", err)
		}
		if !ok {
			// The client changed its history other than by appending (it
			// compacted, or edited a message): decide afresh.
			m.broken = true
			m.mu.Unlock()
			s.mirrors.drop(m)
			if attempt > 0 {
				return d, errors.New("deciding: a fresh engine does not take the request")
			}
			continue
		}
		d.m = m
		s.account(d, r)
		break
	}
	d.out = &spliced{body: body, sp: withAnswer(m.render(req, m.e.Hold()), req, d.answer)}
	return d, nil
}

// lowers reports whether the request's max_tokens goes down to answer:
// it names one (MaxSpan), answer is less and still above its thinking
// budget.
func (r *request) lowers(answer int) bool {
	return r.MaxSpan.ok() && answer > 0 && answer < r.MaxOut && answer > r.Thinking
}

// withAnswer adds to sp, kept in order, the splice that lowers the
// request's max_tokens to answer, the room the engine left the answer
// after the prompt it decided (engine.Ready.Request's MaxTokens; account
// sets it). A client's max_tokens that fits, or none, stays as sent, and
// so does one that could not go lower without going under the request's
// thinking budget (the API refuses max_tokens at or below
// budget_tokens): the provider and the client's own recovery decide then.
func withAnswer(sp []splice, req *request, answer int) []splice {
	if !req.lowers(answer) {
		return sp
	}
	x := splice{s: req.MaxSpan.s, e: req.MaxSpan.e, repl: strconv.AppendInt(nil, int64(answer), 10)}
	i := sort.Search(len(sp), func(i int) bool { return sp[i].s >= x.e })
	return slices.Insert(sp, i, x)
}

// account fills in the request's outcome from what the engine decided,
// and notes the decisions to store.
func (s *Server) account(d *decided, r engine.Ready) {
	m := d.m
	// The engine's own count of the request (no recount of the history).
	d.oc.upstreamTok = m.tokens
	d.oc.clientTok = m.client + m.fixedTok
	d.oc.clears += r.Micro.Cleared // a retry (refused.go) adds its own
	d.oc.saved = m.saved
	d.oc.compactions += r.Compaction.Compactions
	if r.Request != nil && d.req.MaxSpan.ok() && r.Request.MaxTokens < d.req.MaxOut {
		// The window leaves the answer less room than the client asked
		// after the prompt the engine decided (engine.Engine.leaveRoom):
		// the provider would refuse the request as it came.
		room := r.Request.MaxTokens
		if d.req.lowers(room) {
			d.answer = room
			s.m.answer.WithLabelValues(d.req.Provider).Inc()
			s.log.Info("max_tokens lowered to the room the window leaves", "session", d.session, "asked", d.req.MaxOut, "room", room, "prompt", m.tokens)
		} else {
			s.log.Warn("max_tokens over the room the window leaves, kept: lower would be under the thinking budget", "session", d.session, "asked", d.req.MaxOut, "room", room, "budget_tokens", d.req.Thinking)
		}
	}
	m.pending.cleared += r.Micro.Cleared
	now := time.Now().UTC()
	for _, ed := range r.Edits {
		switch ed.Kind {
		case conv.EditRung:
			ids := make([]string, len(ed.Blocks))
			for i := range ed.Blocks {
				ids[i] = ed.Blocks[i].ID
			}
			m.pending.decisions = append(m.pending.decisions, store.Decision{Kind: store.KindClear, Hashes: ids, Data: jsonString(ed.Reason), At: now})
		case conv.EditReplace:
			var ids []string
			for _, msg := range ed.Messages {
				for _, b := range msg.Blocks {
					ids = append(ids, b.ID)
				}
			}
			if strings.HasSuffix(ed.Reason, ":drop") {
				m.pending.dropped++
			}
			m.pending.decisions = append(m.pending.decisions, store.Decision{Kind: store.KindCompact, Hashes: ids, Data: jsonString(ed.Reason), At: now})
		}
	}
	for _, sm := range m.pending.summaries {
		m.pending.decisions = append(m.pending.decisions, store.Decision{Kind: store.KindSummary, Hashes: []string{sm.Key}, Key: sm.Key, At: now})
	}
	if limit := m.e.Budget().Limit; d.oc.upstreamTok > limit {
		// Nothing is left to cut (a system prompt and tools over the
		// limit): the provider answers, and the client's own recovery runs.
		s.m.overWindow.WithLabelValues(d.req.Provider).Inc()
		s.log.Warn("request over the window limit with nothing left to cut; forwarding it", "session", d.session, "tokens", d.oc.upstreamTok, "limit", limit)
	}
}

// settle ends a request's decisions once the upstream answered with
// status (0: no answer). Accepted (2xx): the originals of what left the
// context are stored, then the summaries, then the decisions — a request
// the upstream refused (a wrong key, an overload) leaves no trace, and
// its mirror, which decided as if it had gone through, is forgotten so
// the next request decides again. A summary another replica stored first
// for the same region wins: this mirror, which used its own, is forgotten
// too, and the next request reads the winner's.
func (s *Server) settle(d *decided, status int) {
	if d == nil || d.m == nil || d.settled {
		return
	}
	d.settled = true
	m := d.m
	defer m.mu.Unlock()
	p := m.pending
	m.pending = pending{}
	if status < 200 || status > 299 {
		if !p.empty() {
			m.broken = true
			s.mirrors.drop(m)
		}
		m.unsaved = append(p.observed, m.unsaved...) // for the next request to store
		return
	}
	provider := d.req.Provider
	s.m.clears.WithLabelValues(provider).Add(float64(p.cleared))
	s.m.admitted.WithLabelValues(provider).Add(float64(p.admitted))
	for _, method := range p.methods {
		s.m.compactions.WithLabelValues(method).Inc()
	}
	s.m.compactions.WithLabelValues("dropped").Add(float64(p.dropped))
	if p.empty() && len(p.observed) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), 10*time.Second)
	defer cancel()
	fail := func(what string, err error) {
		s.log.Warn("storing the engine's decisions", "what", what, "session", d.session, "err", err)
		m.broken = true
		s.mirrors.drop(m)
	}
	if err := keyOriginals(ctx, s.st(ctx), d.session, p.originals); err != nil {
		fail("originals", err)
		return
	}
	if len(p.originals) > 0 {
		if err := s.st(ctx).PutOriginals(ctx, p.originals); err != nil {
			fail("originals", err)
			return
		}
	}
	for _, sm := range p.summaries {
		if err := s.st(ctx).PutSummary(ctx, sm); err != nil {
			fail("summary", err)
			return
		}
		if got, err := s.st(ctx).Summary(ctx, sm.Key); err != nil || got.Text != sm.Text {
			// Another replica summarized the same region first.
			m.broken = true
			s.mirrors.drop(m)
		}
	}
	info := store.Session{ID: d.session, Provider: provider, Model: d.req.Model}
	want := d.version
	ds := append(p.decisions, p.observed...)
	if want != m.synced {
		// Another replica (or this one, before a restart) decided on the
		// session since this mirror last committed: the engine decides
		// alike, so what it holds already is not committed twice.
		var err error
		if ds, want, err = s.newDecisions(ctx, d.session, ds); err != nil {
			fail("decisions", err)
			return
		}
	}
	for attempt := 0; attempt < 2 && len(ds) > 0; attempt++ {
		v, err := s.st(ctx).Commit(ctx, info, want, ds)
		if errors.Is(err, store.ErrConflict) {
			if ds, want, err = s.newDecisions(ctx, d.session, ds); err != nil {
				fail("decisions", err)
				return
			}
			continue
		}
		if err != nil {
			fail("decisions", err)
			return
		}
		m.synced = v
		return
	}
	m.synced = want
}

// newDecisions is ds less the decisions the session holds already, and
// the session's version.
func (s *Server) newDecisions(ctx context.Context, session string, ds []store.Decision) ([]store.Decision, int64, error) {
	have, v, err := s.st(ctx).Decisions(ctx, session)
	if err != nil {
		return nil, 0, err
	}
	key := func(d store.Decision) string { return d.Kind + "\x00" + d.Key + "\x00" + strings.Join(d.Hashes, ",") }
	seen := make(map[string]bool, len(have))
	for _, d := range have {
		seen[key(d)] = true
	}
	var out []store.Decision
	for _, d := range ds {
		if !seen[key(d)] {
			out = append(out, d)
		}
	}
	return out, v, nil
}

func (s *Server) summaryModel(req *request) string {
	if s.cfg.SummaryModel != "" {
		return s.cfg.SummaryModel
	}
	return req.Model
}

// countRecalls counts recall tool calls in the newest assistant message.
func countRecalls(req *request) int {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "assistant" {
			continue
		}
		n := 0
		for _, b := range m.Blocks {
			if b.Type == "tool_use" && isRecallTool(b.Name) {
				n++
			}
		}
		return n
	}
	return 0
}

// keyOriginals sets each of os's session and the key it is stored under
// (os[i].Hash holds its recall id): store.OriginalKey(session, id), or,
// when an original with other content is stored there already — the same
// short id handed out by another conversation of the session — the first
// store.CollisionKey after it that is free or holds the same content, so
// neither original is lost or recalled for the other.
func keyOriginals(ctx context.Context, st store.Store, session string, os []store.Original) error {
	for i := range os {
		o := &os[i]
		o.Session = session
		base := store.OriginalKey(session, o.Hash)
		for n := 1; ; n++ {
			k := store.CollisionKey(base, n)
			have, err := st.Original(ctx, k)
			if errors.Is(err, store.ErrNotFound) || err == nil && bytes.Equal(have.Content, o.Content) {
				o.Hash = k
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
