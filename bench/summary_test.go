package bench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// TestSummaryBilled: a summary request that extends the cached
// conversation reads what the last request wrote and pays the rest plus
// the output floor; a separate summary request writes its whole input
// fresh; both bill at least SummaryOutputFloor output tokens.
func TestSummaryBilled(t *testing.T) {
	rec := chain(4, 200)
	opts := Options{Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1}
	r := &replayer{opts: opts, cache: NewCache(opts.Pricing, 1)}
	last := &llm.Request{System: rec.System, Tools: rec.Tools, Messages: rec.Messages[:7]}
	first := r.cache.Bill(Segments(anchoredRequest(last), words{}), 0)
	if first.CacheWrite == 0 {
		t.Fatalf("first request wrote nothing: %+v", first)
	}
	pre := &llm.Request{System: rec.System, Tools: rec.Tools, Messages: rec.Messages[:9]}
	ext := r.summaryBills(SummaryExtends, pre, rec.Messages[:9], 10)
	if ext.CacheRead != first.CacheWrite {
		t.Errorf("extending summary read %d tokens, want the %d the last request wrote", ext.CacheRead, first.CacheWrite)
	}
	if ext.Output != SummaryOutputFloor {
		t.Errorf("extending summary billed %d output tokens, want the floor %d", ext.Output, SummaryOutputFloor)
	}
	whole := 0
	for _, s := range Segments(anchoredRequest(&llm.Request{System: rec.System, Tools: rec.Tools, Messages: withInstruction(rec.Messages[:9], conv.NewText(conv.SourceUser, summaryPrompt))}), words{}) {
		whole += s.Tokens
	}
	if ext.Prompt() != whole {
		t.Errorf("extending summary prompt %d tokens, want the conversation and the instruction, %d", ext.Prompt(), whole)
	}
	sep := r.summaryBills(SummarySeparate, pre, rec.Messages[:9], 5000)
	if sep.CacheRead != 0 || sep.CacheWrite == 0 || sep.Output != 5000 {
		t.Errorf("separate summary: %+v, want a fresh write, no read and the summary's own 5000 output tokens", sep)
	}
	checked := r.summaryBills(SummarySeparateChecked, pre, rec.Messages[:9], 10)
	if checked.Output != 2*SummaryOutputFloor || checked.CacheRead == 0 {
		t.Errorf("checked summary: %+v, want two calls, the second reading the first", checked)
	}
}

// TestReplayBillsSummaries: codex compacts on a small window; its run
// costs more with summaries billed than with --free-summaries, by exactly
// the summary cost it reports.
func TestReplayBillsSummaries(t *testing.T) {
	rec := chain(10, 200)
	f, _ := Lookup("codex")
	opts := Options{Window: 1500, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: f,
		Summarize: func(context.Context, []conv.Message) (string, error) { return "short summary", nil }}
	billed, err := Replay(context.Background(), []Session{{Name: "s", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.FreeSummaries = true
	free, err := Replay(context.Background(), []Session{{Name: "s", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, fr := billed[0], free[0]
	if b.Compactions == 0 {
		t.Fatal("codex never compacted; the test needs a smaller window")
	}
	if b.SummaryCost <= 0 || fr.SummaryCost != 0 {
		t.Fatalf("summary cost billed %v, free %v", b.SummaryCost, fr.SummaryCost)
	}
	if d := b.Total.USD - fr.Total.USD; d < b.SummaryCost*0.999 || d > b.SummaryCost*1.001 {
		t.Errorf("billed − free = $%v, want the summary cost $%v", d, b.SummaryCost)
	}
	if b.Total.Output-fr.Total.Output != b.Compactions*SummaryOutputFloor {
		t.Errorf("summary output %d tokens over %d compactions, want the floor each", b.Total.Output-fr.Total.Output, b.Compactions)
	}
}

// TestEvidenceV2 checks the v2 rules on a hand-made session.
func TestEvidenceV2(t *testing.T) {
	c := &conv.Conversation{Tools: []conv.Tool{{Name: "Bash", InputSchema: json.RawMessage(`{}`)}}}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Why does parse_header fail?")}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("t1", "Bash", json.RawMessage(`{"command":"wc -l"}`))}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("t1", "Bash", "1240 lines in read_config; parse_header at 87; max_depth 240", false)}})
	// Message 3 uses read_config and 1240 (from the result) and
	// parse_header (from the user).
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewText(conv.SourceAssistant, "read_config has 1240 lines; parse_header is the user's."),
		conv.NewToolUse("t2", "Bash", json.RawMessage(`{"command":"true"}`)),
	}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("t2", "Bash", "ok", false)}})
	// Message 5 uses read_config again (restated by message 3: not
	// evidence) and max_depth (evidence).
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "So read_config and max_depth.")}})
	ev := NewEvidence(c)
	if got, want := ev.Terms[3], []string{"1240", "read_config"}; !equal(got, want) {
		t.Errorf("terms of message 3 = %q, want %q (parse_header is the user's)", got, want)
	}
	if got, want := ev.Terms[5], []string{"max_depth"}; !equal(got, want) {
		t.Errorf("terms of message 5 = %q, want %q (read_config was restated at message 3)", got, want)
	}
	// "240" does not match "1240": a result saying 1240 lines does not
	// show 240, a result saying 240 does.
	cleared := c.Clone()
	cleared.Messages[2].Blocks[0].SetText("[cleared: wc -l, 1240 lines]", conv.RungPlaceholder)
	req := &llm.Request{Messages: cleared.Messages[:3]}
	ev.where["240"] = nil
	if got := ev.Recall(req, []string{"240"}); got != 0 {
		t.Errorf(`"240" found in a placeholder holding only "1240"`)
	}
	if got := ev.RecallV1(req, []string{"240"}); got != 1 {
		t.Errorf("v1 should still find the substring (it is kept to compare)")
	}
	if !containsWhole("max 240.", "240") || containsWhole("1240", "240") || containsWhole("2401", "240") {
		t.Error("containsWhole does not match by whole tokens")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// clearWith clears every consumed tool result but the newest with text(id).
type clearWith struct {
	base
	text func(id string) string
}

func (s *clearWith) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.append(arrived)
	res := consumedResults(s.c)
	for _, b := range res {
		if b.Meta.Rung < conv.RungPlaceholder {
			placeholder(b, s.text(b.ID))
		}
	}
	return s.request(), StepInfo{}, nil
}

