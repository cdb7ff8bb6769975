package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/summarize"
)

func TestBudget(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want Budget
	}{
		// Claude Code's formula: 200k − min(64k, 20k) − 13k = 167k.
		{Config{Window: 200_000, MaxOutput: 64_000}, Budget{Window: 200_000, Effective: 167_000, Limit: 163_636, Soft: 116_900, Hard: 150_300, Target: 83_500}},
		{Config{Window: 200_000, MaxOutput: 8_192}, Budget{Window: 200_000, Effective: 178_808, Limit: 174_370, Soft: 125_166, Hard: 160_927, Target: 89_404}},
		// A small window: reserve and buffer shrink so half remains for
		// the thresholds; the limit still reserves the whole response.
		{Config{Window: 32_000, MaxOutput: 8_192}, Budget{Window: 32_000, Effective: 16_000, Limit: 21_643, Soft: 11_200, Hard: 14_400, Target: 8_000}},
		{testConfig(), Budget{Window: 20_000, Effective: 10_000, Limit: 16_363, Soft: 7_000, Hard: 9_000, Target: 5_000}},
	} {
		if got := tt.cfg.Budget(); got != tt.want {
			t.Errorf("%+v: got %+v, want %+v", tt.cfg, got, tt.want)
		}
	}
	b := testConfig().Budget()
	for usage, want := range map[int]Level{6_999: LevelNone, 7_000: LevelSoft, 8_999: LevelSoft, 9_000: LevelHard} {
		if got := b.Level(usage); got != want {
			t.Errorf("Level(%d) = %v, want %v", usage, got, want)
		}
	}
}

// TestShrinkDerivesAsNew: a window a provider stated is taken as New
// would take it: the thresholds and every setting derived from the
// window (the pinned tail's tokens, the user's words); a larger or no
// window changes nothing.
func TestShrinkDerivesAsNew(t *testing.T) {
	for _, tt := range []struct {
		name       string
		from, to   int
		maxOutput  int // the answer a request asks in the smaller window
		userBudget int // configured; 0: derived from the window
		shrinks    bool
	}{
		{"128k to 9k", 128_000, 9_000, 2_250, 0, true},
		{"200k to 32k, the user's budget configured", 200_000, 32_000, 8_192, 3_000, true},
		{"a larger window", 32_000, 200_000, 8_192, 0, false},
		{"no window", 32_000, 0, 8_192, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Window: tt.from, MaxOutput: 8_192, UserBudget: tt.userBudget}
			c := New(nil, cfg)
			if got := c.Shrink(tt.to, tt.maxOutput); got != tt.shrinks {
				t.Fatalf("Shrink(%d) = %v", tt.to, got)
			}
			want := New(nil, cfg)
			if tt.shrinks {
				cfg.Window, cfg.MaxOutput = tt.to, tt.maxOutput
				want = New(nil, cfg)
			}
			got, exp := c.Config(), want.Config()
			if c.Budget() != want.Budget() || got.Window != exp.Window || got.KeepRecentTokens != exp.KeepRecentTokens || got.UserBudget != exp.UserBudget {
				t.Errorf("after Shrink(%d): budget %+v, tail %d, user %d; New for it: %+v, %d, %d",
					tt.to, c.Budget(), got.KeepRecentTokens, got.UserBudget, want.Budget(), exp.KeepRecentTokens, exp.UserBudget)
			}
		})
	}
}

func TestBeforeBelowThreshold(t *testing.T) {
	c := session(2, 1, 200)
	withRequest(c, "next")
	k := newKeeper()
	k.record(c)
	cp := New(nil, testConfig())
	res, err := cp.Before(context.Background(), c, k)
	if err != nil || res.Compactions != 0 || len(k.edits) != 0 {
		t.Fatalf("below the threshold nothing should happen: %+v %v", res, err)
	}
}

