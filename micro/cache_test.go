package micro

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
)

// recorder is a policy that records every batch it is offered and clears
// the ones accept says.
type recorder struct {
	batches *[]Batch
	accept  func(Batch) bool
}

func (recorder) Name() string { return "recorder" }

func (r recorder) Clear(b Batch) bool {
	*r.batches = append(*r.batches, b)
	return r.accept != nil && r.accept(b) && b.Freed > 0
}

// span is the tokens of messages [from, to) as the Clearer counts them.
func span(s *session, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		n += conv.MessageTokens(&s.c.Messages[i], s.m.cfg.Counter)
	}
	return n
}

// lastID is the id of the last block of message i: where an anchor at cut
// i+1 sits.
func lastID(s *session, i int) string {
	bs := s.c.Messages[i].Blocks
	return bs[len(bs)-1].ID
}

// The rewrite a batch causes runs from the deepest anchored prefix before
// its first block — a request end, then the frontier a clear left — to the
// end of the previous request, and Hold names the anchors that make the
// provider bill exactly that.
func TestRewriteFromCut(t *testing.T) {
	var got []Batch
	open := false
	pol := recorder{batches: &got, accept: func(Batch) bool { return open }}
	s := newSession(t, Config{Policy: pol, Keep: 1, MinCacheTokens: 1, Preserve: []string{}})
	// Requests end after messages 1, 3, 5, … (cuts 1, 3, 5, …); the
	// result of call k sits in message 2k.
	big := lines(60, "line %d of the output")
	for i := range 3 {
		s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), big)
		s.step()
	}
	// Requests so far: 1, 3, 5, 7 messages. With Keep 1, the result in
	// message 2 crossed at the last step: its batch rewrites from cut 1
	// (the first request's end) to the previous request's end, 5.
	if len(got) != 1 {
		t.Fatalf("%d batches offered, want 1", len(got))
	}
	if want := span(s, 1, 5); got[0].Suffix != want {
		t.Errorf("T = %d, want %d: messages 1..4, from the first request's end", got[0].Suffix, want)
	}
	if h := s.m.Hold(); len(h) != 0 {
		t.Errorf("Hold after a step that changed nothing and no batch yet = %v, want none", h)
	}

	// Now the policy accepts: both pending results clear (largest batch
	// first), the request reads cut 1 and writes a frontier at the message
	// of the oldest result still kept whole (message 6).
	open = true
	s.call("bash", `{"command":"step 3"}`, big)
	if res := s.step(); res.Cleared != 2 {
		t.Fatalf("cleared %d, want 2", res.Cleared)
	}
	if want := []string{lastID(s, 0), lastID(s, 5)}; !slices.Equal(s.m.Hold(), want) {
		t.Errorf("Hold = %v, want %v (read cut 1, frontier 6)", s.m.Hold(), want)
	}

	// The next batch starts at the frontier: T runs from cut 6 to the
	// previous request's end (9 messages), not from the system prompt.
	open = false
	got = nil
	s.call("bash", `{"command":"step 4"}`, big)
	s.step()
	if len(got) != 1 {
		t.Fatalf("%d batches offered, want 1", len(got))
	}
	if want := span(s, 6, 9); got[0].Suffix != want {
		t.Errorf("T = %d, want %d: messages 6..8, from the frontier", got[0].Suffix, want)
	}
	if want := []string{lastID(s, 5)}; !slices.Equal(s.m.Hold(), want) {
		t.Errorf("Hold on a quiet step = %v, want the frontier %v", s.m.Hold(), want)
	}
}

// A cut shorter than MinCacheTokens was never written: the rewrite starts
// at the system prompt.
func TestRewriteShortCut(t *testing.T) {
	var got []Batch
	s := newSession(t, Config{Policy: recorder{batches: &got}, Keep: 1, MinCacheTokens: 1 << 20, Preserve: []string{}})
	for i := range 3 {
		s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), lines(60, "line %d"))
		s.step()
	}
	if len(got) != 1 {
		t.Fatalf("%d batches offered, want 1", len(got))
	}
	if want := span(s, 0, 5); got[0].Suffix != want {
		t.Errorf("T = %d, want %d: every message of the previous request", got[0].Suffix, want)
	}
}

