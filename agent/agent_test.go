package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
)

// TestInterruptBash cancels a turn while a long Bash command runs: the
// command is killed, the call gets the "interrupted by the user" error
// result, the transcript is consistent, and the next turn carries the
// result and the new words in one message.
func TestInterruptBash(t *testing.T) {
	s := start(t, options{},
		say(llmtest.Calls("Running the slow job.",
			llmtest.Use("Read", `{"file_path":"README.md"}`),
			llmtest.Use("Bash", `{"command":"echo partial output; echo started > started.flag; sleep 60; echo never"}`),
			llmtest.Use("Bash", `{"command":"touch second.flag"}`))),
		func(c *llmtest.Call) llmtest.Reply {
			n := len(c.Messages)
			last := c.Messages[n-1]
			if len(last.Blocks) != 4 {
				t.Errorf("the resumed turn's message has %d blocks, want 3 results and the text: %v", len(last.Blocks), last.Blocks)
				return llmtest.Text("?")
			}
			if last.Blocks[0].IsError || !strings.Contains(last.Blocks[0].ResultText(), "billing") {
				t.Errorf("the finished Read lost its result: %v", last.Blocks[0])
			}
			for _, b := range last.Blocks[1:3] {
				if !b.IsError || !strings.Contains(b.ResultText(), agent.InterruptedText) {
					t.Errorf("interrupted call result: %v", b)
				}
			}
			if !strings.Contains(last.Blocks[1].ResultText(), "partial output") {
				t.Errorf("the partial output is lost: %q", last.Blocks[1].ResultText())
			}
			if last.Blocks[3].Text != "Skip the slow job, just say hi." {
				t.Errorf("the new words: %v", last.Blocks[3])
			}
			return llmtest.Text("Hi.")
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	flag := filepath.Join(s.ws, "started.flag")
	go func() {
		for {
			if _, err := os.Stat(flag); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	_, err := s.agent.Run(ctx, "Run the slow job.")
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("Run: %v, want ErrInterrupted", err)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "second.flag")); err == nil {
		t.Errorf("the call after the interrupted one ran")
	}
	s.check(t)
	if !s.agent.Pending() {
		t.Fatalf("after the interruption the turn should wait for the next input")
	}
	c := s.agent.Conversation()
	last := c.Messages[len(c.Messages)-1]
	if last.Role != conv.RoleUser || len(last.Blocks) != 3 {
		t.Fatalf("last message: %v", last)
	}
	if st := s.agent.Stats(); st.Interrupted != 1 {
		t.Errorf("stats: %+v", st)
	}

	res, err := s.agent.Run(context.Background(), "Skip the slow job, just say hi.")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hi." {
		t.Errorf("result %q", res.Text)
	}
	s.check(t)
	// The merged message opens the new round.
	c = s.agent.Conversation()
	if rs := c.Rounds(); len(rs) != 2 {
		t.Errorf("%d rounds, want 2", len(rs))
	}
}

// TestInterruptStream cancels a turn while the response streams: nothing
// of it is recorded and the turn can go on.
func TestInterruptStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sawText bool
	onText := func(c *agent.Config) {
		prev := c.OnEvent
		c.OnEvent = func(e agent.Event) {
			prev(e)
			if e.Kind == agent.EventText && !sawText {
				sawText = true
				cancel()
			}
		}
	}
	s := start(t, options{cfg: onText},
		say(llmtest.Reply{Text: "This answer will never finish because the server stalls in the middle of it.",
			Fault: &llmtest.Fault{Kind: llmtest.Stall, Delay: time.Minute, Events: 4}}),
		say(llmtest.Text("Done.")))
	_, err := s.agent.Run(ctx, "Say something long.")
	if !errors.Is(err, agent.ErrInterrupted) {
		t.Fatalf("Run: %v, want ErrInterrupted", err)
	}
	if !sawText {
		t.Errorf("no text streamed before the stall")
	}
	s.check(t)
	c := s.agent.Conversation()
	if len(c.Messages) != 1 || !s.agent.Pending() {
		t.Fatalf("after an interrupted stream: %d messages, pending %v", len(c.Messages), s.agent.Pending())
	}
	// An empty prompt goes on with the waiting turn as it is.
	res, err := s.agent.Run(context.Background(), "")
	if err != nil || res.Text != "Done." {
		t.Fatalf("continue: %q, %v", res.Text, err)
	}
	s.check(t)
}

