package engine_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestAnswerFitsWindow: the window holds a request's prompt and its
// answer — the API refuses one whose prompt and max_tokens exceed it — so
// a request near the limit asks only for the room its prompt leaves,
// counting the prompt as far low as the estimator may (CountError, 10%);
// far from it, the configured max_tokens.
func TestAnswerFitsWindow(t *testing.T) {
	for _, tt := range []struct {
		name  string
		words int
	}{
		{"far from the limit", 500},
		{"near the limit", 62_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counter := tokens.NewEstimator()
			e, err := engine.New(engine.Config{Window: 100_000, MaxTokens: 32_000, Counter: counter, Keeper: engine.NewMemoryKeeper()})
			if err != nil {
				t.Fatal(err)
			}
			c := &conv.Conversation{System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")}}
			c.Stamp(c.System)
			c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, strings.Repeat("paste ", tt.words))}})
			r, err := e.Prepare(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			room := 100_000 - int(math.Ceil(float64(r.Tokens)*1.1))
			want := min(32_000, room)
			if r.Request.MaxTokens != want {
				t.Errorf("prompt %d tokens: max_tokens %d, want %d", r.Tokens, r.Request.MaxTokens, want)
			}
			if tt.words > 1000 && want == 32_000 {
				t.Fatalf("prompt %d tokens is not near the limit: the case tests nothing", r.Tokens)
			}
		})
	}
}

// prefixSummarizer records the prefix a cache-reusing summary request
// would extend, and writes a short summary.
type prefixSummarizer struct{ prefix *llm.Request }

func (s *prefixSummarizer) Summarize(_ context.Context, in summarize.Input) (summarize.Output, error) {
	s.prefix = in.Prefix
	return summarize.Output{Text: "## Task and intent\nread the pastes", Kind: "llm"}, nil
}

// TestSummaryPrefixFitsWindow: the prefix a cache-reusing summary request
// extends is a request the engine hands out too, so near the limit it
// asks only for the room its prompt leaves, as the agent's own does.
func TestSummaryPrefixFitsWindow(t *testing.T) {
	counter := tokens.NewEstimator()
	s := &prefixSummarizer{}
	e, err := engine.New(engine.Config{Window: 100_000, MaxTokens: 32_000, Counter: counter, Keeper: engine.NewMemoryKeeper(), Summarizer: s})
	if err != nil {
		t.Fatal(err)
	}
	c := &conv.Conversation{System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")}}
	c.Stamp(c.System)
	for i := range 6 {
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, strings.Repeat("paste ", 10_000))}})
		c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Read part "+strconv.Itoa(i)+".")}})
	}
	prompt := c.Tokens(counter).Total()
	if _, err := e.Compact(context.Background(), c, ""); err != nil {
		t.Fatal(err)
	}
	if s.prefix == nil {
		t.Fatal("the summarizer was given no prefix")
	}
	room := 100_000 - int(math.Ceil(float64(prompt)*1.1))
	if room >= 32_000 {
		t.Fatalf("a prompt of %d tokens is not near the limit: the case tests nothing", prompt)
	}
	if s.prefix.MaxTokens != room {
		t.Errorf("prompt %d tokens: the prefix asks max_tokens %d, want the room left, %d", prompt, s.prefix.MaxTokens, room)
	}
}

// TestStatedWindowDerivesAsNew: a window a provider states is taken as
// New would take it had it been configured: the thresholds, the max_tokens
// requests ask (a given one at or over the window stands for a quarter of
// it, as the proxy takes a client's) and the oversize guard's limit. A
// client asking max_tokens 128,000 of a model taken to have 200,000
// tokens, behind which a 60,000-token one answers, otherwise keeps a
// reserve of half the window and compacts at every request.
func TestStatedWindowDerivesAsNew(t *testing.T) {
	for _, tt := range []struct {
		name      string
		maxTokens int // given; 0: the default
		guard     int // given; 0: the default
		stated    int
	}{
		{"max_tokens given, over the stated window", 128_000, 0, 60_000},
		{"max_tokens given, under it", 8_000, 0, 60_000},
		{"the defaults", 0, 0, 9_000},
		{"the guard given", 0, 4_000, 9_000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := engine.Config{Window: 200_000, MaxTokens: tt.maxTokens, Keeper: engine.NewMemoryKeeper()}
			cfg.Micro.GuardTokens = tt.guard
			e, err := engine.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := &conv.Conversation{}
			c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hello")}})
			if _, err := e.Prepare(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			r, err := e.Retry(context.Background(), c, &llm.LimitError{Limit: llm.Limit{Prompt: 10, MaxTokens: 200_000, Window: tt.stated}})
			if err != nil {
				t.Fatal(err)
			}
			want := cfg
			want.Window, want.Keeper = tt.stated, engine.NewMemoryKeeper()
			if tt.maxTokens > 0 {
				want.MaxTokens = engine.MaxTokensFor(tt.maxTokens, tt.stated)
			}
			w, err := engine.New(want)
			if err != nil {
				t.Fatal(err)
			}
			got, exp := e.Config(), w.Config()
			if e.Budget() != w.Budget() || got.MaxTokens != exp.MaxTokens || got.Micro.GuardTokens != exp.Micro.GuardTokens {
				t.Errorf("stated %d: budget %+v, max_tokens %d, guard %d; New for it: %+v, %d, %d",
					tt.stated, e.Budget(), got.MaxTokens, got.Micro.GuardTokens, w.Budget(), exp.MaxTokens, exp.Micro.GuardTokens)
			}
			if r.Request == nil || r.Request.MaxTokens > exp.MaxTokens {
				t.Errorf("the request sent again asks max_tokens %v, more than a request asks in the window (%d)", r.Request, exp.MaxTokens)
			}
			if a := e.Account(); a.Window != tt.stated {
				t.Errorf("the account keeps window %d, want %d", a.Window, tt.stated)
			}
		})
	}
}
