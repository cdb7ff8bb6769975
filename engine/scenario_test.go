package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestScenarios runs the engine's specification: testdata/*.txt are
// scripts of turns (datadriven; go test ./engine -rewrite regenerates the
// expected output, reviewed as a diff). Commands:
//
//	new window=N [policy=cache-aware|eager|batched] [pricing=anthropic|openai|nocache] [keep=N] [keep-value=V]
//	user [size=N] <text>           append the user's words (size: N filler lines)
//	prepare                        Prepare: decisions and the request
//	respond [tool=T arg=A out=N] [error] [usage=N]
//	                               append the model's answer (a tool call
//	                               whose result of N lines follows, or
//	                               text), then Observe its usage (the
//	                               request's estimate when not given); a
//	                               Read, Edit or Write names file A
//	round-end                      RoundEnded
//	turn tool=T out=N [n=K]        K × (prepare, respond with a tool call), quietly
//	retry [tokens=N]               Retry after a prompt-too-long answer
//	resume                         a new engine on the same conversation, cache cold
//
// After every command the conversation must pass conv.Check.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scenario{t: t}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out := s.run(d)
			if vs := conv.Check(s.c); len(vs) > 0 {
				t.Fatalf("%s: invariants broken: %v", d.Pos, vs)
			}
			return out
		})
	})
}

type scenario struct {
	t       *testing.T
	cfg     engine.Config
	e       *engine.Engine
	c       *conv.Conversation
	keeper  *micro.MemoryKeeper
	calls   int
	lastEst int
}

func (s *scenario) newEngine() {
	s.t.Helper()
	e, err := engine.New(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.e = e
}

func (s *scenario) run(d *datadriven.TestData) string {
	ctx := context.Background()
	arg := func(key, def string) string {
		for _, a := range d.CmdArgs {
			if a.Key == key {
				if len(a.Vals) == 0 {
					return "true"
				}
				return a.Vals[0]
			}
		}
		return def
	}
	num := func(key string, def int) int {
		v, err := strconv.Atoi(arg(key, strconv.Itoa(def)))
		if err != nil {
			d.Fatalf(s.t, "%s: %v", key, err)
		}
		return v
	}
	switch d.Cmd {
	case "new":
		prices, ok := pricing.ByName(arg("pricing", "anthropic"))
		if !ok {
			d.Fatalf(s.t, "unknown pricing")
		}
		policy, err := micro.ByName(arg("policy", "cache-aware"), prices)
		if err != nil {
			d.Fatalf(s.t, "%v", err)
		}
		s.keeper = engine.NewMemoryKeeper()
		keep, err := strconv.ParseFloat(arg("keep-value", "0"), 64)
		if err != nil {
			d.Fatalf(s.t, "keep-value: %v", err)
		}
		s.cfg = engine.Config{Window: num("window", 32_000), Pricing: prices, Policy: policy,
			Counter: tokens.NewEstimator(), Keeper: s.keeper, KeepValue: keep}
		s.cfg.Micro.Keep = num("keep", 0)
		s.newEngine()
		s.c = &conv.Conversation{
			System: []conv.Block{conv.NewText(conv.SourceSystem, strings.Repeat("You are a careful coding agent. Read before you edit; run the tests. ", 30))},
			Tools:  []conv.Tool{{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
		}
		s.c.Stamp(s.c.System)
		return s.budget()
	case "budget":
		return s.budget()
	case "user":
		text := strings.TrimSpace(d.Input)
		for i := range num("size", 0) {
			text += fmt.Sprintf("\nnote %d: the build must stay green and the public API unchanged.", i)
		}
		m, _, err := s.e.Message(ctx, s.c, inputText(text))
		if err != nil {
			d.Fatalf(s.t, "%v", err)
		}
		s.c.Append(m)
		return fmt.Sprintf("messages %d\n", len(s.c.Messages))
	case "prepare":
		r, err := s.e.Prepare(ctx, s.c)
		return s.show(r, err)
	case "respond":
		s.respond(arg("tool", ""), arg("arg", ""), num("out", 0), arg("error", "") == "true", num("usage", 0), true)
		return fmt.Sprintf("messages %d\n", len(s.c.Messages))
	case "turn":
		var cleared, compacted int
		var sb strings.Builder
		for k := range num("n", 1) {
			r, err := s.e.Prepare(ctx, s.c)
			if err != nil {
				d.Fatalf(s.t, "%v", err)
			}
			s.lastEst = r.Tokens
			for _, dec := range r.Decisions {
				if dec.Kind != engine.KindWait {
					fmt.Fprintf(&sb, "step %d: %s\n", k+1, dec)
				}
			}
			cleared += r.Micro.Cleared
			compacted += r.Compaction.Compactions
			s.respond(arg("tool", "Bash"), arg("arg", "ls"), num("out", 10), false, 0, false)
		}
		fmt.Fprintf(&sb, "messages %d, cleared %d, compactions %d, context %d\n", len(s.c.Messages), cleared, compacted, s.c.Tokens(s.cfg.Counter).Total())
		return sb.String()
	case "schedule":
		sc := s.e.Schedule(s.c)
		return fmt.Sprintf("requests %d, growth %.0f/request, kept %d; one compaction %.0f, cycle %d, due at %d; payback %.1f requests, horizon %.1f\n",
			sc.Requests, sc.Growth, sc.Kept, sc.Once, sc.Cycle, sc.Due, sc.Payback, sc.Horizon)
	case "saved":
		return fmt.Sprintf("saved $%.4f against sending everything\n", s.e.Saved())
	case "round-end":
		r, err := s.e.RoundEnded(ctx, s.c)
		return s.show(r, err)
	case "retry":
		// The provider's refusal: the prompt over its window, or (answer)
		// the prompt and the max_tokens asked over it.
		window := num("window", s.cfg.Window)
		cause := fmt.Errorf("%w: prompt is too long: %d tokens > %d maximum", llm.ErrPromptTooLong, num("tokens", s.lastEst), window)
		if answer := num("answer", 0); answer > 0 {
			cause = fmt.Errorf("%w: input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again",
				llm.ErrPromptTooLong, num("tokens", s.lastEst), answer, window)
		}
		switch arg("stated", "yes") {
		case "no":
			// The Responses API's refusal: no sizes.
			cause = &llm.APIError{Status: 400, Type: "invalid_request_error", Kind: llm.ErrPromptTooLong,
				Message: "Your input exceeds the context window of this model. Please adjust your input and try again."}
		case "bytes":
			// Anthropic's refusal of a body over its byte limit.
			cause = &llm.APIError{Status: 413, Type: "request_too_large", Kind: llm.ErrPromptTooLong,
				Message: "Request exceeds the maximum allowed number of bytes."}
		}
		r, err := s.e.Retry(ctx, s.c, cause)
		out := s.show(r, err)
		if r.Request != nil {
			out += fmt.Sprintf("max_tokens %d\n", r.Request.MaxTokens)
		}
		return out
	case "resume":
		// What the agent does on resume: a new engine over the recorded
		// conversation, given the account the session recorded, the
		// prompt cache taken as cold.
		acct := s.e.Account()
		s.newEngine()
		if err := s.e.Resume(acct); err != nil {
			d.Fatalf(s.t, "%v", err)
		}
		s.e.Expire()
		return fmt.Sprintf("resumed at %d messages\n", len(s.c.Messages))
	}
	d.Fatalf(s.t, "unknown command %q", d.Cmd)
	return ""
}

// respond appends the model's answer and observes its usage. With named,
// a Read's argument is the file it reads.
func (s *scenario) respond(tool, arg string, lines int, isErr bool, usage int, named bool) {
	if tool == "" {
		s.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Done: the tests pass.")}})
	} else {
		s.calls++
		id := fmt.Sprintf("toolu_%03d", s.calls)
		if arg == "" {
			arg = fmt.Sprintf("step %d", s.calls)
		}
		key := "command"
		if named && (tool == "Read" || tool == "Edit" || tool == "Write") {
			key = "file_path" // the file it reads or changes: what a compaction carries
		}
		in, _ := json.Marshal(map[string]string{key: arg})
		s.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewText(conv.SourceAssistant, "Let me look."), conv.NewToolUse(id, tool, in)}})
		var out strings.Builder
		for i := range lines {
			fmt.Fprintf(&out, "%s: line %d of the output of call %d, with some detail to read\n", arg, i+1, s.calls)
		}
		s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, tool, out.String(), isErr)}})
	}
	if usage == 0 {
		usage = s.lastEst
	}
	// Observe as the agent does: once the answer is in the conversation
	// (here the result too: the figures are what was reported).
	n := len(s.c.Messages)
	if tool != "" {
		n--
	}
	view := &conv.Conversation{Messages: s.c.Messages[:n]}
	s.e.Observe(view, llm.Usage{Input: usage, Output: 50})
}