func TestBeforeModes(t *testing.T) {
	for _, mode := range []Mode{ModeRegion, ModeRound} {
		t.Run(string(mode), func(t *testing.T) {
			c := session(6, 2, 400)
			withRequest(c, "Round 7: keep going.")
			k := newKeeper()
			k.record(c)
			cfg := testConfig()
			cfg.Mode = mode
			cp := New(nil, cfg)
			before := cp.Usage(c)
			if cp.Budget().Level(before) == LevelNone {
				t.Fatalf("fixture too small: %d", before)
			}
			res, err := cp.Before(context.Background(), c, k)
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, c)
			if vs := conv.CheckRequest(c); len(vs) > 0 {
				t.Fatalf("not a valid request: %v", vs)
			}
			if res.Compactions == 0 || len(res.Summaries) == 0 || len(k.edits) != len(res.Edits) {
				t.Fatalf("result %+v, %d edits kept", res, len(k.edits))
			}
			if res.TokensAfter > cp.Budget().Target+cp.Budget().Target/5 {
				t.Errorf("after %d tokens, target %d", res.TokensAfter, cp.Budget().Target)
			}
			if res.TokensAfter >= res.TokensBefore {
				t.Errorf("tokens %d → %d", res.TokensBefore, res.TokensAfter)
			}
			text := allText(c)
			if !strings.Contains(text, "Round 7: keep going.") {
				t.Error("the newest user message is gone")
			}
			if mode == ModeRegion {
				for r := 1; r <= 7; r++ {
					if !strings.Contains(text, fmt.Sprintf("Round %d: please continue", r)) && r < 7 {
						t.Errorf("region mode must keep the user's words of round %d", r)
					}
				}
			}
			for _, s := range summaries(c) {
				if !s.Meta.Pinned || s.Meta.Compactable || s.Span == nil {
					t.Errorf("summary %s not pinned or without span", s.ID)
				}
				if !strings.Contains(s.Text, "## Artifact trail") || !strings.Contains(s.Text, "src/r1_s0.go") && s.Span.First == 1 {
					t.Errorf("summary %s lacks its artifact trail:\n%s", s.ID, s.Text)
				}
			}
		})
	}
}

func TestKeeperFailureAppliesNothing(t *testing.T) {
	c := session(6, 2, 400)
	withRequest(c, "go on")
	k := newKeeper()
	k.record(c)
	k.fail = errors.New("disk full")
	orig := c.Clone()
	_, err := New(nil, testConfig()).Before(context.Background(), c, k)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if len(c.Messages) != len(orig.Messages) || allText(c) != allText(orig) {
		t.Error("the conversation changed although the keeper failed")
	}
	// A keeper that never saw the originals refuses too.
	k2 := newKeeper()
	if _, err := New(nil, testConfig()).Before(context.Background(), c, k2); !errors.Is(err, errNotDurable) {
		t.Errorf("err = %v, want not durable", err)
	}
	if _, err := New(nil, testConfig()).Before(context.Background(), c, nil); !errors.Is(err, ErrNoKeeper) {
		t.Errorf("err = %v, want ErrNoKeeper", err)
	}
}

func TestSingleRoundSession(t *testing.T) {
	// SWE-agent style: one task, many steps; compacted again and again,
	// the summaries of the one round are merged.
	for _, mode := range []Mode{ModeRegion, ModeRound} {
		t.Run(string(mode), func(t *testing.T) {
			b := newBuilder()
			b.user("Fix issue 1458: the reader must never drop private tags.")
			k := newKeeper()
			cp := New(nil, Config{Window: 20_000, MaxOutput: 2_000, Mode: mode})
			for i := range 40 {
				b.steps(1, 1, 350)
				_ = i
				k.record(b.c)
				if _, err := cp.Before(context.Background(), b.c, k); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				mustCheck(t, b.c)
				if u := cp.Usage(b.c); u > cp.Budget().Effective {
					t.Fatalf("step %d: %d tokens over the effective window", i, u)
				}
			}
			ss := summaries(b.c)
			if len(ss) != 1 || !ss[0].Merged {
				t.Fatalf("want one merged summary, got %d", len(ss))
			}
			text := allText(b.c)
			if !strings.Contains(text, "the reader must never drop private tags") {
				t.Error("the task's constraint was lost")
			}
			for i := range 30 {
				_ = i
			}
			if !strings.Contains(ss[0].Text, "src/r1_s0.go") {
				t.Errorf("the merged summary lost the first artifact:\n%s", ss[0].Text)
			}
		})
	}
}

