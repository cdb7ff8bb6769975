package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

func TestCacheBill(t *testing.T) {
	seg := func(tokens int, prefix uint64, anchor bool) Segment { return Segment{tokens, prefix, anchor} }
	a := []Segment{seg(100, 1, false), seg(200, 2, true), seg(50, 3, false)}
	// The same prefix plus one more turn, with the breakpoint moved to it.
	b := []Segment{seg(100, 1, false), seg(200, 2, false), seg(50, 3, false), seg(70, 4, true), seg(30, 5, false)}
	// A prefix that differs from the first block on.
	c := []Segment{seg(100, 9, false), seg(200, 10, true)}
	far := make([]Segment, 0, 30)
	far = append(far, seg(100, 1, false), seg(200, 2, false))
	for i := range 25 {
		far = append(far, seg(10, uint64(100+i), i == 24))
	}

	tests := []struct {
		name  string
		table pricing.Table
		min   int
		reqs  [][]Segment
		want  []Bill // USD ignored here; checked separately
	}{
		{"prefix sent twice is read the second time", pricing.Anthropic(), 0, [][]Segment{a, a},
			[]Bill{{Input: 50, CacheWrite: 300}, {Input: 50, CacheRead: 300}}},
		{"growing conversation reads the old prefix, writes the new part", pricing.Anthropic(), 0, [][]Segment{a, b},
			[]Bill{{Input: 50, CacheWrite: 300}, {Input: 30, CacheRead: 300, CacheWrite: 120}}},
		{"changed prefix misses", pricing.Anthropic(), 0, [][]Segment{a, c},
			[]Bill{{Input: 50, CacheWrite: 300}, {CacheWrite: 300}}},
		{"hit more than 20 blocks back is missed", pricing.Anthropic(), 0, [][]Segment{a, far},
			[]Bill{{Input: 50, CacheWrite: 300}, {CacheWrite: 550}}},
		{"prefix below the minimum is never cached", pricing.Anthropic(), 1000, [][]Segment{a, a},
			[]Bill{{Input: 350}, {Input: 350}}},
		{"no cache bills everything as input", pricing.NoCache(), 0, [][]Segment{a, a},
			[]Bill{{Input: 350}, {Input: 350}}},
		{"automatic caching reads the longest shared prefix", pricing.OpenAI(), 0, [][]Segment{a, b},
			[]Bill{{Input: 350}, {Input: 100, CacheRead: 350}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := NewCache(tt.table, tt.min)
			for i, segs := range tt.reqs {
				got := cache.Bill(segs, 0)
				want := tt.want[i]
				if got.Input != want.Input || got.CacheRead != want.CacheRead || got.CacheWrite != want.CacheWrite {
					t.Errorf("request %d: got input %d read %d write %d, want input %d read %d write %d",
						i, got.Input, got.CacheRead, got.CacheWrite, want.Input, want.CacheRead, want.CacheWrite)
				}
			}
		})
	}
}

func TestCacheBillUSD(t *testing.T) {
	cache := NewCache(pricing.Anthropic(), 0)
	segs := []Segment{{Tokens: 1_000_000, Prefix: 1, Anchor: true}, {Tokens: 1_000_000, Prefix: 2}}
	first := cache.Bill(segs, 1_000_000)
	second := cache.Bill(segs, 0)
	// First: 1M written at 3.75, 1M input at 3, 1M output at 15.
	if math.Abs(first.USD-21.75) > 1e-9 {
		t.Errorf("first bill = $%v, want $21.75", first.USD)
	}
	// Second: 1M read at 0.30, 1M input at 3.
	if math.Abs(second.USD-3.30) > 1e-9 {
		t.Errorf("second bill = $%v, want $3.30", second.USD)
	}
}

type words struct{}

func (words) Count(s string) int { return len(s)/4 + 1 }

// TestSegmentsSamePrefix checks the request layout end to end: the same
// request twice is read from the cache the second time, and a request
// whose first message changed is not.
func TestSegmentsSamePrefix(t *testing.T) {
	c := recording()
	req := anchored(c)
	cache := NewCache(pricing.Anthropic(), 0)
	first := cache.Bill(Segments(req, words{}), 0)
	second := cache.Bill(Segments(req, words{}), 0)
	if first.CacheRead != 0 || first.CacheWrite == 0 {
		t.Errorf("first request: %+v, want a write and no read", first)
	}
	if second.CacheRead != first.CacheWrite || second.CacheWrite != 0 {
		t.Errorf("second request: %+v, want everything written before read back", second)
	}
	changed := c.Clone()
	changed.Messages[2].Blocks[0].SetText("something else entirely", conv.RungPlaceholder)
	third := cache.Bill(Segments(anchored(changed), words{}), 0)
	if third.CacheRead >= second.CacheRead {
		t.Errorf("changed request read %d tokens from cache, want fewer than %d", third.CacheRead, second.CacheRead)
	}
}