// TestResumeAfterCrash reopens a session whose process died while a tool
// ran: the dangling call gets an error result and the session goes on.
func TestResumeAfterCrash(t *testing.T) {
	s := start(t, options{},
		func(c *llmtest.Call) llmtest.Reply {
			last := c.Messages[len(c.Messages)-1]
			if len(last.Blocks) != 2 || !last.Blocks[0].IsError || !strings.Contains(last.Blocks[0].ResultText(), "session stopped") || last.Blocks[1].Text != "Where were we?" {
				t.Errorf("resumed message: %v", last.Blocks)
			}
			return llmtest.Text("We were running the tests.")
		})
	// What a crash mid-tool leaves: the call recorded, no result.
	ctx := context.Background()
	c := s.agent.Conversation()
	u := conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Run the tests.")}}
	c.Append(u)
	if err := s.store.Append(ctx, c.Messages[0]); err != nil {
		t.Fatal(err)
	}
	m := conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("toolu_1", "Bash", []byte(`{"command":"go test ./..."}`))}}
	c.Append(m)
	if err := s.store.Append(ctx, c.Messages[1]); err != nil {
		t.Fatal(err)
	}
	s.reopen(t, options{})
	s.check(t)
	if !s.agent.Pending() {
		t.Fatal("the resumed session should wait for input")
	}
	res, err := s.agent.Run(ctx, "Where were we?")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "We were running the tests." {
		t.Errorf("result %q", res.Text)
	}
	s.check(t)
}

// TestResumeKeepsAccount: the engine's account is in the transcript, so a
// resumed session goes on from what it had saved and the requests it had
// made, not from nothing.
func TestResumeKeepsAccount(t *testing.T) {
	s := start(t, options{window: 20_000},
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"cat notes/build.log"}`))),
		say(llmtest.Text("The build fails in step 3.")),
		say(llmtest.Text("Done.")))
	// Output over the oversize guard (a quarter of the window): cut to
	// its head and tail as it arrives, so every request after it saves.
	var log strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&log, "build step %d: compiling package %d with the usual flags\n", i, i%97)
	}
	if err := os.WriteFile(filepath.Join(s.ws, "notes", "build.log"), []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.agent.Run(ctx, "Why does the build fail?"); err != nil {
		t.Fatal(err)
	}
	account := func() engine.Account {
		t.Helper()
		var a engine.Account
		if err := json.Unmarshal(s.store.State(), &a); err != nil {
			t.Fatalf("the transcript's account %s: %v", s.store.State(), err)
		}
		return a
	}
	before, saved := account(), s.agent.Context().Saved
	if before.Requests != 2 || before.Full == 0 || saved <= 0 {
		t.Fatalf("account after two requests: %+v, saved $%g", before, saved)
	}
	s.reopen(t, options{window: 20_000})
	if got := s.agent.Context().Saved; got != saved {
		t.Errorf("resumed session saved $%g, want $%g", got, saved)
	}
	if _, err := s.agent.Run(ctx, "Thanks"); err != nil {
		t.Fatal(err)
	}
	if after := account(); after.Requests != before.Requests+1 || after.Full <= before.Full {
		t.Errorf("account after one more request: %+v, before the resume %+v", after, before)
	}
	s.check(t)
}

// TestCompactTool: the model calls compact beside another tool; the
// other result is recorded first, then the compaction runs, and the loop
// goes on from the summary without waiting for the user.
func TestCompactTool(t *testing.T) {
	var summarized bool
	s := start(t, options{cfg: func(c *agent.Config) {
		c.Summarizer = summarize.NewExtractive()
		c.Compact.KeepRecentTurns = 1
	}},
		say(llmtest.Calls("", llmtest.Use("Read", `{"file_path":"calc/calc.go"}`))),
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"head -3 notes/worker.log"}`))),
		say(llmtest.Calls("The file is long; compacting before the edit.",
			llmtest.Use("Grep", `{"pattern":"func Add"}`),
			llmtest.Use("compact", `{"focus":"the Add bug at calc/calc.go:5"}`))),
		func(c *llmtest.Call) llmtest.Reply {
			summarized = hasSummary(c)
			return llmtest.Text("Compacted; the bug is at calc/calc.go:5.")
		})
	res, err := s.agent.Run(context.Background(), "Look at calc.go, then compact.")
	if err != nil {
		t.Fatal(err)
	}
	if !summarized {
		t.Errorf("the request after the compact call has no summary")
	}
	if res.Compactions == 0 || res.Text != "Compacted; the bug is at calc/calc.go:5." {
		t.Errorf("result %+v", res)
	}
	ends := s.eventsOf(agent.EventCompactEnd)
	if len(ends) == 0 || ends[len(ends)-1].Trigger != compact.TriggerTool {
		t.Errorf("compaction events: %v", ends)
	}
	s.check(t)
	// The compact call and the Grep result were recorded before the
	// compaction: the transcript holds them.
	ro, err := transcript.OpenReadOnly(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	found := false
	for _, id := range []string{"b8", "b9", "b10", "b11", "b12"} {
		if b, err := ro.Recall(id); err == nil && b.Type == conv.TypeToolResult && b.Text == compact.ToolResult {
			found = true
		}
	}
	if !found {
		t.Errorf("the compact call's result is not in the transcript")
	}
}