func TestFallbackChain(t *testing.T) {
	long := strings.Repeat("word ", 50_000)
	for name, tt := range map[string]struct {
		s         summarize.Summarizer
		timeout   time.Duration
		wantKind  string
		wantFalls []string
		reason    string
	}{
		"error": {
			s: funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
				return summarize.Output{}, llm.ErrUnavailable
			}),
			wantKind:  "extractive",
			wantFalls: []string{"llm→extractive"},
			reason:    "unavailable",
		},
		"timeout": {
			s: funcSummarizer(func(ctx context.Context, _ summarize.Input) (summarize.Output, error) {
				<-ctx.Done()
				return summarize.Output{}, ctx.Err()
			}),
			timeout:   20 * time.Millisecond,
			wantKind:  "extractive",
			wantFalls: []string{"llm→extractive"},
			reason:    "timed out",
		},
		"inflation": {
			s: funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
				return summarize.Output{Text: long, Kind: "llm"}, nil
			}),
			wantKind:  "extractive",
			wantFalls: []string{"llm→extractive"},
			reason:    "not smaller",
		},
		"good": {
			s: funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
				return summarize.Output{Text: "## Task and intent\nrefactor", Kind: "llm"}, nil
			}),
			wantKind: "llm",
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := session(6, 2, 400)
			withRequest(c, "go on")
			k := newKeeper()
			k.record(c)
			cfg := testConfig()
			cfg.Timeout = tt.timeout
			cp := New(tt.s, cfg)
			res, err := cp.Before(context.Background(), c, k)
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, c)
			if len(res.Summaries) == 0 || res.Summaries[0].Kind != tt.wantKind {
				t.Fatalf("summaries %+v, want kind %s", res.Summaries, tt.wantKind)
			}
			var falls []string
			for _, f := range res.Fallbacks {
				falls = append(falls, f.From+"→"+f.To)
				if !strings.Contains(f.Reason, tt.reason) {
					t.Errorf("reason %q lacks %q", f.Reason, tt.reason)
				}
			}
			if len(tt.wantFalls) > 0 && (len(falls) == 0 || falls[0] != tt.wantFalls[0]) {
				t.Errorf("fallbacks %v, want %v", falls, tt.wantFalls)
			}
			if len(tt.wantFalls) == 0 && len(falls) > 0 {
				t.Errorf("unexpected fallbacks %v", falls)
			}
		})
	}
}

func TestTruncationFallback(t *testing.T) {
	c := session(6, 2, 400)
	withRequest(c, "go on")
	k := newKeeper()
	k.record(c)
	failing := funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
		return summarize.Output{}, errors.New("model exploded")
	})
	cp := New(failing, testConfig())
	// Break the fallback too.
	cp.fallback = funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
		return summarize.Output{}, errors.New("extractive broke")
	})
	res, err := cp.Before(context.Background(), c, k)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, c)
	if vs := conv.CheckRequest(c); len(vs) > 0 {
		t.Fatal(vs)
	}
	if !strings.Contains(allText(c), TruncationMarker) {
		t.Fatal("no truncation marker")
	}
	if len(res.Fallbacks) < 2 || res.Fallbacks[1].To != "truncate" {
		t.Errorf("fallbacks %+v", res.Fallbacks)
	}
	if res.Summaries[0].Kind != "truncated" {
		t.Errorf("kind %q", res.Summaries[0].Kind)
	}
	// The user's constraint-free words are kept (region mode); the marker
	// names the files changed.
	if !strings.Contains(allText(c), "Files changed in the truncated turns: src/r") {
		t.Error("the marker should list the files changed")
	}
}