// TestRecallRoundTrip: a turn that uses a term held only by a cleared
// result pays one more round trip when the placeholder carries a recall
// id, and is credited with the term; without a recall id the term is
// simply missing and nothing more is billed.
func TestRecallRoundTrip(t *testing.T) {
	c := &conv.Conversation{Tools: []conv.Tool{{Name: "Bash", InputSchema: json.RawMessage(`{}`)}}}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Find the config reader.")}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("t1", "Bash", json.RawMessage(`{"command":"grep -r config"}`))}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("t1", "Bash", "src/conf.py: def read_config(path): # 1240 lines", false)}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("t2", "Bash", json.RawMessage(`{"command":"ls"}`))}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("t2", "Bash", "README", false)}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "The reader is read_config.")}})
	run := func(text func(string) string) Run {
		f := Factory{Name: "clear", New: func(e Env) Strategy { return &clearWith{base: newBase(e), text: text} }}
		opts := Options{Window: 1 << 20, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: []Factory{f}}
		runs, err := Replay(context.Background(), []Session{{Name: "s", Conv: c}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return runs[0]
	}
	with := run(func(id string) string { return "[cleared: Bash — recall " + id + "]" })
	without := run(func(string) string { return "[cleared: Bash]" })
	if with.Recalls != 1 || without.Recalls != 0 {
		t.Fatalf("recalls: with a recall id %d, without %d; want 1 and 0", with.Recalls, without.Recalls)
	}
	last := len(with.Turns) - 1
	if with.Turns[last].Present != 1 || without.Turns[last].Present != 0 {
		t.Errorf("read_config present: with recall %d, without %d; want 1 and 0", with.Turns[last].Present, without.Turns[last].Present)
	}
	extra := with.Turns[last].Bill.Output - without.Turns[last].Bill.Output
	if extra != recallOutputTokens {
		t.Errorf("the round trip billed %d more output tokens, want %d", extra, recallOutputTokens)
	}
	if with.Turns[last].Bill.USD <= without.Turns[last].Bill.USD {
		t.Errorf("the turn with a recall cost $%v, without $%v: the round trip must cost", with.Turns[last].Bill.USD, without.Turns[last].Bill.USD)
	}

	// An Observer is told of both requests in the order the provider
	// answered them: the one the model answered with the recall call,
	// then the round trip's, answered by the recorded answer.
	obs := &observedClear{clearWith: clearWith{text: func(id string) string { return "[cleared: Bash — recall " + id + "]" }}}
	f := Factory{Name: "clear", New: func(e Env) Strategy { obs.base = newBase(e); return obs }}
	opts := Options{Window: 1 << 20, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: []Factory{f}}
	if _, err := Replay(context.Background(), []Session{{Name: "s", Conv: c}}, opts); err != nil {
		t.Fatal(err)
	}
	answer := conv.MessageTokens(&c.Messages[len(c.Messages)-1], words{})
	if n := len(obs.reports); n != len(with.Turns)+1 {
		t.Fatalf("%d reports for %d requests and one round trip", n, len(with.Turns))
	}
	first, trip := obs.reports[len(obs.reports)-2], obs.reports[len(obs.reports)-1]
	if first.Output != recallOutputTokens || trip.Output != answer {
		t.Errorf("reported outputs %d then %d, want the recall call's %d then the recorded answer's %d", first.Output, trip.Output, recallOutputTokens, answer)
	}
	if want := with.Turns[len(with.Turns)-1].Prompt; first.Prompt() != want {
		t.Errorf("the request was reported at %d prompt tokens, billed at %d", first.Prompt(), want)
	}
	if trip.Prompt() <= first.Prompt() {
		t.Errorf("the round trip's prompt (%d) is not larger than the request's (%d): it carries the recalled original", trip.Prompt(), first.Prompt())
	}
}

// observedClear is clearWith that keeps the reports it is given.
type observedClear struct {
	clearWith
	reports []llm.Usage
}

func (s *observedClear) Observe(u llm.Usage) { s.reports = append(s.reports, u) }

// callsStrategy sends everything, as none does, and reports one summary
// call of out tokens with each request, as a proxy's step does.
type callsStrategy struct {
	env  Env
	msgs []conv.Message
	out  int
}

func (s *callsStrategy) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	s.msgs = append(s.msgs, arrived...)
	req := &llm.Request{System: s.env.System, Tools: s.env.Tools, Messages: s.msgs}
	return req, StepInfo{AsSent: true, Calls: []Call{{Request: req, Output: s.out}}, Compactions: 1}, nil
}

// TestProxyCallsBilledAsSummaries: a summary call a step reports (a
// proxy's) is billed as every strategy's summary is, its output at no
// less than SummaryOutputFloor, and at its own length above it.
func TestProxyCallsBilledAsSummaries(t *testing.T) {
	rec := chain(3, 50)
	for _, out := range []int{10, SummaryOutputFloor + 500} {
		f := Factory{Name: "calls", New: func(env Env) Strategy { return &callsStrategy{env: env, out: out} }}
		none, _ := Lookup("none")
		opts := Options{Window: 100_000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: append(none, f),
			Summarize: func(context.Context, []conv.Message) (string, error) { return "summary", nil }}
		runs, err := Replay(context.Background(), []Session{{Name: "s", Conv: rec}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		var base, calls Run
		for _, r := range runs {
			if r.Strategy == "none" {
				base = r
			} else {
				calls = r
			}
		}
		want := len(calls.Turns) * max(out, SummaryOutputFloor)
		if got := calls.Total.Output - base.Total.Output; got != want {
			t.Errorf("answers of %d tokens: summary output billed %d over %d calls, want %d", out, got, len(calls.Turns), want)
		}
	}
}

// TestMergeBill: a merge of summaries is a request of its own, written
// fresh — the system prompt, the instruction and the parts — with an
// output of no less than a model summary's.
func TestMergeBill(t *testing.T) {
	for _, tt := range []struct {
		name          string
		prices        pricing.Table
		parts, output int
		want          Bill
	}{
		{"no cache", pricing.NoCache(), 3000, 500, Bill{Input: 2*summaryPromptTokens + 3000, Output: SummaryOutputFloor}},
		{"no cache, long output", pricing.NoCache(), 3000, 2500, Bill{Input: 2*summaryPromptTokens + 3000, Output: 2500}},
		{"anthropic: written to the cache", pricing.Anthropic(), 3000, 500, Bill{CacheWrite: 2*summaryPromptTokens + 3000, Output: SummaryOutputFloor}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := mergeBill(Env{Pricing: tt.prices, MinCacheTokens: 1024}, tt.parts, tt.output)
			tt.want.USD = tt.prices.Cost(tt.want.Input, tt.want.CacheWrite, tt.want.CacheRead, tt.want.Output)
			if got != tt.want {
				t.Errorf("mergeBill = %+v, want %+v", got, tt.want)
			}
		})
	}
}