// With automatic prefix caching the rewrite starts at the batch's first
// block, and there are no anchors to hold.
func TestRewriteAutomatic(t *testing.T) {
	s := newSession(t, Config{Policy: CacheAware{Pricing: pricing.OpenAI()}, Keep: 1, Preserve: []string{}})
	for i := range 3 {
		s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), lines(60, "line %d"))
		s.step()
	}
	var got []Batch
	s.m.cfg.Policy = autoRecorder{recorder{batches: &got}}
	s.call("bash", `{"command":"step 3"}`, lines(60, "line %d"))
	s.step()
	if len(got) == 0 {
		t.Fatal("no batch offered")
	}
	// The batch's first block is the result in message 2, the first block
	// of that message: T covers messages 2..6 of the previous request.
	if want := span(s, 2, 7); got[0].Suffix != want {
		t.Errorf("T = %d, want %d", got[0].Suffix, want)
	}
	if h := s.m.Hold(); len(h) > 0 {
		t.Errorf("Hold = %v with automatic caching, want none", h)
	}
}

// autoRecorder records like recorder, for a provider that caches every
// prefix by itself.
type autoRecorder struct{ recorder }

func (autoRecorder) Automatic() bool { return true }

// A stale read far back is offered apart from the newer results: the
// policy may clear those alone, and the read stays pending.
func TestSplitBatch(t *testing.T) {
	var got []Batch
	limit := 0
	pol := recorder{batches: &got, accept: func(b Batch) bool { return b.Suffix <= limit }}
	s := newSession(t, Config{Policy: pol, Keep: 1, MinCacheTokens: 1})
	read := s.call("Read", `{"file_path":"/w/app.go"}`, lines(200, "%6d\tcode"))
	s.step()
	var results []string
	for i := range 6 {
		results = append(results, s.call("bash", fmt.Sprintf(`{"command":"run %d"}`, i), lines(60, "out %d")))
		s.step()
	}
	// Everything pending so far was kept (limit 0). Editing the file makes
	// the read stale: it joins the pending results, far before them.
	limit = span(s, 7, len(s.c.Messages)) // from the newest results' cut on
	s.call("Edit", `{"file_path":"/w/app.go","old_string":"a","new_string":"b"}`, "applied "+lines(3, "diff %d"))
	got = nil
	s.step()
	if len(got) < 2 {
		t.Fatalf("%d batches offered, want the whole one and later ones", len(got))
	}
	if got[0].Suffix <= got[len(got)-1].Suffix || got[0].Freed <= got[len(got)-1].Freed {
		t.Errorf("batches not offered largest first: %+v", got)
	}
	if s.rung(read) != conv.RungFull {
		t.Errorf("the stale read far back was cleared with the newer results (rung %d)", s.rung(read))
	}
	if s.rung(results[len(results)-2]) != conv.RungPlaceholder {
		t.Errorf("a result behind the cut was not cleared (rung %d)", s.rung(results[len(results)-2]))
	}
	// The read is still offered at the next request.
	got = nil
	s.call("bash", `{"command":"true"}`, "ok")
	s.step()
	if len(got) == 0 || got[0].Freed < 100 {
		t.Errorf("the stale read is no longer pending: %+v", got)
	}
}

// After a compaction, Compacted clears what the rules allow at once, as
// the request writes everything after the summary anyway, and is not
// counted as a request.
func TestCompacted(t *testing.T) {
	// Dollars alone (KeepValue −1): what is tested is the rewrite a
	// compaction makes free, not the recall round trip the knob asks.
	s := newSession(t, Config{Keep: 1, Preserve: []string{}, Policy: CacheAware{Pricing: pricing.Anthropic(), KeepValue: -1}})
	for i := range 6 {
		s.call("bash", fmt.Sprintf(`{"command":"run %d"}`, i), lines(40, "out %d"))
		s.step()
	}
	// Cache-aware kept the small results deep in the prefix.
	held := 0
	for _, m := range s.c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeToolResult && b.Meta.Rung == conv.RungFull {
				held++
			}
		}
	}
	if held < 4 {
		t.Fatalf("cache-aware cleared early (%d results whole): the test needs pending ones", held)
	}
	requests := s.m.st.requests
	sum := conv.NewSummary("Summary of the first turns.", conv.Span{First: 1, Last: 2})
	e := conv.Edit{Kind: conv.EditReplace, From: 0, To: 5, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{sum}}}}
	if err := s.k.Keep(context.Background(), e, s.c); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Apply(e); err != nil {
		t.Fatal(err)
	}
	s.c.Renumber()
	res, err := s.m.Compacted(context.Background(), s.c, s.k)
	if err != nil {
		t.Fatal(err)
	}
	if vs := conv.CheckRequest(s.c); len(vs) > 0 {
		t.Fatalf("invariants broken after Compacted: %v", vs)
	}
	s.checkRecall()
	if res.Cleared < 2 {
		t.Errorf("Compacted cleared %d, want the consumed results behind the Keep boundary", res.Cleared)
	}
	if s.m.st.requests != requests {
		t.Errorf("Compacted counted a request: %d, was %d", s.m.st.requests, requests)
	}
	if len(s.m.Hold()) != 1 {
		t.Errorf("Hold after Compacted = %v, want the new frontier", s.m.Hold())
	}
}