func TestCircuitBreaker(t *testing.T) {
	calls := 0
	failing := funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
		calls++
		return summarize.Output{}, errors.New("model down")
	})
	cfg := testConfig()
	cfg.ThrashRepeats = -1
	cp := New(failing, cfg)
	k := newKeeper()
	b := newBuilder()
	var err error
	stoppedAt := -1
	for r := 1; r <= 30 && stoppedAt < 0; r++ {
		if r > 1 {
			b.say("done")
		}
		b.user(fmt.Sprintf("Round %d", r))
		b.steps(r, 2, 500)
		k.record(b.c)
		_, err = cp.Before(context.Background(), b.c, k)
		mustCheck(t, b.c)
		if cp.State().Failures >= 3 {
			stoppedAt = r
		}
		if err != nil {
			break
		}
	}
	if stoppedAt < 0 {
		t.Fatalf("the breaker never opened (failures %d)", cp.State().Failures)
	}
	if !errors.Is(cp.State().Stopped, ErrCircuitOpen) {
		t.Fatalf("state %+v", cp.State())
	}
	// Further automatic compaction does not call the summarizer; over the
	// hard threshold it reports the stop.
	n := calls
	var stopErr error
	for range 10 {
		b.steps(99, 3, 800)
		k.record(b.c)
		_, stopErr = cp.Before(context.Background(), b.c, k)
		if stopErr != nil {
			break
		}
	}
	var se *StoppedError
	if !errors.As(stopErr, &se) || !errors.Is(stopErr, ErrCircuitOpen) || !strings.Contains(stopErr.Error(), "/compact") {
		t.Fatalf("err = %v, want a StoppedError telling the user what to do", stopErr)
	}
	if calls != n {
		t.Errorf("the summarizer was called %d more times with the breaker open", calls-n)
	}
	// Stopped means no model calls, not no limit: the request fits.
	if err := cp.Fits(b.c); err != nil {
		t.Fatalf("stopped compactor let the request over the limit: %v", err)
	}
	mustCheck(t, b.c)
	// Manual compaction still works, and a success closes the breaker.
	b.steps(100, 6, 300)
	k.record(b.c)
	cp2 := cp
	cp2.s = summarize.NewExtractive()
	res, err := cp2.Compact(context.Background(), b.c, k, "")
	if err != nil || res.Compactions == 0 {
		t.Fatalf("manual: %+v %v", res, err)
	}
	mustCheck(t, b.c)
	if cp2.State().Stopped != nil || cp2.State().Failures != 0 {
		t.Errorf("state after a manual success: %+v", cp2.State())
	}
}

func TestThrashDetection(t *testing.T) {
	// A huge file re-read every turn refills the context right after each
	// compaction.
	cfg := testConfig()
	cp := New(nil, cfg)
	k := newKeeper()
	b := newBuilder()
	b.user("Work on the big file.")
	var err error
	n := 0
	for n = 0; n < 40; n++ {
		b.say("Reading it again.", b.call("Read", `{"file_path":"big.txt"}`))
		b.results(big(fmt.Sprint("t", n), 4900))
		k.record(b.c)
		_, err = cp.Before(context.Background(), b.c, k)
		if err != nil {
			break
		}
		mustCheck(t, b.c)
	}
	if !errors.Is(err, ErrThrashing) {
		t.Fatalf("after %d turns: err = %v, want ErrThrashing", n, err)
	}
	if !strings.Contains(err.Error(), "/clear --keep-summary") {
		t.Errorf("message should tell the user what to do: %v", err)
	}
	if st := cp.State(); st.Thrash < 3 {
		t.Errorf("thrash count %d", st.Thrash)
	}
	// Stopped: the next call does not compact again.
	edits := len(k.edits)
	b.say("again", b.call("Read", `{"file_path":"big.txt"}`))
	b.results(big("x", 4900))
	k.record(b.c)
	if _, err := cp.Before(context.Background(), b.c, k); err == nil && len(k.edits) != edits {
		t.Error("compacted while stopped")
	}
}

// TestNoThrashOnGoodCompactions: a session whose outputs refill a small
// window quickly, but where each compaction reaches its goal, is not
// stopped.
func TestNoThrashOnGoodCompactions(t *testing.T) {
	cp := New(nil, testConfig())
	k := newKeeper()
	b := newBuilder()
	b.user("Work through the files.")
	compactions := 0
	for n := range 60 {
		b.say("Next file.", b.call("Read", fmt.Sprintf(`{"file_path":"f%d.txt"}`, n)))
		b.results(big(fmt.Sprint("f", n), 1200))
		k.record(b.c)
		res, err := cp.Before(context.Background(), b.c, k)
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		compactions += res.Compactions
		mustCheck(t, b.c)
	}
	if compactions < 5 {
		t.Errorf("only %d compactions; the fixture does not refill quickly", compactions)
	}
}

