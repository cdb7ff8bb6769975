package servetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/tokens"
)

func TestCheck(t *testing.T) {
	const client = `{"model":"m","max_tokens":100,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"task"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long listing"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"done"}]},` +
		`{"role":"user","content":[{"type":"text","text":"next, please","cache_control":{"type":"ephemeral"}}]}]}`
	replace := func(old, new string) string {
		if !strings.Contains(client, old) {
			t.Fatalf("%q not in the client's request", old)
		}
		return strings.Replace(client, old, new, 1)
	}
	sum := `{"type":"text","text":"<summary turns=\"1-2\">\nearlier\n</summary>"}`
	tests := []struct {
		name     string
		upstream string
		limit    int
		want     string // a violation's words; "" for none
		edits    Edits
	}{
		{name: "unchanged", upstream: client},
		{name: "cleared", upstream: replace(`"content":"a long listing"`, `"content":"[cleared — recall id ab12]"`), edits: Edits{Changed: 1}},
		{name: "summary replaces a run", upstream: replace(
			`{"type":"text","text":"task"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long listing"}]},`,
			`{"type":"text","text":"task"},`+sum+`]},`), edits: Edits{Dropped: 2, New: 1, Summaries: 1}},
		{name: "two summaries", upstream: replace(`{"type":"text","text":"task"}`, `{"type":"text","text":"task"},`+sum+`,`+sum), want: "2 summary blocks"},
		{name: "newest changed", upstream: replace(`next, please`, `next, plea [cut]`), want: "newest message"},
		{name: "newest dropped", upstream: replace(`,{"role":"user","content":[{"type":"text","text":"next, please","cache_control":{"type":"ephemeral"}}]}`, ``), want: "newest message"},
		{name: "outside messages", upstream: replace(`"max_tokens":100`, `"max_tokens":200`), want: "outside messages"},
		{name: "thinking changed", upstream: replace(`"thinking":"hm"`, `"thinking":"h"`), want: "thinking block changed"},
		{name: "message key", upstream: replace(`{"role":"assistant","content":[{"type":"text","text":"done"}]}`, `{"role":"assistant","content":[{"type":"text","text":"done"}],"x":1}`), want: "keys besides content"},
		{name: "added tool call", upstream: replace(`{"type":"text","text":"done"}`, `{"type":"text","text":"done"},{"type":"tool_use","id":"t9","name":"X","input":{}}`), want: "added a tool_use block"},
		{name: "over the limit", upstream: client, limit: 5, want: "over the hard limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := Limits{Window: 1000, Limit: tt.limit, Counter: tokens.NewEstimator()}
			ed, err := Check([]byte(client), []byte(tt.upstream), lim)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				ed.Tokens = 0
				if ed != tt.edits {
					t.Errorf("edits = %+v, want %+v", ed, tt.edits)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want a violation with %q", err, tt.want)
			}
		})
	}
}

func TestCheckNewestOversizeBlock(t *testing.T) {
	big := strings.Repeat("word ", 400)
	client := `{"messages":[{"role":"user","content":[{"type":"text","text":"` + big + `"},{"type":"text","text":"why?"}]}]}`
	cut := `{"messages":[{"role":"user","content":[{"type":"text","text":"word word [… cut, recall id x1 …] word"},{"type":"text","text":"why?"}]}]}`
	lim := Limits{Window: 1000, Counter: tokens.NewEstimator()}
	if _, err := Check([]byte(client), []byte(cut), lim); err != nil {
		t.Errorf("a block over the guard (a quarter of the window) cut: %v", err)
	}
	lim.Window = 100000
	if _, err := Check([]byte(client), []byte(cut), lim); err == nil {
		t.Error("a block under the guard cut: no violation")
	}
	// The engine's guard, not a quarter of the window: at 200,000 tokens
	// a block over 25,000 may be cut, and one over a guard set lower.
	huge := strings.Repeat("word ", 30000)
	hugeClient := `{"messages":[{"role":"user","content":[{"type":"text","text":"` + huge + `"},{"type":"text","text":"why?"}]}]}`
	if _, err := Check([]byte(hugeClient), []byte(cut), Limits{Window: 200000, Counter: tokens.NewEstimator()}); err != nil {
		t.Errorf("a block over the guard of a 200,000 window (25,000 tokens) cut: %v", err)
	}
	lim.Guard = 100
	if _, err := Check([]byte(client), []byte(cut), lim); err != nil {
		t.Errorf("a block over a guard of 100 tokens cut: %v", err)
	}
}