// budget prints the engine's thresholds.
func (s *scenario) budget() string {
	b := s.e.Budget()
	return fmt.Sprintf("window %d: effective %d, soft %d, hard %d, limit %d, target %d; micro clears all above %d\n",
		b.Window, b.Effective, b.Soft, b.Hard, b.Limit, b.Target, s.e.HighWater())
}

// show prints what a call decided and the request it built.
func (s *scenario) show(r engine.Ready, err error) string {
	var sb strings.Builder
	for _, dec := range r.Decisions {
		fmt.Fprintf(&sb, "%s\n", dec)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&sb, "warning: %v\n", w)
	}
	if err != nil {
		fmt.Fprintf(&sb, "error: %v\n", err)
	}
	if len(r.Edits) > 0 {
		fmt.Fprintf(&sb, "kept %d edits (%d originals) before applying them\n", len(r.Edits), len(r.Originals))
	}
	if r.Request != nil && err == nil {
		// Invariant 6: no request over the window.
		if werr := conv.CheckWindow(s.c, s.e.Budget().Limit, s.cfg.Counter); werr != nil {
			s.t.Fatalf("the engine let a request over the window through: %v", werr)
		}
	}
	if r.Request != nil {
		s.lastEst = r.Tokens
		rungs := map[conv.Rung]int{}
		for _, m := range s.c.Messages {
			for _, b := range m.Blocks {
				if b.Type == conv.TypeToolResult || b.Type == conv.TypeSummary {
					rungs[b.Meta.Rung]++
				}
			}
		}
		var anchors []string
		for _, a := range r.Assembly.Anchors {
			anchors = append(anchors, fmt.Sprintf("%s@%d", a.Kind, a.Msg))
		}
		fmt.Fprintf(&sb, "request: %d messages, %d tokens (%d effective); results full %d, compressed %d, cleared %d, summaries %d; anchors %s\n",
			len(r.Request.Messages), r.Tokens, s.e.Budget().Effective, rungs[conv.RungFull], rungs[conv.RungCompressed], rungs[conv.RungPlaceholder],
			rungs[conv.RungSummarized], strings.Join(anchors, " "))
	}
	if sb.Len() == 0 {
		return "nothing\n"
	}
	return sb.String()
}

func inputText(text string) assemble.Input { return assemble.Input{Text: text} }