// Batch.Compaction foresees the requests left before the context, less
// the batch, reaches CompactAt at the rate it grew.
func TestCompactionHorizon(t *testing.T) {
	var got []Batch
	s := newSession(t, Config{Policy: recorder{batches: &got}, Keep: 1, Preserve: []string{}, CompactAt: 100_000})
	grown, n := 0, 0
	for i := range 4 {
		before := s.c.Tokens(s.m.cfg.Counter).Messages
		s.call("bash", fmt.Sprintf(`{"command":"run %d"}`, i), lines(50, "out %d"))
		grown += s.c.Tokens(s.m.cfg.Counter).Messages - before
		n++
		s.step()
	}
	if len(got) == 0 {
		t.Fatal("no batch offered")
	}
	b := got[len(got)-1]
	if want := 1 + (100_000-b.Total+b.Freed)*n/grown; b.Compaction != want {
		t.Errorf("Compaction = %d, want 1 + (100,000 − %d + %d)·%d/%d = %d", b.Compaction, b.Total, b.Freed, n, grown, want)
	}
}

// With a Clock, a cut no request read or anchored within CacheTTL has
// expired at the provider; the frontier is anchored by every request that
// holds it (Hold), which reads or writes its entry again, so it lives as
// long as it is held, however long ago the batch that set it — as the
// bench's cache bills it (an anchored prefix is refreshed by every request
// carrying the anchor). (Until 2026-11-26 the frontier expired CacheTTL
// after the batch: the next batch was priced as a rewrite from the system
// prompt and held no anchor before the change, so its request wrote the
// whole prompt again where the frontier's entry was there to read.)
func TestCutExpiry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		every   time.Duration // between requests after the clear
		fromCut int           // where T starts for the batch at the frontier
	}{
		{"fresh frontier", time.Minute, 6},
		{"frontier held past CacheTTL after its batch", 2 * time.Minute, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []Batch
			open := false
			now := time.Date(2026, 1, 5, 15, 0, 0, 0, time.UTC)
			pol := recorder{batches: &got, accept: func(Batch) bool { return open }}
			s := newSession(t, Config{Policy: pol, Keep: 1, MinCacheTokens: 1, Preserve: []string{}, Clock: func() time.Time { return now }})
			big := lines(60, "line %d of the output")
			for i := range 3 {
				now = now.Add(10 * time.Second)
				s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), big)
				s.step()
			}
			open = true // clears messages 2 and 4; frontier at 6
			now = now.Add(10 * time.Second)
			s.call("bash", `{"command":"step 3"}`, big)
			s.step()
			open = false
			// Three quiet requests: the result at message 6 crosses the
			// Keep boundary at the first of them.
			for i := range 3 {
				now = now.Add(tt.every)
				got = nil
				s.call("bash", fmt.Sprintf(`{"command":"quiet %d"}`, i), big)
				s.step()
			}
			if len(got) == 0 {
				t.Fatal("no batch offered")
			}
			prev := len(s.c.Messages) - 2 // the previous request's end
			if want := span(s, tt.fromCut, prev); got[0].Suffix != want {
				t.Errorf("T = %d, want %d (from cut %d)", got[0].Suffix, want, tt.fromCut)
			}
		})
	}
}

