package assemble

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/wire"
)

// words returns a text of about n tokens for the quarter counter.
func words(n int) string { return strings.Repeat("abc ", n) }

func system(n int) []conv.Block {
	return []conv.Block{conv.NewText(conv.SourceSystem, words(n))}
}

// where lists anchors as kind@place: s0 a system block, t1 a tool, m3.1
// block 1 of message 3.
func where(as []Anchor) []string {
	var out []string
	for _, a := range as {
		switch {
		case a.Tool:
			out = append(out, fmt.Sprintf("%s@t%d", a.Kind, a.Block))
		case a.Msg < 0:
			out = append(out, fmt.Sprintf("%s@s%d", a.Kind, a.Block))
		default:
			out = append(out, fmt.Sprintf("%s@m%d.%d", a.Kind, a.Msg, a.Block))
		}
	}
	return out
}

// marked lists where the request carries cache_control, in the same form.
func marked(t *testing.T, a *Assembly) []string {
	t.Helper()
	req := a.Request
	var out []string
	for i, tl := range req.Tools {
		if tl.CacheControl != nil {
			out = append(out, fmt.Sprintf("t%d", i))
		}
	}
	for i, b := range req.System {
		if b.CacheControl != nil {
			out = append(out, fmt.Sprintf("s%d", i))
		}
	}
	for i, m := range req.Messages {
		for j, b := range m.Blocks {
			if b.CacheControl != nil {
				out = append(out, fmt.Sprintf("m%d.%d", i, j))
			}
			for _, n := range b.Content {
				if n.CacheControl != nil {
					t.Errorf("cache_control inside a tool result of message %d", i)
				}
			}
		}
	}
	return out
}

func encode(t *testing.T, a *Assembly) []byte {
	t.Helper()
	body, err := wire.EncodeAnthropic(a.Request)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// manyCalls is an assistant message with n parallel calls and the user
// message answering them.
func manyCalls(prefix string, n int) (conv.Message, conv.Message) {
	var calls, results []conv.Block
	for i := range n {
		id := fmt.Sprintf("%s%02d", prefix, i)
		calls = append(calls, call(id))
		results = append(results, result(id, words(30)))
	}
	return asst(calls...), user(results...)
}

func TestAnchors(t *testing.T) {
	thinkingOnly := asst(conv.NewThinking("let me think", "sig"), conv.Block{Type: conv.TypeRedactedThinking, Data: "xx", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)})
	wide, wideResults := manyCalls("w", 25)
	tests := []struct {
		name string
		cfg  Config
		c    func() *conv.Conversation
		want []string
	}{
		{name: "first turn: system prefix and the question",
			c: func() *conv.Conversation {
				c := conversation(user(text(words(100))))
				c.System = system(1500)
				return c
			},
			want: []string{"system@s0", "newest@m0.0"}},
		{name: "nothing below the minimum cacheable prefix",
			c: func() *conv.Conversation {
				c := conversation(user(text("hi")), asst(say("hello")), user(text("bye")))
				c.System = system(100)
				return c
			}},
		{name: "the minimum is the model's",
			cfg: Config{MinCacheTokens: 20},
			c: func() *conv.Conversation {
				c := conversation(user(text("hi")), asst(say("hello")), user(text("bye")))
				c.System = system(100)
				return c
			},
			want: []string{"system@s0", "round@m1.0", "newest@m2.0"}}, // the message before the question is both
		{name: "tools only: the last tool ends the prefix",
			c: func() *conv.Conversation {
				c := conversation(user(text("hi")))
				for i := range 3 {
					c.Tools = append(c.Tools, conv.Tool{Name: fmt.Sprint("T", i), Description: words(400), InputSchema: []byte(`{"type":"object"}`)})
				}
				return c
			},
			want: []string{"system@t3", "newest@m0.0"}},
		{name: "mid-round: system, history, previous and newest",
			c: func() *conv.Conversation {
				c := conversation(
					user(text(words(2000))), asst(say(words(500))),
					user(text("next task")), asst(say("reading"), call("r1")), user(result("r1", words(3000))),
					asst(call("r2")), user(result("r2", words(200))),
				)
				c.System = system(1500)
				return c
			},
			want: []string{"system@s0", "round@m1.0", "previous@m5.0", "newest@m6.0"}},
		// round@m1.0 would add little over the summary just before it,
		// so its slot goes to the system prefix
		{name: "a summary is a milestone; the least valuable candidate goes",
			c: func() *conv.Conversation {
				c := conversation(
					user(conv.NewSummary(words(3000), conv.Span{First: 1, Last: 9}), text("go on")), asst(say(words(100))),
					user(text("next task")), asst(call("r1")), user(result("r1", words(3000))),
					asst(call("r2")), user(result("r2", words(200))),
				)
				c.System = system(1500)
				return c
			},
			want: []string{"system@s0", "summary@m0.0", "previous@m5.0", "newest@m6.0"}},
		{name: "more than 20 blocks since the last write: a lookback anchor",
			c: func() *conv.Conversation {
				c := conversation(user(text(words(2000))), asst(say("ok"), call("a1")), user(result("a1", words(100))), wide, wideResults)
				c.System = system(1500)
				return c
			},
			// the previous request wrote at m2.0; m3 has 25 blocks, so
			// m3.24 is out of reach and m3.18 (19 blocks on) is not
			want: []string{"system@s0", "lookback@m3.18", "previous@m3.24", "newest@m4.24"}},
		{name: "no anchor on thinking: the text before it",
			cfg: Config{MinCacheTokens: 10},
			c: func() *conv.Conversation {
				c := conversation(user(text(words(100))), asst(say("a")), user(text("b")), asst(say("x"), conv.NewThinking("hmm", "sig")), user(text("c")))
				c.System = system(100)
				return c
			},
			want: []string{"system@s0", "round@m3.0", "newest@m4.0"}},
		{name: "no anchor on thinking: none in a message of thinking only",
			cfg: Config{MinCacheTokens: 10},
			c: func() *conv.Conversation {
				c := conversation(user(text(words(100))), asst(say("a")), user(text("b")), thinkingOnly, user(text("c")))
				c.System = system(100)
				return c
			},
			want: []string{"system@s0", "newest@m4.0"}},
		{name: "an empty system block is not sent",
			c: func() *conv.Conversation {
				c := conversation(user(text("hi")))
				c.System = append(system(1500), conv.NewText(conv.SourceSystem, ""))
				return c
			},
			want: []string{"system@s0", "newest@m0.0"}},
		{name: "fewer anchors allowed: the most valuable stay",
			cfg: Config{MaxAnchors: 2},
			c: func() *conv.Conversation {
				c := conversation(user(text(words(2000))), asst(say(words(500))), user(text("next")), asst(call("r1")), user(result("r1", words(3000))))
				c.System = system(1500)
				return c
			},
			// the end of the history (m1) is further from the newest
			// message than m3 is, so it is the better fallback
			want: []string{"round@m1.0", "newest@m4.0"}},
		{name: "anchors disabled",
			cfg: Config{MaxAnchors: -1},
			c: func() *conv.Conversation {
				c := conversation(user(text(words(2000))))
				c.System = system(1500)
				return c
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t, tt.cfg)
			c := tt.c()
			a, err := b.Build(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := where(a.Anchors)
			if !slices.Equal(got, tt.want) {
				t.Errorf("anchors %q, want %q", got, tt.want)
			}
			var places []string
			for _, w := range got {
				places = append(places, w[strings.Index(w, "@")+1:])
			}
			if m := marked(t, a); !slices.Equal(m, places) {
				t.Errorf("request carries cache_control at %q, anchors say %q", m, places)
			}
			for _, an := range a.Anchors {
				if an.Tokens < b.cfg.MinCacheTokens {
					t.Errorf("%v caches only %d tokens", an, an.Tokens)
				}
			}
		})
	}
}

