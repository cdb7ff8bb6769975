package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// scriptedModel is a test server's script: the replies, in order, and the
// summary every compaction request gets.
type scriptedModel struct {
	Summary string        `json:"summary"`
	Replies []scriptReply `json:"replies"`
	// SummaryDelayMS holds every summary back this long (a hung model).
	SummaryDelayMS int `json:"summary_delay_ms"`
}

type scriptReply struct {
	Text  string `json:"text"`
	Calls []struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"calls"`
}

// llmState is a script's test server.
type llmState struct {
	mu         sync.Mutex
	srv        *llmtest.Server
	model      scriptedModel
	next       int
	summaries  int
	unexpected int
	// servers counts the servers the script started: tool call ids stay
	// unique across them, as a session resumed against the next one
	// needs.
	servers int
}

func (st *llmState) handle(c *llmtest.Call) llmtest.Reply {
	st.mu.Lock()
	defer st.mu.Unlock()
	if summaryRequest(c) {
		st.summaries++
		s := st.model.Summary
		if s == "" {
			s = "<summary>\n## Task and intent\nThe scripted task.\n</summary>"
		}
		r := llmtest.Text(s)
		if d := st.model.SummaryDelayMS; d > 0 {
			r.Fault = &llmtest.Fault{Kind: llmtest.Slow, Delay: time.Duration(d) * time.Millisecond}
		}
		return r
	}
	if st.next >= len(st.model.Replies) {
		st.unexpected++
		return llmtest.Text("(no more scripted replies)")
	}
	r := st.model.Replies[st.next]
	st.next++
	reply := llmtest.Reply{Text: r.Text}
	spilled := spilledPath(c.Messages)
	for _, c := range r.Calls {
		in := string(c.Input)
		if in == "" {
			in = "{}"
		}
		in = strings.ReplaceAll(in, "SPILLED", spilled)
		call := llmtest.Use(c.Name, in)
		if st.servers > 1 {
			call.ID = fmt.Sprintf("toolu_server%d_%d_%d", st.servers, st.next, len(reply.Calls)+1)
		}
		reply.Calls = append(reply.Calls, call)
	}
	return reply
}

// summaryRequest tells the compactor's summary requests from the agent's.
func summaryRequest(c *llmtest.Call) bool {
	if strings.Contains(c.System, "hand-over summaries") {
		return true
	}
	if n := len(c.Messages); n > 0 {
		for _, b := range c.Messages[n-1].Blocks {
			if b.Type == conv.TypeText && strings.Contains(b.Text, "Do not call any tool") {
				return true
			}
		}
	}
	return false
}

// agentScriptSetup gives each script a holder for its test server.
func agentScriptSetup(env *testscript.Env) error {
	env.Values["llm"] = &llmState{}
	return nil
}

// agentScriptCmds are the commands the agent scripts use:
//
//	llmserver [-openai] [-nocache] [-window N] FILE
//	                           start a test server scripted by FILE (JSON:
//	                           {"summary": "...", "replies": [{"text": "...",
//	                           "calls": [{"name": "Read", "input": {...}}]}]})
//	                           and point CTXKIT_BASE_URL at it; -nocache:
//	                           an OpenAI-compatible server without a cache;
//	                           -window: its model's window (200,000)
//	llmcalls [-blocks]         print what the server received: one line per
//	                           request (with -blocks, then the blocks of its
//	                           last message), then the totals
//	waitfile FILE              wait until FILE exists
//	httplisten                 serve HTTP on a loopback port and set
//	                           $LISTENER to its host:port
func agentScriptCmds(t *testing.T) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"llmserver": func(ts *testscript.TestScript, neg bool, args []string) {
			st := ts.Value("llm").(*llmState)
			api := llmtest.Anthropic
			var cfg llmtest.Config
			for len(args) > 0 && strings.HasPrefix(args[0], "-") {
				switch args[0] {
				case "-openai":
					api = llmtest.OpenAI
				case "-nocache":
					cfg.NoCache = true
				case "-window":
					if len(args) < 2 {
						ts.Fatalf("llmserver: -window needs a number")
					}
					n, err := strconv.Atoi(args[1])
					if err != nil {
						ts.Fatalf("llmserver: -window %s: %v", args[1], err)
					}
					cfg.Window = n
					args = args[1:]
				default:
					ts.Fatalf("llmserver: unknown flag %s", args[0])
				}
				args = args[1:]
			}
			if len(args) != 1 {
				ts.Fatalf("usage: llmserver [-openai] [-nocache] [-window N] FILE")
			}
			var m scriptedModel
			if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &m); err != nil {
				ts.Fatalf("llmserver: %s: %v", args[0], err)
			}
			st.mu.Lock()
			if st.srv != nil {
				st.srv.Close()
			}
			st.model, st.next, st.summaries, st.unexpected = m, 0, 0, 0
			st.servers++
			st.srv = llmtest.NewServer(t, cfg)
			st.srv.Handle(st.handle)
			st.mu.Unlock()
			ts.Setenv("CTXKIT_BASE_URL", st.srv.BaseURL(api))
			ts.Defer(st.srv.Close)
		},
		"httplisten": func(ts *testscript.TestScript, neg bool, args []string) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				io.WriteString(w, "hello from the listener\n")
			}))
			ts.Defer(srv.Close)
			ts.Setenv("LISTENER", srv.Listener.Addr().String())
		},
		// waitfile FILE waits until FILE exists: a background command has
		// reached a point the script acts on (for example, to interrupt it).
		"waitfile": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 1 {
				ts.Fatalf("usage: waitfile FILE")
			}
			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
					return
				}
				if time.Now().After(deadline) {
					ts.Fatalf("waitfile: %s did not appear within a minute", args[0])
				}
				time.Sleep(10 * time.Millisecond)
			}
		},
		"llmcalls": func(ts *testscript.TestScript, neg bool, args []string) {
			st := ts.Value("llm").(*llmState)
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.srv == nil {
				ts.Fatalf("llmcalls: no llmserver started")
			}
			blocks := len(args) > 0 && args[0] == "-blocks"
			calls := st.srv.Calls()
			for _, c := range calls {
				last := ""
				if n := len(c.Messages); n > 0 {
					bs := c.Messages[n-1].Blocks
					for i := len(bs) - 1; i >= 0; i-- {
						if t := bs[i].PlainText(); t != "" {
							last = strings.Join(strings.Fields(t), " ")
							break
						}
					}
				}
				if (blocks || os.Getenv("H9DEBUG") != "") && len(c.Messages) > 0 {
					for _, b := range c.Messages[len(c.Messages)-1].Blocks {
						fmt.Fprintf(ts.Stdout(), "  block %s %.600q\n", b.Type, b.PlainText())
					}
				}
				// The end of the text: where the user's words are when a
				// provider merges a message's texts into one.
				if r := []rune(last); len(r) > 70 {
					last = "…" + string(r[len(r)-70:])
				}
				kind := "agent"
				if summaryRequest(c) {
					kind = "summary"
				}
				sum := ""
				for _, m := range c.Messages {
					for _, b := range m.Blocks {
						if b.Type == conv.TypeSummary || strings.Contains(b.Text, "[Summary of turns") {
							sum = " summary"
						}
					}
				}
				fmt.Fprintf(ts.Stdout(), "call %d %s status=%d messages=%d%s last=%q\n", c.N, kind, c.Status, len(c.Messages), sum, last)
			}
			fmt.Fprintf(ts.Stdout(), "%d requests, %d summary requests, %d rejected, %d unexpected\n",
				len(calls), st.summaries, len(st.srv.Rejected()), st.unexpected)
		},
	}
}

// TestAgentConfigRejectsKeys: an API key in a config file is refused, not
// used.
func TestAgentConfigRejectsKeys(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/config.json"
	for _, body := range []string{`{"api_key":"sk-secret"}`, `{"anthropic_api_key":"x"}`, `{"model":"m","auth_token":"x"}`} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var o agentOptions
		err := o.loadConfig(path)
		if err == nil || !strings.Contains(err.Error(), "environment only") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v", body, err)
		}
	}
	if err := os.WriteFile(path, []byte(`{"model":"m","window":50000,"max_tokens":4000,"keep_value":2.5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	o := agentOptions{Model: "flag"}
	if err := o.loadConfig(path); err != nil {
		t.Fatal(err)
	}
	if o.Model != "flag" || o.Window != 50000 || o.MaxTokens != 4000 || o.KeepValue != 2.5 {
		t.Errorf("config filled %+v", o)
	}
	flagged := agentOptions{KeepValue: 8}
	if err := flagged.loadConfig(path); err != nil || flagged.KeepValue != 8 {
		t.Errorf("--keep-value 8 with keep_value 2.5 in the config: %v, %v", flagged.KeepValue, err)
	}
	if err := os.WriteFile(path, []byte(`{"modle":"m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := o.loadConfig(path); err == nil || !strings.Contains(err.Error(), `unknown key "modle"`) {
		t.Errorf("typo: %v", err)
	}
}

// TestREPLCtrlC: a Ctrl-C at the prompt asks for a second one, which
// exits; any input in between starts over.
func TestREPLCtrlC(t *testing.T) {
	lines := make(chan string)
	out := &syncBuffer{}
	r := &repl{
		ui:    newUI(out, out, false, false),
		sig:   make(chan os.Signal, 1),
		lines: make(chan lineResult, 1),
		read: func() (string, error) {
			l, ok := <-lines
			if !ok {
				return "", io.EOF
			}
			return l, nil
		},
	}
	done := make(chan error, 1)
	go func() { done <- r.loop() }()
	waitFor := func(s string, n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for strings.Count(out.String(), s) < n {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the output:\n%s", s, out.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	r.sig <- os.Interrupt
	waitFor("(Ctrl-C again to exit)", 1)
	lines <- "/help"
	waitFor("/compact [FOCUS]", 1)
	r.sig <- os.Interrupt
	waitFor("(Ctrl-C again to exit)", 2)
	select {
	case err := <-done:
		t.Fatalf("the loop ended after Ctrl-C, a command and one more Ctrl-C: %v", err)
	default:
	}
	r.sig <- os.Interrupt
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(lines)
}

// syncBuffer is a strings.Builder safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestDemoSessionEmbedded: the embedded demo session imports and is a
// whole session of ctxkit's agent.
func TestDemoSessionEmbedded(t *testing.T) {
	s, err := demoSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if vs := conv.Check(s.Conv); len(vs) > 0 {
		t.Fatal(vs)
	}
	turns := 0
	for _, m := range s.Conv.Messages {
		if m.Role == conv.RoleAssistant {
			turns++
		}
	}
	if turns < 40 || len(s.Conv.Tools) < 10 || s.Name == "" {
		t.Errorf("demo session: %d assistant turns, %d tools, name %q", turns, len(s.Conv.Tools), s.Name)
	}
}

// TestAgentHelpNamesEverySetting: ctxkit agent --help names every
// environment variable and every config key the agent reads, so a setting
// added to agentEnv or configKeys is documented where users look.
func TestAgentHelpNamesEverySetting(t *testing.T) {
	long := newAgentCmd().Long
	for _, e := range agentEnv {
		if !strings.Contains(long, e.env) {
			t.Errorf("--help does not name %s", e.env)
		}
		if !strings.Contains(long, e.key) {
			t.Errorf("--help does not name the config key %s", e.key)
		}
	}
	for _, k := range configKeys {
		if !strings.Contains(long, k) {
			t.Errorf("--help does not name the config key %s", k)
		}
	}
}