// TestCheckOpened: a summary may open the client's newest message when
// only the client's system messages stand before it, on chat completions
// (a string content becomes a text part holding the same string) and on
// Responses (a developer item first); the client's own words still follow
// byte for byte.
func TestCheckOpened(t *testing.T) {
	const sum = `<summary>\nearlier\n</summary>`
	const chat = `{"model":"m","messages":[{"role":"system","content":"sys"},` +
		`{"role":"user","content":"task"},{"role":"assistant","content":"done"},` +
		`{"role":"user","content":"next, \u0070lease"}]}`
	const responses = `{"model":"m","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"task"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},` +
		`{"type":"message","role":"user","content":"next"},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"now"}]}]}`
	tests := []struct {
		name, client, upstream string
		want                   string // a violation's words; "" for none
	}{
		{"chat string opened", chat, `{"model":"m","messages":[{"role":"system","content":"sys"},` +
			`{"role":"user","content":[{"type":"text","text":"` + sum + `"},{"type":"text","text":"next, \u0070lease"}]}]}`, ""},
		{"chat string re-escaped", chat, `{"model":"m","messages":[{"role":"system","content":"sys"},` +
			`{"role":"user","content":[{"type":"text","text":"` + sum + `"},{"type":"text","text":"next, please"}]}]}`, "newest message"},
		{"chat part with more keys", chat, `{"model":"m","messages":[{"role":"system","content":"sys"},` +
			`{"role":"user","content":[{"type":"text","text":"` + sum + `"},{"type":"text","text":"next, \u0070lease","x":1}]}]}`, "newest message"},
		{"chat a turn left before", chat, `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"task"},` +
			`{"role":"user","content":[{"type":"text","text":"` + sum + `"},{"type":"text","text":"next, \u0070lease"}]}]}`, "newest message"},
		{"responses list opened", responses, `{"model":"m","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]},` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + sum + `"},{"type":"input_text","text":"now"}]}]}`, ""},
		{"responses a turn left before", responses, `{"model":"m","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + sum + `"},{"type":"input_text","text":"now"}]}]}`, "newest message"},
		{"responses own part changed", responses, `{"model":"m","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]},` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + sum + `"},{"type":"input_text","text":"no"}]}]}`, "newest message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed, err := Check([]byte(tt.client), []byte(tt.upstream), Limits{Window: 1000})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if ed.Summaries != 1 {
					t.Errorf("edits = %+v, want one summary", ed)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want a violation with %q", err, tt.want)
			}
		})
	}
}