// TestSegmentsCountAsEngine: a request's segments add up to the engine's
// own count of it (conv: blocks, tools and each message's framing), so
// the bill, the stand-in's usage report and the engine's measure of its
// context are one count.
func TestSegmentsCountAsEngine(t *testing.T) {
	full := recording()
	empty := &conv.Conversation{System: full.System, Tools: full.Tools}
	one := &conv.Conversation{System: full.System, Tools: full.Tools, Messages: full.Messages[:1]}
	for _, tc := range []struct {
		name string
		c    *conv.Conversation
	}{{"no messages", empty}, {"one message", one}, {"a session", full}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c.Clone()
			req := &llm.Request{System: c.System, Tools: c.Tools, Messages: c.Messages}
			got := 0
			for _, s := range Segments(req, words{}) {
				got += s.Tokens
			}
			if want := c.Tokens(words{}).Total(); got != want {
				t.Errorf("segments hold %d tokens, the engine counts %d", got, want)
			}
		})
	}
}

func recording() *conv.Conversation {
	c := &conv.Conversation{
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")},
		Tools: []conv.Tool{
			{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "Edit", Description: "Edit a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		},
	}
	c.Stamp(c.System)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Please fix the failing test.")}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewText(conv.SourceAssistant, "Let me read the file."),
		conv.NewToolUse("t1", "Read", json.RawMessage(`{"path":"src/app.py"}`)),
	}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewToolResult("t1", "Read", "def compute_total(items):\n    raise ValueError('empty basket')\n", false),
	}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewText(conv.SourceAssistant, "compute_total raises ValueError on an empty list; I will guard it."),
		conv.NewToolUse("t2", "Edit", json.RawMessage(`{"path":"src/app.py","old":"raise","new":"return 0"}`)),
	}})
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("t2", "Edit", "ok", false)}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Done.")}})
	return c
}

func TestEvidenceRecall(t *testing.T) {
	rec := recording()
	ev := NewEvidence(rec)
	terms := ev.Terms[3]
	// "raise" is quoted in the Edit call's input and came from the result.
	want := []string{"ValueError", "compute_total", "raise"}
	if len(terms) != len(want) || terms[0] != want[0] || terms[1] != want[1] || terms[2] != want[2] {
		t.Fatalf("evidence terms of message 3 = %q, want %q", terms, want)
	}
	if got := ev.Terms[1]; len(got) != 0 {
		t.Errorf("message 1 has evidence %q before any tool result", got)
	}
	full := &llm.Request{System: rec.System, Messages: rec.Messages[:3]}
	if got := ev.Recall(full, terms); got != 3 {
		t.Errorf("recall with the result visible = %d/3, want 3/3", got)
	}
	cleared := rec.Clone()
	cleared.Messages[2].Blocks[0].SetText("[cleared: Read src/app.py — recall b5]", conv.RungPlaceholder)
	if got := ev.Recall(&llm.Request{System: cleared.System, Messages: cleared.Messages[:3]}, terms); got != 0 {
		t.Errorf("recall after clearing the result = %d/3, want 0", got)
	}
	compressed := rec.Clone()
	compressed.Messages[2].Blocks[0].SetText("def compute_total(items): … 1 more line", conv.RungCompressed)
	if got := ev.Recall(&llm.Request{System: compressed.System, Messages: compressed.Messages[:3]}, terms); got != 1 {
		t.Errorf("recall with a compressed result keeping one term = %d/3, want 1", got)
	}
}

