package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/toolresult"
)

// TestSaved checks the session's account (account.go) request by
// request: what sending everything would read that the request does not,
// at the price of reading it; a recall round trip charged whole.
func TestSaved(t *testing.T) {
	ctx := context.Background()
	for _, p := range []pricing.Table{pricing.Anthropic(), pricing.NoCache()} {
		read, premium := p.CacheRead, p.CacheWrite-p.CacheRead
		if !p.Caches() {
			read, premium = p.Input, 0
		}
		t.Run(p.Name, func(t *testing.T) {
			counter := tokens.NewEstimator()
			// Project rules go in every request, as they would when
			// sending everything: what the account compares includes them.
			rules := fstest.MapFS{"AGENTS.md": {Data: []byte(strings.Repeat("Run the tests before every commit. ", 200))}}
			cfg := engine.Config{Window: 200_000, Pricing: p, Counter: counter, Keeper: engine.NewMemoryKeeper(), Workspace: rules}
			e, err := engine.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := &conv.Conversation{
				System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")},
				Tools: []conv.Tool{
					{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object"}`)},
					{Name: toolresult.DefaultRecallTool, Description: "Recall an original.", InputSchema: json.RawMessage(`{"type":"object"}`)},
				},
			}
			c.Stamp(c.System)
			full := conv.BlockTokens(&c.System[0], counter) // what sending everything sends
			for i := range c.Tools {
				full += conv.ToolTokens(&c.Tools[i], counter)
			}
			if r := e.Rules(); r.File == "" {
				t.Fatal("the project rules were not read")
			} else {
				full += counter.Count(r.Text)
			}
			add := func(m conv.Message) {
				c.Append(m)
				full += conv.MessageTokens(&c.Messages[len(c.Messages)-1], counter)
			}
			prepare := func() int {
				r, err := e.Prepare(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				return r.Tokens
			}
			near := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("%s: saved $%.6f, want $%.6f", what, got, want)
				}
			}

			add(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Read the log.")}})
			prepare()
			near("nothing held back", e.Saved(), 0)

			// A result over the oversize guard: cut to its head and tail
			// as it arrives, so every request from this one on reads less.
			in, _ := json.Marshal(map[string]string{"command": "cat build.log"})
			add(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("toolu_1", "Bash", in)}})
			log := strings.Repeat("build step: compiling package with some detail to read\n", 20_000)
			add(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("toolu_1", "Bash", log, false)}})
			sent := prepare()
			want := read * float64(full-sent) / 1e6
			if want <= 0 {
				t.Fatalf("the guard held nothing back: sent %d of %d", sent, full)
			}
			near("a guarded result", e.Saved(), want)

			// The session resumes in a new engine (a restarted agent)
			// from the account it recorded: the account goes on as if
			// the engine had never stopped.
			e = resumed(t, e, cfg)
			near("resumed", e.Saved(), want)

			add(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "The build fails in step 3.")}})
			add(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Show me step 3.")}})
			sent = prepare()
			want += read * float64(full-sent) / 1e6
			near("the next request", e.Saved(), want)

			// The model recalls the log: a request sending everything
			// would never have made. Its whole prompt is read, the
			// original written, the call's output paid.
			rin, _ := json.Marshal(map[string]string{"id": c.Messages[2].Blocks[0].ID})
			call := conv.NewToolUse("toolu_2", toolresult.DefaultRecallTool, rin)
			c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{call}})
			callTok := conv.BlockTokens(&c.Messages[len(c.Messages)-1].Blocks[0], counter)
			c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("toolu_2", toolresult.DefaultRecallTool, "build step 3: error: undefined: parse", false)}})
			resTok := conv.BlockTokens(&c.Messages[len(c.Messages)-1].Blocks[0], counter)
			sent = prepare()
			want -= (read*float64(sent) + premium*float64(resTok) + p.Output*float64(callTok)) / 1e6
			near("a recall round trip", e.Saved(), want)

			// A compaction is charged at once what it costs: its summary
			// call, which read the context as the compactor measured it,
			// and the rewrite of what it keeps (compact.Cost).
			r, err := e.Compact(ctx, c, "")
			if err != nil {
				t.Fatal(err)
			}
			cr := r.Compaction
			if cr.Compactions == 0 || cr.TokensBefore == 0 {
				t.Fatalf("no compaction to charge: %+v", cr)
			}
			summary := 0
			for _, s := range cr.Summaries {
				summary += s.Tokens
			}
			kept := c.Tokens(counter).Total() + counter.Count(e.Rules().Text)
			want -= compact.Cost(p, cr.TokensBefore, kept, summary) / 1e6
			near("a compaction", e.Saved(), want)
		})
	}
}

// resumed is a new engine for cfg that takes over e's session from the
// account e would have persisted, through its JSON form, as the agent
// resumes one.
func resumed(t *testing.T, e *engine.Engine, cfg engine.Config) *engine.Engine {
	t.Helper()
	data, err := json.Marshal(e.Account())
	if err != nil {
		t.Fatal(err)
	}
	var a engine.Account
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	e2, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Resume(a); err != nil {
		t.Fatal(err)
	}
	e2.Expire()
	if e2.Account() != e.Account() {
		t.Fatalf("resumed account %+v, want %+v", e2.Account(), e.Account())
	}
	return e2
}

// TestResumeRefuses: an account no engine could have kept is refused,
// and the engine keeps its own.
func TestResumeRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		a    engine.Account
	}{
		{"negative requests", engine.Account{Requests: -1}},
		{"negative full", engine.Account{Full: -5}},
		{"negative messages", engine.Account{Messages: -1}},
		{"negative trip", engine.Account{Trip: -1}},
		{"negative window", engine.Account{Window: -1}},
		{"more call output than trip", engine.Account{Trip: 1, TripOutput: 2}},
		{"saving not a number", engine.Account{Saved: math.NaN()}},
		{"infinite saving", engine.Account{Saved: math.Inf(1)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := engine.New(engine.Config{Window: 200_000, Keeper: engine.NewMemoryKeeper()})
			if err != nil {
				t.Fatal(err)
			}
			before := e.Account()
			if err := e.Resume(tt.a); !errors.Is(err, engine.ErrAccount) {
				t.Fatalf("Resume(%+v) = %v, want ErrAccount", tt.a, err)
			}
			if e.Account() != before {
				t.Errorf("the refused account changed the engine's: %+v", e.Account())
			}
		})
	}
}