func TestReactive(t *testing.T) {
	c := session(6, 2, 400)
	withRequest(c, "go on")
	k := newKeeper()
	k.record(c)
	cp := New(nil, testConfig())
	ptl := &llm.APIError{Status: 400, Kind: llm.ErrPromptTooLong, Message: "prompt is too long: 25000 tokens > 20000 maximum"}
	before := cp.Usage(c)
	res, err := cp.Reactive(context.Background(), c, k, ptl)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, c)
	if res.Trigger != TriggerReactive || res.Compactions == 0 {
		t.Fatalf("%+v", res)
	}
	// Issue 26 row 7: the sizes reported are the compactor's own, not the
	// provider's figure or the window the plan assumed.
	if res.TokensBefore != before || res.TokensAfter != cp.Usage(c) || res.TokensAfter >= before {
		t.Errorf("reported %d → %d tokens; the compactor held %d → %d", res.TokensBefore, res.TokensAfter, before, cp.Usage(c))
	}
	// A second prompt-too-long before any response: overflow, not a loop.
	_, err = cp.Reactive(context.Background(), c, k, ptl)
	var oe *OverflowError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOverflow) {
		t.Fatalf("err = %v, want an overflow", err)
	}
	// A response in between re-arms it.
	cp.Observe(llm.Usage{Input: 3000, Output: 100}, len(c.Messages))
	if _, err := cp.Reactive(context.Background(), c, k, ptl); errors.Is(err, ErrOverflow) && !strings.Contains(err.Error(), "nothing compactable") {
		t.Fatalf("err = %v", err)
	}
}

// TestLastStepOverWindow: everything is pinned and the last step's result
// alone is bigger than the window. The compactor cuts it to fit, keeping
// the original with the keeper, where it used to give up with an
// overflow.
func TestLastStepOverWindow(t *testing.T) {
	b := newBuilder()
	b.user("Show me the log.")
	b.say("Looking.", b.call("Bash", `{"command":"cat huge.log"}`))
	b.results(big("log", 16_000))
	k := newKeeper()
	k.record(b.c)
	cp := New(nil, testConfig())
	res, err := cp.Before(context.Background(), b.c, k)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, b.c)
	if err := cp.Fits(b.c); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Ladder, "shrink") {
		t.Errorf("ladder %v, want a shrink", res.Ladder)
	}
	txt := allText(b.c)
	if !strings.Contains(txt, "Show me the log.") || !strings.Contains(txt, "cut to fit the context window") || !strings.Contains(txt, "recall b") {
		t.Errorf("the cut result should say what was cut and how to get it back:\n%s", txt)
	}
}

// TestOverflowFixed: only a system prompt over the limit is an overflow.
func TestOverflowFixed(t *testing.T) {
	b := newBuilder()
	b.c.System = []conv.Block{conv.NewText(conv.SourceSystem, big("sys", 20_000))}
	b.c.Stamp(b.c.System)
	b.user("hi")
	k := newKeeper()
	k.record(b.c)
	_, err := New(nil, testConfig()).Before(context.Background(), b.c, k)
	if !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "/clear --keep-summary") {
		t.Fatalf("err = %v, want ErrOverflow", err)
	}
}

func TestObserveA6(t *testing.T) {
	c := session(1, 1, 100)
	withRequest(c, "next")
	cp := New(nil, testConfig())
	est := cp.Usage(c)
	cp.Observe(llm.Usage{Input: 8_000, Output: 500}, len(c.Messages)-1)
	got := cp.Usage(c)
	want := 8_500 + conv.MessageTokens(&c.Messages[len(c.Messages)-1], cp.cfg.Counter)
	if got != want || got == est {
		t.Errorf("usage = %d, want last usage plus the new message = %d", got, want)
	}
	// Fewer than MinMessages: never compacts.
	small := newBuilder().user(big("x", 9_500)).c
	k := newKeeper()
	k.record(small)
	if res, err := New(nil, testConfig()).Before(context.Background(), small, k); err != nil || res.Compactions != 0 {
		t.Errorf("%+v %v", res, err)
	}
}