// A change another layer makes between Steps (the engine's rung 1 at a
// round's end) and reports with Changed is held like a batch of micro's
// own: the next request holds the deepest cut before it, the prefix
// Rewrite priced the change by, so that it reads it, and the frontier
// moves to the change. (Until 2026-11-26 the change was not reported:
// the request held nothing before it and wrote the prompt again from the
// system prompt, and micro's token tally of the message was stale.)
func TestChangedHolds(t *testing.T) {
	tests := []struct {
		name    string
		change  int   // the message changed in place between Steps
		rewrite int   // Rewrite's T for the change starts at this cut
		want    []int // the messages whose last block the next request holds
	}{
		{"after a request's end", 3, 3, []int{2, 5}},
		{"further back", 1, 1, []int{0, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, Config{Policy: recorder{batches: new([]Batch)}, Keep: 1, MinCacheTokens: 1, Preserve: []string{}})
			big := lines(60, "line %d of the output")
			for i := range 3 {
				s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), big)
				s.step()
			}
			// Requests of 1, 3, 5 and 7 messages: cuts 1, 3, 5, 7.
			if want := span(s, tt.rewrite, 7); s.m.Rewrite(s.c, tt.change) != want {
				t.Fatalf("Rewrite = %d, want %d (from cut %d)", s.m.Rewrite(s.c, tt.change), want, tt.rewrite)
			}
			// The assistant's text of that step, shortened in place.
			m := &s.c.Messages[tt.change]
			b := m.Blocks[0].Clone()
			b.SetText("Next.", b.Meta.Rung)
			m.Blocks[0] = b
			s.m.Changed(s.c, tt.change) // also brings the tally up to date (step checks it)
			s.call("bash", `{"command":"step 3"}`, big)
			s.step()
			var want []string
			for _, i := range tt.want {
				want = append(want, lastID(s, i))
			}
			if got := s.m.Hold(); !slices.Equal(got, want) {
				t.Errorf("Hold = %v, want %v (messages %v)", got, want, tt.want)
			}
		})
	}
}

// A batch counts the results of recall calls it holds (Batch.Recalled):
// the agent's "recall", or the tool Config.RecallTool names.
func TestBatchRecalled(t *testing.T) {
	tests := []struct {
		name, tool, recallTool string
		want                   int
	}{
		{"the agent's recall tool", "recall", "", 1},
		{"an MCP server's recall tool", "mcp__ctxkit__recall", "mcp__ctxkit__recall", 1},
		{"recall, when the model's recall tool is another", "recall", "mcp__ctxkit__recall", 0},
		{"another tool", "bash", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Batch
			pol := recorder{batches: &got}
			s := newSession(t, Config{Policy: pol, Keep: 1, MinCacheTokens: 1, RecallTool: tt.recallTool})
			s.call(tt.tool, `{"id":"b7"}`, lines(60, "recalled line %d"))
			s.step()
			for i := range 3 {
				s.call("bash", fmt.Sprintf(`{"command":"run %d"}`, i), lines(60, "out %d"))
				got = got[:0] // the batches of this request only
				s.step()
			}
			// Pending now: the recalled result and the two bash results
			// after it, offered as the batch from each on.
			if len(got) < 2 {
				t.Fatalf("%d batches offered at the last request, want one from the recalled result on and a later one: %+v", len(got), got)
			}
			if b := got[0]; b.Recalled != tt.want {
				t.Errorf("the batch from the oldest result on counts %d recalled results, want %d (%+v)", b.Recalled, tt.want, b)
			}
			if b := got[len(got)-1]; b.Recalled != 0 {
				t.Errorf("the batch of the newest result alone counts %d recalled results, want 0 (%+v)", b.Recalled, b)
			}
		})
	}
}

// A batch the policy would clear but for the session's savings (the
// engine's account, SetSaved) waits, and the step says why (Uncovered);
// given savings that cover it, it clears. A Clearer never given the
// account clears by the policy alone.
func TestUncovered(t *testing.T) {
	var got []Batch
	pol := recorder{batches: &got, accept: func(b Batch) bool { return !b.Accounted || b.Saved >= 1 }}
	for _, tt := range []struct {
		name      string
		saved     float64
		accounted bool
		cleared   bool
	}{
		{"no account", 0, false, true},
		{"nothing saved", 0, true, false},
		{"saved enough", 1, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, Config{Policy: pol, Keep: 1, Preserve: []string{}})
			if tt.accounted {
				s.m.SetSaved(tt.saved)
			}
			var res Result
			for i := range 4 {
				s.call("bash", fmt.Sprintf(`{"command":"run %d"}`, i), lines(50, "out %d"))
				res = addResults(res, s.step())
			}
			if cleared := res.Cleared > 0; cleared != tt.cleared {
				t.Fatalf("cleared %d results, want any: %v", res.Cleared, tt.cleared)
			}
			if res.Uncovered == tt.cleared {
				t.Errorf("Uncovered = %v with %d cleared and %d deferred", res.Uncovered, res.Cleared, res.Deferred)
			}
		})
	}
}

// addResults adds what a later step did to r, as the engine does.
func addResults(r, o Result) Result {
	r.Cleared += o.Cleared
	r.Deferred, r.Uncovered = o.Deferred, r.Uncovered || o.Uncovered
	return r
}