// TestReactiveCompaction: the provider refuses a prompt as too long; the
// agent compacts and retries once.
func TestReactiveCompaction(t *testing.T) {
	// The configured window is larger than the server's, as when a local
	// model's window is not known: the agent's own threshold is not
	// reached, the provider refuses the prompt.
	s, res, rejected := smallServer(t, 1000) // the answer fits until the prompt alone does not
	var ptl int
	for _, c := range s.srv.Calls() {
		if c.Status == 400 && strings.Contains(c.Error, "too long") {
			ptl++
		}
	}
	if ptl == 0 {
		t.Errorf("the server never refused a prompt as too long; calls: %d", len(s.srv.Calls()))
	}
	for _, r := range rejected {
		if !strings.Contains(r.Message, "too long") {
			t.Errorf("rejected: %v", r)
		}
	}
	if res.Compactions == 0 || res.Text != "Done." {
		t.Errorf("result %+v", res)
	}
	var reactive bool
	for _, e := range s.eventsOf(agent.EventCompactEnd) {
		reactive = reactive || e.Trigger == compact.TriggerReactive
	}
	if !reactive {
		t.Errorf("no reactive compaction")
	}
	s.check(t)
}

// TestProviderWindowSmaller: the configured window is larger than the
// server's and the requests ask for more answer than the server's window
// leaves. The first refusal states the sizes: the same prompt goes out
// again asking for the room left, no compaction, and from then on the
// engine works to the server's window, so no request is refused again.
func TestProviderWindowSmaller(t *testing.T) {
	s, res, _ := smallServer(t, 0, say(llmtest.Text("Still here.")))
	var refused []*llmtest.Call
	for _, c := range s.srv.Calls() {
		if c.Status != 200 {
			refused = append(refused, c)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error, "exceed context limit") || refused[0].N != 1 {
		t.Fatalf("refused calls %v, want the first one only, for its max_tokens", refused)
	}
	if calls := s.srv.Calls(); len(calls) < 2 || calls[1].MaxTokens > 9000-calls[1].Prompt || len(calls[1].Messages) != len(calls[0].Messages) {
		t.Errorf("the retry: %+v", calls[1])
	}
	var told bool
	for _, e := range s.eventsOf(agent.EventWarning) {
		told = told || strings.Contains(e.Text, "window is 9000 tokens, not the 40000 configured")
	}
	if !told {
		t.Errorf("the user was not told the provider's window: %v", s.eventsOf(agent.EventWarning))
	}
	if res.Text != "Done." {
		t.Errorf("result %+v", res)
	}
	if rep := s.agent.Context(); rep.Window != 9000 || rep.Budget.Window != 9000 {
		t.Errorf("/context window %d (budget %d), want the server's 9000", rep.Window, rep.Budget.Window)
	}
	// Resumed, the session knows the server's window from its account:
	// its next request is not refused to learn it again.
	s.reopen(t, smallOptions(0))
	if rep := s.agent.Context(); rep.Window != 9000 {
		t.Errorf("resumed /context window %d, want the server's 9000", rep.Window)
	}
	n := len(s.srv.Calls())
	if _, err := s.agent.Run(context.Background(), "Are you there?"); err != nil {
		t.Fatal(err)
	}
	for _, c := range s.srv.Calls()[n:] {
		if c.Status != 200 {
			t.Errorf("after the resume, request %d was refused: %s", c.N, c.Error)
		}
	}
	s.check(t)
}

// smallServer runs one task on an agent told of a 40,000-token window
// against a server whose window is 9,000, the requests asking maxTokens
// (0: the agent's default), and returns what the server refused as
// malformed.
func smallServer(t *testing.T, maxTokens int, more ...step) (*setup, agent.Result, []llmtest.Rejection) {
	t.Helper()
	s := start(t, smallOptions(maxTokens), append([]step{
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"cat notes/worker.log"}`))),
		say(llmtest.Calls("", llmtest.Use("Read", `{"file_path":"calc/calc.go"}`))),
		say(llmtest.Text("Done."))}, more...)...)
	res, err := s.agent.Run(context.Background(), "Read everything.")
	rejected := s.srv.TakeRejected()
	if err != nil {
		t.Fatalf("Run: %v (rejections %v)", err, rejected)
	}
	return s, res, rejected
}

// smallOptions are smallServer's: an agent told of a 40,000-token
// window, a server whose window is 9,000.
func smallOptions(maxTokens int) options {
	return options{window: 40_000, server: llmtest.Config{Window: 9000}, cfg: func(c *agent.Config) {
		c.Summarizer = summarize.NewExtractive()
		c.Compact.KeepRecentTurns = 1
		c.MaxTokens = maxTokens
	}}
}

// TestCarrySummary: a session started by /clear --keep-summary begins with
// the summary, then the user's words, in one message.
func TestCarrySummary(t *testing.T) {
	sum := conv.NewSummary("## Task and intent\nFix Add.", conv.Span{First: 1, Last: 4})
	sum.ID = "b99"
	s := start(t, options{cfg: func(c *agent.Config) { c.Carry = []conv.Block{sum} }},
		func(c *llmtest.Call) llmtest.Reply {
			if first := c.Messages[0].Blocks; len(first) != 2 || !strings.Contains(first[0].Text, "Fix Add.") || first[1].Text != "Go on." {
				t.Errorf("no summary in the first request: %v", c.Messages)
			}
			return llmtest.Text("Continuing from the summary.")
		})
	if _, err := s.agent.Run(context.Background(), "Go on."); err != nil {
		t.Fatal(err)
	}
	c := s.agent.Conversation()
	bs := c.Messages[0].Blocks
	if len(bs) != 2 || bs[0].Type != conv.TypeSummary || bs[0].ID == "b99" || bs[1].Text != "Go on." {
		t.Errorf("first message: %v", bs)
	}
	s.check(t)
}

// TestContextReport: the categories add up and move as the session does.
func TestContextReport(t *testing.T) {
	s := start(t, options{window: 50_000},
		say(llmtest.Calls("", llmtest.Use("Read", `{"file_path":"calc/calc.go"}`))),
		say(llmtest.Text("Read it.")))
	rep := s.agent.Context()
	get := func(r agent.ContextReport, k string) int {
		for _, c := range r.Categories {
			if c.Key == k {
				return c.Tokens
			}
		}
		t.Fatalf("no category %s", k)
		return 0
	}
	if get(rep, agent.CatSystem) == 0 || get(rep, agent.CatTools) < 1000 || get(rep, agent.CatRules) == 0 {
		t.Errorf("fixed prefix not counted: %+v", rep.Categories)
	}
	if rep.Window != 50_000 || rep.Free != rep.Window-rep.Total {
		t.Errorf("report %+v", rep)
	}
	if _, err := s.agent.Run(context.Background(), "Read calc.go"); err != nil {
		t.Fatal(err)
	}
	rep2 := s.agent.Context()
	if get(rep2, agent.CatUser) == 0 || get(rep2, agent.CatCalls) == 0 || get(rep2, agent.CatAssistant) == 0 {
		t.Errorf("messages not counted: %+v", rep2.Categories)
	}
	// The round is over: the Read result is history, compressed or kept
	// whole when compressing would not shrink it.
	if get(rep2, agent.CatResults)+get(rep2, agent.CatCompressed) < 1000 {
		t.Errorf("the Read result is not counted: %+v", rep2.Categories)
	}
	sum := 0
	for _, c := range rep2.Categories {
		sum += c.Tokens
	}
	if sum != rep2.Total || rep2.LastPrompt == 0 || rep2.Messages != 4 || rep2.Rounds != 1 {
		t.Errorf("report %+v", rep2)
	}
}

// TestMaxSteps stops a run that goes on too long; the next run goes on.
func TestMaxSteps(t *testing.T) {
	s := start(t, options{cfg: func(c *agent.Config) { c.MaxSteps = 2 }},
		say(llmtest.Calls("", llmtest.Use("LS", `{}`))),
		say(llmtest.Calls("", llmtest.Use("LS", `{"path":"calc"}`))),
		say(llmtest.Text("Listed.")))
	_, err := s.agent.Run(context.Background(), "List everything.")
	if !errors.Is(err, agent.ErrMaxSteps) {
		t.Fatalf("Run: %v, want ErrMaxSteps", err)
	}
	s.check(t)
	res, err := s.agent.Run(context.Background(), "")
	if err != nil || res.Text != "Listed." {
		t.Fatalf("continue: %q %v", res.Text, err)
	}
	if _, err := s.agent.Run(context.Background(), "  "); !errors.Is(err, agent.ErrNothing) {
		t.Errorf("empty prompt: %v", err)
	}
}

// TestManualCompact is /compact with a focus, between turns.
func TestManualCompact(t *testing.T) {
	s := start(t, options{cfg: func(c *agent.Config) { c.Compact.KeepRecentTurns = 1 }},
		say(llmtest.Calls("", llmtest.Use("Read", `{"file_path":"calc/calc.go"}`))),
		say(llmtest.Text("Read.")),
		say(llmtest.Calls("", llmtest.Use("Bash", `{"command":"cat notes/worker.log"}`))),
		say(llmtest.Text("Logged.")),
		func(c *llmtest.Call) llmtest.Reply {
			if !hasSummary(c) {
				t.Errorf("no summary after /compact")
			}
			return llmtest.Text("OK.")
		})
	ctx := context.Background()
	for _, p := range []string{"Read calc.go", "Show the log"} {
		if _, err := s.agent.Run(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := s.agent.Context().Total
	r, err := s.agent.Compact(ctx, "the log")
	if err != nil {
		t.Fatal(err)
	}
	after := s.agent.Context().Total
	if r.Compactions == 0 || after >= before {
		t.Errorf("compaction %+v: %d → %d tokens", r, before, after)
	}
	s.check(t)
	if len(s.agent.Summaries()) == 0 {
		t.Errorf("no summary block")
	}
	if _, err := s.agent.Run(ctx, "Go on"); err != nil {
		t.Fatal(err)
	}
	s.check(t)
}

// TestStoreFailure: when the transcript cannot take a message, Run fails
// and the conversation is left as the transcript has it.
func TestStoreFailure(t *testing.T) {
	s := start(t, options{}, say(llmtest.Text("never sent")))
	before := s.agent.Conversation()
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.agent.Run(context.Background(), "hello")
	if err == nil || !errors.Is(err, transcript.ErrClosed) {
		t.Fatalf("Run on a closed transcript: %v", err)
	}
	after := s.agent.Conversation()
	if len(after.Messages) != len(before.Messages) || after.Seq != before.Seq {
		t.Errorf("the conversation changed: %d → %d messages", len(before.Messages), len(after.Messages))
	}
	if s.model.requests != 0 {
		t.Errorf("a request went out although nothing was recorded")
	}
}

// TestNewChecksConfig: a missing dependency is a clear error.
func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  agent.Config
		want string
	}{
		{"provider", agent.Config{}, "Provider is nil"},
		{"tools", agent.Config{Provider: noProvider{}}, "Tools is nil"},
		{"store", agent.Config{Provider: noProvider{}, Tools: &tools.Set{}}, "Store is nil"},
	} {
		if _, err := agent.New(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"Read", `{"file_path":"a/b.go","offset":3}`, "Read(a/b.go)"},
		{"Bash", `{"command":"go test ./...\necho done"}`, "Bash(go test ./...)"},
		{"Grep", `{"pattern":"func \\w+","path":"x"}`, `Grep(func \w+)`},
		{"TodoWrite", `{"todos":[{},{}]}`, "TodoWrite(2 items)"},
		{"Odd", `not json`, "Odd()"},
	} {
		if got := agent.Describe(tc.name, []byte(tc.in)); got != tc.want {
			t.Errorf("Describe(%s, %s) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

type noProvider struct{}

func (noProvider) Stream(context.Context, *llm.Request, func(llm.Event)) (*llm.Response, error) {
	return nil, errors.New("no provider")
}

// flakyStore fails the next Append of a message holding tool results.
type flakyStore struct {
	*transcript.Store
	fail bool
}

func (f *flakyStore) Append(ctx context.Context, m conv.Message) error {
	if f.fail && len(m.Blocks) > 0 && m.Blocks[0].Type == conv.TypeToolResult {
		f.fail = false
		return errors.New("disk full")
	}
	return f.Store.Append(ctx, m)
}

// TestResultsNotRecorded: when the transcript refuses a turn's results,
// Run fails; the next Run answers the calls with error results and goes on.
func TestResultsNotRecorded(t *testing.T) {
	var fs *flakyStore
	s := start(t, options{cfg: func(c *agent.Config) {
		fs = &flakyStore{Store: c.Store.(*transcript.Store), fail: true}
		c.Store = fs
	}},
		say(llmtest.Calls("", llmtest.Use("LS", `{}`))),
		func(c *llmtest.Call) llmtest.Reply {
			last := c.Messages[len(c.Messages)-1].Blocks
			if len(last) != 2 || !last[0].IsError || last[1].Text != "Try again." {
				t.Errorf("next request: %v", last)
			}
			return llmtest.Text("Done.")
		})
	if _, err := s.agent.Run(context.Background(), "List."); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Run: %v", err)
	}
	if vs := conv.Check(s.agent.Conversation()); len(vs) > 0 {
		t.Fatal(vs)
	}
	res, err := s.agent.Run(context.Background(), "Try again.")
	if err != nil || res.Text != "Done." {
		t.Fatalf("Run: %q %v", res.Text, err)
	}
	s.check(t)
}