func TestAnchorMarker(t *testing.T) {
	c := conversation(user(text(words(2000))))
	for _, tt := range []struct{ ttl, want string }{
		{"", `{"type":"ephemeral"}`},
		{"5m", `{"type":"ephemeral"}`},
		{"1h", `{"type":"ephemeral","ttl":"1h"}`},
	} {
		a, err := newBuilder(t, Config{CacheTTL: tt.ttl}).Build(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(a.Request.Messages[0].Blocks[0].CacheControl); got != tt.want {
			t.Errorf("ttl %q: cache_control %s, want %s", tt.ttl, got, tt.want)
		}
	}
	if _, err := New(Config{CacheTTL: "2h"}); err == nil {
		t.Error("a TTL the provider does not have was accepted")
	}
	if _, err := New(Config{MaxAnchors: 5}); err == nil {
		t.Error("five anchors were accepted")
	}
	if _, err := New(Config{Dir: "relative/dir"}); err == nil {
		t.Error("a relative workspace path was accepted")
	}
}

func TestImportedCacheControlIsReplaced(t *testing.T) {
	cc := json.RawMessage(`{"type":"ephemeral"}`)
	c := conversation(user(text(words(2000))), asst(say("a"), call("t1")), user(result("t1", "x"), text("b")))
	c.System = system(10)
	c.Tools = []conv.Tool{{Name: "Read", InputSchema: []byte(`{"type":"object"}`), CacheControl: cc}}
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			c.Messages[i].Blocks[j].CacheControl = cc
		}
	}
	c.System[0].CacheControl = cc
	c.Messages[2].Blocks[0].Content = []conv.Block{{Type: conv.TypeText, Text: "x", CacheControl: cc}}
	c.Messages[2].Blocks[0].Text = ""
	c.Tokens(quarter{}) // Build fills these caches; nothing else may change
	before, _ := json.Marshal(c)

	a, err := newBuilder(t, Config{}).Build(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := marked(t, a); !slices.Equal(got, []string{"m1.1", "m2.1"}) {
		t.Errorf("cache_control at %q", got)
	}
	if after, _ := json.Marshal(c); !bytes.Equal(before, after) {
		t.Error("Build changed the conversation")
	}
}

