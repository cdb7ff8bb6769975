package serve

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/serve/servetest"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/wire"
)

// TestRenderAnchors: the engine's held blocks get a cache breakpoint in
// the client's own form, within the API's 4; every other byte is the
// client's.
func TestRenderAnchors(t *testing.T) {
	const (
		eph  = `{"type":"ephemeral"}`
		hour = `{"type":"ephemeral","ttl":"1h"}`
	)
	cc := func(form string) string { return `,"cache_control":` + form }
	// body is a Claude Code-like request: its system prompt, four turns,
	// the newest message; sys, m0, m2 and newest are the breakpoint forms
	// the client put there ("" for none).
	body := func(sys, m0, m2, newest string, sys2 bool) string {
		opt := func(form string) string {
			if form == "" {
				return ""
			}
			return cc(form)
		}
		s := `{"model":"claude-sonnet-4-5","max_tokens":1000,"system":[{"type":"text","text":"You are an agent."` + opt(sys) + `}`
		if sys2 {
			s += `,{"type":"text","text":"Be brief."` + opt(sys) + `}`
		}
		s += `],"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` +
			`{"role":"user","content":[{"type":"text","text":"Fix the bug."` + opt(m0) + `}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"FAIL: TestX"` + opt(m2) + `}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"Looking."}]},` +
			`{"role":"user","content":"Go on."},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"cat x.go"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"package x"` + opt(newest) + `}]}]}`
		return s
	}
	tests := []struct {
		name   string
		client string
		hold   []int // the conv messages whose last block the engine holds
		// edits turns the client's body into the one expected upstream:
		// pairs of old and new text, each replaced once.
		edits []string
	}{
		{name: "held blocks anchored", client: body(eph, "", "", eph, false), hold: []int{1, 3},
			edits: []string{`"input":{"command":"go test"}}`, `"input":{"command":"go test"}` + cc(eph) + `}`,
				`"text":"Looking."}`, `"text":"Looking."` + cc(eph) + `}`}},
		{name: "the client's ttl kept", client: body(hour, "", "", hour, false), hold: []int{3},
			edits: []string{`"text":"Looking."}`, `"text":"Looking."` + cc(hour) + `}`}},
		{name: "the ttl of the breakpoint after it", client: body(hour, hour, hour, eph, false), hold: []int{1},
			edits: []string{`"text":"Fix the bug."` + cc(hour), `"text":"Fix the bug."`,
				`"input":{"command":"go test"}}`, `"input":{"command":"go test"}` + cc(hour) + `}`}},
		{name: "anchored by the client already", client: body(eph, "", eph, eph, false), hold: []int{2}},
		{name: "a string content becomes a text part", client: body(eph, "", "", eph, false), hold: []int{4},
			edits: []string{`"content":"Go on."`, `"content":[{"type":"text","text":"Go on."` + cc(eph) + `}]`}},
		{name: "the oldest message breakpoint makes room", client: body(eph, eph, eph, eph, false), hold: []int{3},
			edits: []string{`"text":"Fix the bug."` + cc(eph), `"text":"Fix the bug."`,
				`"text":"Looking."}`, `"text":"Looking."` + cc(eph) + `}`}},
		{name: "both client message breakpoints make room", client: body(eph, eph, eph, eph, false), hold: []int{1, 3},
			edits: []string{`"text":"Fix the bug."` + cc(eph), `"text":"Fix the bug."`,
				`"input":{"command":"go test"}}`, `"input":{"command":"go test"}` + cc(eph) + `}`,
				`"content":"FAIL: TestX"` + cc(eph), `"content":"FAIL: TestX"`,
				`"text":"Looking."}`, `"text":"Looking."` + cc(eph) + `}`}},
		{name: "system and newest leave room for one", client: body(eph, "", eph, eph, true), hold: []int{1, 3},
			edits: []string{`"input":{"command":"go test"}}`, `"input":{"command":"go test"}` + cc(eph) + `}`,
				`"content":"FAIL: TestX"` + cc(eph), `"content":"FAIL: TestX"`}},
		{name: "no breakpoints: no caching asked", client: body("", "", "", "", false), hold: []int{1, 3}},
	}
	s, err := New(Config{Store: openStore(t, ""), AnthropicUpstream: "http://127.0.0.1:1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := []byte(tt.client)
			req, err := parseAnthropic(client)
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.newMirror("k", req, 200000, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := m.step(context.Background(), req, time.Unix(1e9, 0)); err != nil || !ok {
				t.Fatalf("step: %v %v", ok, err)
			}
			var hold []string
			for _, i := range tt.hold {
				bs := m.c.Messages[i].Blocks
				hold = append(hold, bs[len(bs)-1].ID)
			}
			got := string(applySplices(client, m.render(req, hold)))
			want := tt.client
			for i := 0; i < len(tt.edits); i += 2 {
				if !strings.Contains(want, tt.edits[i]) {
					t.Fatalf("%q not in the request", tt.edits[i])
				}
				want = strings.Replace(want, tt.edits[i], tt.edits[i+1], 1)
			}
			if got != want {
				t.Fatalf("upstream:\n%s\nwant:\n%s", got, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatal("not JSON")
			}
			if _, err := servetest.Check(client, []byte(got), servetest.Limits{Window: 200000, Counter: tokens.NewEstimator()}); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestClearingReadsHeldPrefix replays a Claude Code-like session (its
// breakpoints on the system prompt and the newest block only) through the
// handler with a policy that clears batches of consumed results well
// behind the tail, and bills what went upstream with the bench's cache
// model: a request that clears reads the prefix the engine held, where
// the client's breakpoints alone would read the system prompt and
// rewrite everything after it.
func TestClearingReadsHeldPrefix(t *testing.T) {
	up, got := echoUpstream(t, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}`)
	p := newProxy(t, up.URL, Config{Policy: micro.Batched{AtLeast: 6000}, Window: 200000})
	s := sim{name: "held", resultSize: 4000, say: 200}
	counter := tokens.NewEstimator()
	cache := bench.NewCache(pricing.Anthropic(), 0)
	clearings, changed := 0, 0
	for n := 1; n <= 30; n++ {
		client := s.body(n)
		if resp, body := p.post(t, "/v1/messages", "held", client); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", n, resp.StatusCode, body)
		}
		bodies := got()
		sent := bodies[len(bodies)-1]
		ed, err := servetest.Check(client, sent, servetest.Limits{Window: 200000, Counter: counter})
		if err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		req, err := wire.DecodeAnthropic(sent)
		if err != nil {
			t.Fatal(err)
		}
		segs := bench.Segments(req, counter)
		bill := cache.Bill(segs, 1)
		cleared := ed.Changed > changed
		changed = ed.Changed
		if !cleared || ed.Anchored < 2 {
			// Not a clearing behind a prefix still cached (the first
			// clearing starts at the first result: nothing to read).
			continue
		}
		// The engine holds the deepest prefix still cached before the
		// change, and the frontier after it: the first breakpoint after
		// the system prompt is the former, which the request reads.
		clearings++
		held, cum := 0, 0
		for i, sg := range segs {
			cum += sg.Tokens
			if sg.Anchor && i >= len(req.Tools)+len(req.System) {
				held = cum
				break
			}
		}
		if bill.CacheRead < held {
			t.Errorf("request %d cleared %d blocks and read %d of %d tokens (wrote %d): the held prefix of %d was not read",
				n, ed.Changed, bill.CacheRead, bill.Prompt(), bill.CacheWrite, held)
		}
	}
	if clearings == 0 {
		t.Fatal("no request cleared behind the tail with an anchor added")
	}
}