// TestCheckOpenedKept: a summary opens the first message kept after the
// run it replaced, and that message is byte-identical to the client's
// newest ("yes" twice, as in a Codex rollout at 64k): the items after it
// are the client's, not the proxy's, and the newest message is still
// the client's own. A reasoning item the proxy really adds is still
// found.
func TestCheckOpenedKept(t *testing.T) {
	const (
		dev   = `{"type":"message","role":"developer","content":[{"type":"input_text","text":"sys"}]}`
		task  = `{"type":"message","role":"user","content":[{"type":"input_text","text":"task"}]}`
		done  = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`
		yes   = `{"type":"message","role":"user","content":[{"type":"input_text","text":"yes"}]}`
		think = `{"type":"reasoning","summary":[],"encrypted_content":"gAAAAB"}`
		call  = `{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}`
		out   = `{"type":"function_call_output","call_id":"c1","output":"ok"}`
		ok    = `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}`
		sum   = `{"type":"input_text","text":"<summary>\nearlier\n</summary>"}`
		kept  = `{"type":"message","role":"user","content":[{"type":"input_text","text":"task"},` + sum + `,{"type":"input_text","text":"yes"}]}`
	)
	body := func(items ...string) []byte {
		return []byte(`{"model":"m","input":[` + strings.Join(items, ",") + `]}`)
	}
	client := body(dev, task, done, yes, think, call, out, ok, yes)
	ed, err := Check(client, body(dev, kept, think, call, out, ok, yes), Limits{Window: 1000})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if want := (Edits{Dropped: 2, New: 2, Summaries: 1}); ed != want {
		t.Errorf("edits = %+v, want %+v", ed, want)
	}
	_, err = Check(client, body(dev, kept, think, think, call, out, ok, yes), Limits{Window: 1000})
	if err == nil || !strings.Contains(err.Error(), "thinking block") {
		t.Errorf("a reasoning item added: %v", err)
	}
	_, err = Check(client, body(dev, kept, think, call, out, ok, `{"type":"message","role":"user","content":[`+sum+`,{"type":"input_text","text":"yes"}]}`), Limits{Window: 1000})
	if err == nil || !strings.Contains(err.Error(), "newest message") {
		t.Errorf("a summary opened the newest message with turns before it: %v", err)
	}
}

// TestCheckSealed: encrypted reasoning counts what the provider reported
// for it (Limits.Sealed), as the engine counts it, not its ciphertext; a
// request over the limit by that count is still over.
func TestCheckSealed(t *testing.T) {
	cipher := strings.Repeat("gAAAABo7VQuaYBafMKZ_HRCr3LyGdBQUFBQUJwQmtTMUg0LWk5aEZnMjVRSkMxemVkZjkx", 40)
	body := []byte(`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"task"}]},` +
		`{"type":"reasoning","summary":[],"encrypted_content":"` + cipher + `"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"next"}]}]}`)
	sealed := func(n int) func(string) (int, bool) {
		return func(data string) (int, bool) { return n, data == cipher }
	}
	for _, tt := range []struct {
		name   string
		sealed func(string) (int, bool)
		limit  int
		over   bool
	}{
		{"ciphertext counted", nil, 200, true},
		{"reported", sealed(50), 200, false},
		{"reported, over", sealed(500), 200, true},
		{"unknown ciphertext", func(string) (int, bool) { return 0, false }, 200, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ed, err := Check(body, body, Limits{Window: 1000, Limit: tt.limit, Counter: tokens.NewEstimator(), Sealed: tt.sealed})
			if over := err != nil && strings.Contains(err.Error(), "over the hard limit"); over != tt.over {
				t.Errorf("%d tokens against %d: %v", ed.Tokens, tt.limit, err)
			}
		})
	}
}

// TestCheckAnchors: the only cache_control moves Check accepts are a
// breakpoint added in the client's form (not on the newest message, not
// on thinking) and the client's message breakpoints removed, oldest
// first, when the room for added ones needs it.
func TestCheckAnchors(t *testing.T) {
	const eph = `"cache_control":{"type":"ephemeral"}`
	const client = `{"model":"m","max_tokens":100,"system":[{"type":"text","text":"sys",` + eph + `}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"task",` + eph + `}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long listing",` + eph + `}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"done"}]},` +
		`{"role":"user","content":"first"},` +
		`{"role":"assistant","content":[{"type":"text","text":"ok"}]},` +
		`{"role":"user","content":[{"type":"text","text":"next, please",` + eph + `}]}]}`
	edit := func(pairs ...string) string {
		out := client
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(out, pairs[i]) {
				t.Fatalf("%q not in the request", pairs[i])
			}
			out = strings.Replace(out, pairs[i], pairs[i+1], 1)
		}
		return out
	}
	const (
		task    = `{"type":"text","text":"task",` + eph + `}`
		listing = `"content":"a long listing",` + eph + `}`
		done    = `{"type":"text","text":"done"}`
		ok      = `{"type":"text","text":"ok"}`
	)
	tests := []struct {
		name     string
		upstream string
		want     string
		edits    Edits
	}{
		{name: "added, one removed for room", upstream: edit(done, `{"type":"text","text":"done",`+eph+`}`, task, `{"type":"text","text":"task"}`),
			edits: Edits{Anchored: 1, Unanchored: 1}},
		{name: "added on a cleared result, one removed", upstream: edit(`{"type":"text","text":"ok"}`, `{"type":"text","text":"[cleared]",`+eph+`}`, task, `{"type":"text","text":"task"}`),
			edits: Edits{Changed: 1, Anchored: 1, Unanchored: 1}},
		{name: "two removed, one needed", upstream: edit(listing, `"content":"[cleared]"}`, done, `{"type":"text","text":"done",`+eph+`}`, task, `{"type":"text","text":"task"}`),
			want: "did not need"},
		{name: "added on a string content", upstream: edit(`"content":"first"`, `"content":[{"type":"text","text":"first",`+eph+`}]`, task, `{"type":"text","text":"task"}`),
			edits: Edits{Anchored: 1, Unanchored: 1}},
		{name: "cleared, breakpoint kept", upstream: edit(`"content":"a long listing",`, `"content":"[cleared]",`),
			edits: Edits{Changed: 1}},
		{name: "rewritten without its breakpoint: the rewrite's", upstream: edit(listing, `"content":"[cleared]"}`),
			edits: Edits{Changed: 1}},
		{name: "over four", upstream: edit(done, `{"type":"text","text":"done",`+eph+`}`), want: "over the API's 4"},
		{name: "newer removed first", upstream: edit(done, `{"type":"text","text":"done",`+eph+`}`, listing, `"content":"a long listing"}`), want: "removed before its older one"},
		{name: "removed without need", upstream: edit(task, `{"type":"text","text":"task"}`), want: "did not need"},
		{name: "on the newest", upstream: edit(task, `{"type":"text","text":"task"}`, `"next, please",`+eph+`}`, `"next, please",`+eph+`,"x":1}`), want: "newest"},
		{name: "newest's removed", upstream: edit(ok, `{"type":"text","text":"ok",`+eph+`}`, `"next, please",`+eph+`}`, `"next, please"}`), want: "newest message was removed"},
		{name: "a form the client never used", upstream: edit(done, `{"type":"text","text":"done","cache_control":{"type":"ephemeral","ttl":"1h"}}`, task, `{"type":"text","text":"task"}`), want: "form the client never used"},
		{name: "on thinking", upstream: edit(`"signature":"s"}`, `"signature":"s",`+eph+`}`, task, `{"type":"text","text":"task"}`), want: "thinking"},
		{name: "value changed", upstream: edit(task, `{"type":"text","text":"task","cache_control":{"type":"ephemeral","ttl":"5m"}}`), want: "became"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := Limits{Window: 100000, Counter: tokens.NewEstimator()}
			ed, err := Check([]byte(client), []byte(tt.upstream), lim)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if ed != tt.edits {
					t.Errorf("edits = %+v, want %+v", ed, tt.edits)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want a violation with %q", err, tt.want)
			}
		})
	}
}