func TestCriticalContent(t *testing.T) {
	b := newBuilder()
	b.user("Set up the project.")
	b.steps(1, 2, 400)
	b.say("ok")
	b.user("Never use global variables, and 必须保持向后兼容.")
	b.say("Running.", b.call("Bash", `{"command":"make"}`))
	b.results("ERR:main.go:12: undefined: frobnicate\nexit code: 2")
	b.steps(2, 2, 400)
	b.say("ok")
	for r := 3; r <= 5; r++ {
		b.user(fmt.Sprintf("Round %d", r))
		b.steps(r, 2, 400)
		b.say("ok")
	}
	withRequest(b.c, "continue")
	k := newKeeper()
	k.record(b.c)
	// A summarizer that drops everything: the compactor carries the
	// critical content itself.
	terse := funcSummarizer(func(context.Context, summarize.Input) (summarize.Output, error) {
		return summarize.Output{Text: "## Task and intent\nstuff happened", Kind: "llm"}, nil
	})
	cfg := testConfig()
	cfg.Mode = ModeRound
	cp := New(terse, cfg)
	if _, err := cp.Compact(context.Background(), b.c, k, ""); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, b.c)
	ss := summaries(b.c)
	if len(ss) == 0 {
		t.Fatal("no summary")
	}
	text := allText(b.c)
	for _, want := range []string{"## Carried verbatim", "Never use global variables, and 必须保持向后兼容.", "undefined: frobnicate"} {
		if !strings.Contains(text, want) {
			t.Errorf("lost %q", want)
		}
	}
}

