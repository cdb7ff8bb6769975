package serve

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/compact"
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
		start := time.Now()
		out, oc, err := s.prepare(ctx, r.Header, provider, endpoint, body)
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
				s.fail(w, provider, http.StatusBadGateway, "api_error", "ctxkit serve could not process this request: "+err.Error())
				return
			}
			s.log.Warn("engine failed; forwarding the request unchanged", "provider", provider, "endpoint", endpoint, "err", err)
			out, result = &spliced{body: body}, "fail_open"
			oc.clientTok = tokensOf(len(body))
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
		s.forward(w, r, provider, out.reader(), int64(out.len()), func(status int, h http.Header) io.Writer {
			refused = status == http.StatusUnauthorized || status == http.StatusForbidden
			if status != http.StatusOK {
				return nil
			}
			u.stream = strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
			return &u
		})
		if refused {
			oc.session = "" // metrics only
		}
		s.record(ctx, provider, oc, &u, result == "fail_open")
	}
}

// record adds the request's usage to the metrics and its session.
func (s *Server) record(ctx context.Context, provider string, oc outcome, u *usageWatch, failOpen bool) {
	up := u.result()
	saved := float64(oc.clientTok-oc.upstreamTok) * s.cfg.Prices.CacheRead / 1e6
	if saved < 0 {
		saved = 0
	}
	s.m.clientTok.WithLabelValues(provider).Add(float64(oc.clientTok))
	s.m.upstreamTok.WithLabelValues(provider).Add(float64(oc.upstreamTok))
	s.m.cacheRead.WithLabelValues(provider).Add(float64(up.cacheRead))
	s.m.cacheWrite.WithLabelValues(provider).Add(float64(up.cacheWrite))
	s.m.saved.WithLabelValues(provider).Add(saved)
	s.m.clears.WithLabelValues(provider).Add(float64(oc.clears))
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

// budget is the window's arithmetic for req: compact's, for the
// request's model's window (or --window) and its max_tokens. No request
// goes upstream over its Limit while anything is left to cut.
func (s *Server) budget(req *request) compact.Budget {
	return compact.Config{Window: s.window(req.Model), MaxOutput: req.MaxOut}.Budget()
}

// maxRounds bounds the decide–apply rounds of one request: a summary can
// come out larger than the Decider estimated, and the next round then
// escalates (drop, cut) from where the first left the request.
const maxRounds = 4

// prepare turns the client's body into the upstream body.
func (s *Server) prepare(ctx context.Context, h http.Header, provider, endpoint string, body []byte) (*spliced, outcome, error) {
	oc := outcome{clientTok: tokensOf(len(body))}
	oc.upstreamTok = oc.clientTok
	req, err := s.parse(provider, endpoint, body)
	if err != nil {
		return nil, oc, err
	}
	oc.model = req.Model
	oc.session = sessionKey(h, req)
	oc.recalls = countRecalls(req)
	ds, version, err := s.st(ctx).Decisions(ctx, oc.session)
	if err != nil {
		return nil, oc, fmt.Errorf("reading the session's decisions: %w", err)
	}
	sumText := func(key string) (string, error) { return s.summaryText(ctx, key) }
	rw, err := applyDecisions(req, ds, sumText)
	if err != nil {
		return nil, oc, err
	}
	b := s.budget(req)
	for round := 0; round < maxRounds && (round == 0 || estimate(req, rw) > b.Limit); round++ {
		cs, err := clearsOf(ds)
		if err != nil {
			return nil, oc, err
		}
		plan, err := s.cfg.Decider.Decide(ctx, view(req, rw, cs, b, s.calls))
		if err != nil {
			return nil, oc, fmt.Errorf("deciding: %w", err)
		}
		if plan.empty() {
			break
		}
		t0 := time.Now()
		nds, err := s.materialize(ctx, h, req, rw, plan, oc.session, &oc)
		oc.summaryTime += time.Since(t0)
		if err != nil {
			return nil, oc, err
		}
		if len(nds) == 0 {
			break
		}
		version, err = s.st(ctx).Commit(ctx, store.Session{ID: oc.session, Provider: provider, Model: req.Model}, version, nds)
		switch {
		case errors.Is(err, store.ErrConflict):
			// Another request of this session decided first: use its
			// decisions, and decide again from there if still over.
			oc.clears, oc.compactions = 0, 0
			if ds, version, err = s.st(ctx).Decisions(ctx, oc.session); err != nil {
				return nil, oc, fmt.Errorf("reloading the session's decisions: %w", err)
			}
		case err != nil:
			return nil, oc, fmt.Errorf("storing decisions: %w", err)
		default:
			ds = append(ds, nds...)
		}
		if rw, err = applyDecisions(req, ds, sumText); err != nil {
			return nil, oc, err
		}
	}
	out := &spliced{body: body, sp: rw.splices}
	oc.upstreamTok = tokensOf(out.len())
	if est := estimate(req, rw); est > b.Limit {
		// Nothing is left to cut (a system prompt and tools over the
		// limit, thinking blocks, images): the provider answers, and the
		// client's own recovery runs.
		s.m.overWindow.WithLabelValues(provider).Inc()
		s.log.Warn("request over the window limit with nothing left to cut; forwarding it", "session", oc.session, "tokens", est, "limit", b.Limit)
	}
	return out, oc, nil
}

// materialize turns a plan into decisions: placeholders for the blocks to
// clear (their originals stored first, for recall) and the summary.
func (s *Server) materialize(ctx context.Context, h http.Header, req *request, rw *rewrite, plan Plan, session string, oc *outcome) ([]store.Decision, error) {
	now := time.Now()
	var present []int
	for i := range req.Messages {
		if !rw.removed[i] {
			present = append(present, i)
		}
	}
	var nds []store.Decision
	if len(plan.Clear) > 0 {
		want := map[string]bool{}
		for _, h := range plan.Clear {
			want[h] = true
		}
		recallTool := recallToolOf(req.Tools)
		var hashes, texts []string
		var originals []store.Original
		for _, i := range present {
			for _, b := range req.Messages[i].Blocks {
				if !want[b.Hash] || !b.Content.ok() {
					continue
				}
				want[b.Hash] = false
				hashes = append(hashes, b.Hash)
				texts = append(texts, placeholderText(b, req.Body, recallTool))
				originals = append(originals, store.Original{Hash: b.Hash, Session: session, Tool: b.Name,
					Label: keyArg(req.Body, b.Input), Content: []byte(textOf(req.Body, b.Content)), At: now})
			}
		}
		if len(hashes) > 0 {
			// Originals first: nothing leaves the context before it is durable.
			if err := s.st(ctx).PutOriginals(ctx, originals); err != nil {
				return nil, fmt.Errorf("storing originals for recall: %w", err)
			}
			data, _ := json.Marshal(texts)
			nds = append(nds, store.Decision{Kind: store.KindClear, Hashes: hashes, Data: data, At: now})
			oc.clears += len(hashes)
		}
	}
	if len(plan.Cut) > 0 {
		cds, err := s.cut(ctx, req, plan.Cut, present, session, now)
		if err != nil {
			return nil, err
		}
		nds = append(nds, cds...)
		oc.clears += len(plan.Cut)
	}
	if plan.To > 0 && plan.From > 0 && plan.To < len(present)-1 {
		idx := present[plan.From : plan.To+1]
		var hashes []string
		kh := sha256.New()
		if plan.Drop {
			kh.Write([]byte("drop\x00"))
		}
		for _, i := range idx {
			hashes = append(hashes, req.Messages[i].Hash)
			kh.Write([]byte(req.Messages[i].Hash))
		}
		key := sum(kh)
		if _, err := s.st(ctx).Summary(ctx, key); errors.Is(err, store.ErrNotFound) {
			var text, method string
			if plan.Drop {
				if text, err = s.dropMarker(ctx, req, idx, plan.Words, session, now); err != nil {
					return nil, err
				}
				method = "dropped"
			} else {
				text, method = s.summarize(ctx, h, req, rw, idx)
			}
			if err := s.st(ctx).PutSummary(ctx, store.Summary{Key: key, Session: session, Model: s.summaryModel(req), Text: text, Method: method, At: now}); err != nil {
				return nil, fmt.Errorf("storing the summary: %w", err)
			}
			s.m.compactions.WithLabelValues(method).Inc()
		} else if err != nil {
			return nil, fmt.Errorf("reading the summary: %w", err)
		}
		nds = append(nds, store.Decision{Kind: store.KindSummary, Hashes: hashes, Key: key, At: now})
		oc.compactions++
	}
	return nds, nil
}

// summaryText returns a stored summary's text, cached in memory (summaries
// never change once stored).
func (s *Server) summaryText(ctx context.Context, key string) (string, error) {
	ck := tenantID(ctx) + "/" + key // the cache is every tenant's
	s.mu.Lock()
	t, ok := s.summaries[ck]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	x, err := s.st(ctx).Summary(ctx, key)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if len(s.summaries) > 4096 {
		clear(s.summaries)
	}
	s.summaries[ck] = x.Text
	s.mu.Unlock()
	return x.Text, nil
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
			if b.Type == "tool_use" && (b.Name == "recall" || strings.HasSuffix(b.Name, "__recall")) {
				n++
			}
		}
		return n
	}
	return 0
}