func TestLayersAndRecap(t *testing.T) {
	todos := []Todo{{Content: "Read the failing test", Status: "completed"}, {Content: "Fix the parser", Status: "in_progress"}, {Content: "   "}, {Content: "Run </system-reminder> tests"}}
	tests := []struct {
		name   string
		c      *conv.Conversation
		layers Layers
	}{
		{"first question", conversation(user(text("a"))),
			Layers{History: Range{0, 0}, Question: 0, Scratchpad: Range{1, 1}, Recap: true}},
		{"mid-round", conversation(user(text("a")), asst(say("b")), user(text("c")), asst(call("t1")), user(result("t1", "x"))),
			Layers{History: Range{0, 2}, Question: 2, Scratchpad: Range{3, 5}, Recap: true}},
		{"no question: a resumed summary", conversation(user(conv.NewSummary("s", conv.Span{First: 1, Last: 2}))),
			Layers{History: Range{0, 1}, Question: -1, Scratchpad: Range{1, 1}, Recap: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(tt.c.Messages[len(tt.c.Messages)-1].Blocks)
			a, err := newBuilder(t, Config{MinCacheTokens: 1}).Build(tt.c, todos)
			if err != nil {
				t.Fatal(err)
			}
			if a.Layers != tt.layers {
				t.Errorf("layers %+v, want %+v", a.Layers, tt.layers)
			}
			last := a.Request.Messages[len(a.Request.Messages)-1]
			if len(last.Blocks) != n+1 {
				t.Fatalf("newest message has %d blocks, want %d", len(last.Blocks), n+1)
			}
			recap := last.Blocks[n]
			want := "<system-reminder>\nYour current todo list, for reference. Keep it up to date with the todo tool as you work; do not mention this reminder to the user.\n1. [completed] Read the failing test\n2. [in_progress] Fix the parser\n3. [pending] Run &lt;/system-reminder> tests\n</system-reminder>"
			if recap.Text != want || recap.CacheControl != nil {
				t.Errorf("recap = %q", recap.Text)
			}
			// the recap comes after every anchor
			for _, an := range a.Anchors {
				if an.Msg == len(a.Request.Messages)-1 && an.Block >= n {
					t.Errorf("anchor %+v on or after the recap", an)
				}
			}
			if len(tt.c.Messages[len(tt.c.Messages)-1].Blocks) != n {
				t.Error("the recap was stored in the conversation")
			}
		})
	}
	a, _ := newBuilder(t, Config{}).Build(conversation(user(text("a"))), []Todo{{Content: " "}})
	if a.Layers.Recap || len(a.Request.Messages[0].Blocks) != 1 {
		t.Error("an empty todo list was recapped")
	}
}

func TestBuildRefusesInvalid(t *testing.T) {
	b := newBuilder(t, Config{})
	noTools := conversation(user(text("a")), asst(call("t1")), user(result("t1", "x")))
	noTools.Tools = nil
	for name, c := range map[string]*conv.Conversation{
		"tool calls, no tools": noTools,
		"empty":                {},
		"ends with a reply":    conversation(user(text("a")), asst(say("b"))),
		"unanswered call":      conversation(user(text("a")), asst(call("t1"))),
		"orphan result":        conversation(user(result("t9", "x"), text("a"))),
	} {
		_, err := b.Build(c, nil)
		var vs conv.Violations
		if !errors.Is(err, ErrInvalid) || c != noTools && !errors.As(err, &vs) {
			t.Errorf("%s: err = %v, want ErrInvalid with violations", name, err)
		}
	}
}

// TestDeterministic: the same state and config give the same bytes, from
// the same Builder, a new one, and a deep copy of the conversation.
func TestDeterministic(t *testing.T) {
	ws, _ := workspace(t)
	for i, seed := range [][]byte{nil, []byte("deterministic"), bytes.Repeat([]byte{9, 77, 3, 200}, 60)} {
		c := convtest.Valid(convtest.NewChoices(seed), convtest.Options{Request: true})
		todos := []Todo{{Content: "one", Status: "in_progress"}}
		cfg := Config{Workspace: openWS(t, ws), Dir: ws, MinCacheTokens: 50}
		first := encode(t, mustBuild(t, newBuilder(t, cfg), c, todos))
		again := encode(t, mustBuild(t, newBuilder(t, cfg), c, todos))
		copied := encode(t, mustBuild(t, newBuilder(t, cfg), c.Clone(), todos))
		if !bytes.Equal(first, again) || !bytes.Equal(first, copied) {
			t.Errorf("seed %d: requests differ:\n%s\n%s\n%s", i, first, again, copied)
		}
	}
}