func TestManualAndTool(t *testing.T) {
	b := newBuilder()
	for r := 1; r <= 3; r++ {
		b.user(fmt.Sprintf("Round %d", r))
		b.steps(r, 2, 300)
		b.say("ok")
	}
	b.user("Now clean up.")
	// The model calls compact beside another tool in the same turn.
	b.say("Compacting before the cleanup.", b.call("Bash", `{"command":"git status"}`), b.call(ToolName, `{"focus":"the cleanup plan"}`))
	b.results("clean", ToolResult)
	k := newKeeper()
	k.record(b.c)
	cp := New(nil, testConfig())
	res, err := cp.RunTool(context.Background(), b.c, k, json.RawMessage(`{"focus":"the cleanup plan"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Trigger != TriggerTool || res.Compactions == 0 {
		t.Fatalf("%+v", res)
	}
	// The loop goes on: the conversation is a valid request right away.
	if vs := conv.CheckRequest(b.c); len(vs) > 0 {
		t.Fatal(vs)
	}
	found := false
	for _, s := range summaries(b.c) {
		if strings.Contains(s.Text, `focus: "the cleanup plan"`) && strings.Contains(s.Text, "The task is not finished") {
			found = true
		}
	}
	if !found {
		t.Error("the summary header should carry the focus and say the task goes on")
	}
	last := b.c.Messages[len(b.c.Messages)-1]
	if last.Blocks[1].Text != ToolResult {
		t.Error("the turn's tool results must stay")
	}
	// Manual with nothing left to compact is a no-op with a note.
	res, err = cp.Compact(context.Background(), b.c, k, "")
	if err != nil || res.Compactions != 0 || res.Note == "" {
		t.Errorf("second manual: %+v %v", res, err)
	}
	if _, err := cp.RunTool(context.Background(), b.c, k, json.RawMessage(`{"focus":`)); err == nil {
		t.Error("bad tool input should fail")
	}
	tool := Tool()
	if tool.Name != ToolName || !json.Valid(tool.InputSchema) {
		t.Error("bad tool schema")
	}
}

func TestConsolidate(t *testing.T) {
	// Region mode leaves one summary per round; past the budget they are
	// merged into one that keeps every turn range.
	cfg := Config{Window: 60_000, MaxOutput: 2_000, SummaryBudget: 0.02, Mode: ModeRegion}
	cp := New(nil, cfg)
	c := session(10, 2, 800)
	withRequest(c, "go")
	k := newKeeper()
	k.record(c)
	res, err := cp.Compact(context.Background(), c, k, "")
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, c)
	ss := summaries(c)
	if len(ss) != 1 || !ss[0].Merged {
		t.Fatalf("want 1 merged summary, got %d (result %+v)", len(ss), res.Summaries)
	}
	if ss[0].Span.First != 1 || ss[0].Span.Last < 9 {
		t.Errorf("merged span %+v", ss[0].Span)
	}
	for r := 1; r <= 9; r++ {
		if !strings.Contains(ss[0].Text, fmt.Sprintf("src/r%d_s0.go", r)) {
			t.Errorf("merged summary lost round %d's artifact", r)
		}
	}
}

// TestNothingNote (issue 26 row 8): a manual compaction that finds nothing
// to summarize says why.
func TestNothingNote(t *testing.T) {
	tests := []struct {
		name         string
		rounds, size int
		want         string
	}{
		{"a region too small", 1, 50, "hold about 176 tokens, less than the 512 worth summarizing"},
		{"regions too small", 4, 5, "hold about"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := New(nil, Config{Window: 60_000, MaxOutput: 2_000, KeepRecentTurns: 1})
			c := session(tt.rounds, 1, tt.size)
			k := newKeeper()
			k.record(c)
			res, err := cp.Compact(context.Background(), c, k, "")
			if err != nil || res.Compactions != 0 {
				t.Fatalf("%+v %v", res, err)
			}
			if !strings.Contains(res.Note, tt.want) {
				t.Errorf("note %q, want %q in it", res.Note, tt.want)
			}
		})
	}
}

// folder is a summarizer that says what it wrote and counts its calls;
// with fold set it folds the earlier summaries it is given into its own
// (Output.Folded), as the model summarizer does.
type folder struct {
	fold             bool
	summaries, merge int
}

func (f *folder) Summarize(_ context.Context, in summarize.Input) (summarize.Output, error) {
	f.summaries++
	var sb strings.Builder
	sb.WriteString("## Task and intent\n")
	for _, p := range in.Earlier {
		if !f.fold {
			break
		}
		for _, line := range strings.Split(p.Text, "\n") {
			if strings.HasPrefix(line, "- covered ") {
				sb.WriteString(line + "\n")
			}
		}
	}
	fmt.Fprintf(&sb, "- covered turns %d-%d\n", in.Span.First, in.Span.Last)
	return summarize.Output{Text: sb.String(), Kind: "llm", Folded: f.fold && len(in.Earlier) > 0}, nil
}

func (f *folder) Merge(_ context.Context, parts []summarize.Part, in summarize.MergeInput) (summarize.Output, error) {
	f.merge++
	return summarize.Output{Text: summarize.MergeText(parts, in), Kind: "llm"}, nil
}

// TestFoldEarlierSummary: a round cut twice needs one summary where there
// were two (invariant 3). A summarizer that folds the earlier summary into
// its own makes it in the one call, and the result covers both spans and
// carries the same recall index a merge would; one that does not is
// merged with it, by its Merge.
func TestFoldEarlierSummary(t *testing.T) {
	// run returns the summarizer, the one summary left, and the recall
	// index as the step numbers of the results it names (block ids depend
	// on how many blocks a compaction made).
	run := func(t *testing.T, fold bool) (*folder, conv.Block, []int) {
		t.Helper()
		b := newBuilder()
		b.user("Fix issue 1458: the reader must never drop private tags.")
		k := newKeeper()
		f := &folder{fold: fold}
		cp := New(f, Config{Window: 20_000, MaxOutput: 2_000})
		step := make(map[string]int)
		for i := range 40 {
			b.steps(1, 1, 350)
			step[b.c.Messages[len(b.c.Messages)-1].Blocks[1].ID] = i
			k.record(b.c)
			if _, err := cp.Before(context.Background(), b.c, k); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			mustCheck(t, b.c)
		}
		ss := summaries(b.c)
		if len(ss) != 1 || !ss[0].Merged || ss[0].Span.First > 1 {
			t.Fatalf("want one merged summary from turn 1, got %d: %+v", len(ss), ss)
		}
		if f.summaries < 2 {
			t.Fatalf("%d summary calls: the round was not cut twice", f.summaries)
		}
		var index []int
		for _, e := range parseIndex(ss[0].Text) {
			n, ok := step[e.id]
			if !ok {
				t.Fatalf("the recall index names %s, no step's result", e.id)
			}
			index = append(index, n)
		}
		return f, ss[0], index
	}
	folding, folded, foldedIndex := run(t, true)
	merging, _, mergedIndex := run(t, false)
	if folding.merge != 0 || merging.merge == 0 {
		t.Errorf("merge calls: %d folding, %d not folding; want none and some", folding.merge, merging.merge)
	}
	if n := strings.Count(folded.Text, "- covered turns "); n != folding.summaries {
		t.Errorf("the folded summary carries %d of the %d summaries' content:\n%s", n, folding.summaries, folded.Text)
	}
	if !slices.Equal(foldedIndex, mergedIndex) || len(foldedIndex) == 0 {
		t.Errorf("folded recall index (steps) %v, merged %v: want the same", foldedIndex, mergedIndex)
	}
}