func TestReplayStrategies(t *testing.T) {
	rec := recording()
	opts := Options{
		Window: 1000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: Strategies(),
		Summarize: func(_ context.Context, msgs []conv.Message) (string, error) { return "summary", nil },
	}
	runs, err := Replay(context.Background(), []Session{{Name: "tiny", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(opts.Strategies) {
		t.Fatalf("got %d runs, want %d", len(runs), len(opts.Strategies))
	}
	for _, r := range runs {
		if r.Invalid > 0 {
			t.Errorf("%s sent %d invalid requests", r.Strategy, r.Invalid)
		}
		if len(r.Turns) != 3 {
			t.Errorf("%s: %d turns, want 3", r.Strategy, len(r.Turns))
		}
		if r.Strategy == "none" && r.Recall != 1 {
			t.Errorf("none: recall %v, want 1", r.Recall)
		}
	}
	rep := NewReport(runs, []Session{{Name: "tiny", Conv: rec}}, opts)
	if rep.Strategies[0].CostVsNone != 1 {
		t.Errorf("none vs none = %v, want 1", rep.Strategies[0].CostVsNone)
	}
}

func TestWriteHTML(t *testing.T) {
	rec := recording()
	opts := Options{
		Window: 1000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: Strategies(),
		Summarize: func(_ context.Context, msgs []conv.Message) (string, error) { return "summary", nil },
	}
	sessions := []Session{{Name: "/home/someone/sessions/tiny.jsonl", Conv: rec}}
	runs, err := Replay(context.Background(), sessions, opts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := NewReport(runs, sessions, opts).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "/home/someone") {
		t.Error("the report prints a session's full local path; it should name it by file name")
	}
	for _, want := range []string{"<svg", "Context tokens per turn", "ctxkit", "reference", `id="summary"`, "Cost vs recall", "tiny.jsonl"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, banned := range []string{"http://", "https://"} {
		if strings.Contains(strings.ReplaceAll(page, "http://www.w3.org", ""), banned) {
			t.Errorf("report refers to the network (%q); it must open offline", banned)
		}
	}
	// Without the bound strategy there is nothing to divide by: a dash,
	// as the text table prints it, not 0.000×.
	var some []Factory
	for _, f := range opts.Strategies {
		if f.Name == "none" || f.Name == "ctxkit" {
			some = append(some, f)
		}
	}
	opts.Strategies = some
	if runs, err = Replay(context.Background(), sessions, opts); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := NewReport(runs, sessions, opts).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "0.000×") {
		t.Error("without the bound strategy the report shows a cost of 0.000× the bound; want a dash")
	}
}

// TestCacheTTL: an entry read within its TTL is read (and refreshed); one
// older than the TTL is gone and written again, and the expiry counted; a
// request without a time expires nothing.
func TestCacheTTL(t *testing.T) {
	segs := []Segment{{Tokens: 2000, Prefix: 1, Anchor: true}, {Tokens: 100, Prefix: 2}}
	t0 := time.Date(2026, 1, 14, 16, 0, 0, 0, time.UTC)
	c := NewCache(pricing.Anthropic(), 1024) // 5-minute TTL
	if b := c.BillAt(segs, 0, t0); b.CacheWrite != 2000 {
		t.Fatalf("first request: %+v, want 2000 written", b)
	}
	if b := c.BillAt(segs, 0, t0.Add(4*time.Minute)); b.CacheRead != 2000 {
		t.Errorf("4 minutes later: %+v, want 2000 read", b)
	}
	// The read at 4 minutes refreshed the entry: 8 minutes is 4 after it.
	if b := c.BillAt(segs, 0, t0.Add(8*time.Minute)); b.CacheRead != 2000 {
		t.Errorf("8 minutes, 4 after the last read: %+v, want 2000 read", b)
	}
	if b := c.BillAt(segs, 0, t0.Add(14*time.Minute)); b.CacheRead != 0 || b.CacheWrite != 2000 {
		t.Errorf("6 minutes after the last read: %+v, want the entry gone and written again", b)
	}
	if c.Expiries != 1 {
		t.Errorf("expiries = %d, want 1", c.Expiries)
	}
	hour := NewCache(pricing.Anthropic1h(), 1024)
	hour.BillAt(segs, 0, t0)
	if b := hour.BillAt(segs, 0, t0.Add(50*time.Minute)); b.CacheRead != 2000 {
		t.Errorf("1-hour cache, 50 minutes later: %+v, want a read", b)
	}
	untimed := NewCache(pricing.Anthropic(), 1024)
	untimed.Bill(segs, 0)
	if b := untimed.Bill(segs, 0); b.CacheRead != 2000 || untimed.Expiries != 0 {
		t.Errorf("without times: %+v, want a read and no expiry", b)
	}
}

// TestAutomaticWritePremium: with OpenAI's newer write premium what a
// request does not read is written at 1.25×, without it billed as input.
func TestAutomaticWritePremium(t *testing.T) {
	segs := []Segment{{Tokens: 2000, Prefix: 1}, {Tokens: 100, Prefix: 2}}
	plain := NewCache(pricing.OpenAI(), 1024).Bill(segs, 0)
	premium := NewCache(pricing.OpenAIWritePremium(), 1024).Bill(segs, 0)
	if plain.Input != 2100 || plain.CacheWrite != 0 {
		t.Errorf("openai: %+v, want 2100 input", plain)
	}
	if premium.CacheWrite != 2100 || premium.Input != 0 || math.Abs(premium.USD-2100*1.5625/1e6) > 1e-12 {
		t.Errorf("openai-write: %+v, want 2100 written at 1.5625/M", premium)
	}
}