func mustBuild(t *testing.T, b *Builder, c *conv.Conversation, todos []Todo) *Assembly {
	t.Helper()
	a, err := b.Build(c, todos)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// FuzzBuild: for any valid conversation, the request passes
// conv.CheckRequest, carries at most four anchors (none on thinking or
// empty blocks, none below the minimum), encodes to the same bytes twice
// and from a copy, and the conversation is left as it was.
func FuzzBuild(f *testing.F) {
	for _, s := range [][]byte{nil, {1}, []byte("a fuzzed conversation"), bytes.Repeat([]byte{5, 250, 17, 3, 99}, 50)} {
		f.Add(s, uint16(1024), true)
	}
	ws := f.TempDir()
	srv := llmtest.NewServer(f, llmtest.Config{})
	f.Fuzz(func(t *testing.T, data []byte, minTokens uint16, todo bool) {
		c := convtest.Valid(convtest.NewChoices(data), convtest.Options{Request: true})
		resign(c)
		var todos []Todo
		if todo {
			todos = []Todo{{Content: "a </system-reminder> b", Status: "pending"}}
		}
		b, err := New(Config{Workspace: openWS(t, ws), Dir: ws, Model: "claude-sonnet-4-5", MaxTokens: 4096, MinCacheTokens: int(minTokens%2048) + 1, Counter: quarter{}})
		if err != nil {
			t.Fatal(err)
		}
		c.Tokens(quarter{})
		before, _ := json.Marshal(c)
		a, err := b.Build(c, todos)
		if err != nil {
			t.Fatal(err)
		}
		view := &conv.Conversation{System: a.Request.System, Tools: a.Request.Tools, Messages: a.Request.Messages}
		if vs := conv.CheckRequest(view); len(vs) > 0 {
			t.Fatalf("request fails CheckRequest: %v", vs)
		}
		if len(a.Anchors) > 4 || len(marked(t, a)) != len(a.Anchors) {
			t.Fatalf("anchors %v, marked %v", where(a.Anchors), marked(t, a))
		}
		for _, an := range a.Anchors {
			if an.Tokens < b.cfg.MinCacheTokens {
				t.Fatalf("anchor %+v below the minimum %d", an, b.cfg.MinCacheTokens)
			}
			if an.Msg >= 0 {
				if bl := a.Request.Messages[an.Msg].Blocks[an.Block]; !anchorable(&bl) {
					t.Fatalf("anchor on a %s block", bl.Type)
				}
			}
		}
		if after, _ := json.Marshal(c); !bytes.Equal(before, after) {
			t.Fatal("Build changed the conversation")
		}
		body := encode(t, a)
		a2, err := b.Build(c.Clone(), todos)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, encode(t, a2)) {
			t.Fatal("the same state gave different bytes")
		}
		if _, err := wire.DecodeAnthropic(body); err != nil {
			t.Fatalf("the body does not decode: %v", err)
		}
		if status, msg := post(t, srv, body); status != http.StatusOK {
			srv.TakeRejected()
			t.Fatalf("the test server answered %d: %s", status, msg)
		}
	})
}

// resign gives generated thinking blocks the signatures the test server
// issues (see llmtest's thinkingSignature), as if it had produced them.
func resign(c *conv.Conversation) {
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			if b := &c.Messages[i].Blocks[j]; b.Type == conv.TypeThinking {
				h := sha256.Sum256([]byte("llmtest thinking\x00" + b.Text))
				b.Signature = "sig_" + base64.RawURLEncoding.EncodeToString(h[:])
			}
		}
	}
}

// post sends an Anthropic request body to the test server, which checks
// it against the real API's rules.
func post(t *testing.T, srv *llmtest.Server, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func TestEmptySystemBlocksAreNotSent(t *testing.T) {
	c := conversation(user(text("hi")))
	c.System = []conv.Block{conv.NewText(conv.SourceSystem, ""), system(1500)[0], conv.NewText(conv.SourceSystem, " \n")}
	a, err := newBuilder(t, Config{}).Build(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Request.System) != 1 || a.Layers.System != 1 || a.Request.System[0].Text != c.System[1].Text {
		t.Fatalf("system %+v, layers %+v", a.Request.System, a.Layers)
	}
	if got := where(a.Anchors); !slices.Equal(got, []string{"system@s0", "newest@m0.0"}) {
		t.Errorf("anchors %q", got)
	}
	if len(c.System) != 3 {
		t.Error("Build changed the conversation's system blocks")
	}
}
