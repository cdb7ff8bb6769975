package bench

import (
	"context"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
)

// TestRecordedVsSimulated: a recording whose usage is what the simulator
// bills shows no error; one whose recorded cache reads are half that
// shows +100% on reads.
func TestRecordedVsSimulated(t *testing.T) {
	rec := chain(4, 300)
	f, _ := Lookup("none")
	opts := Options{Window: 1 << 20, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: f}
	sessions := []Session{{Name: "dir/cc.jsonl", Conv: rec, Family: "claude-code"}}
	runs, err := Replay(context.Background(), sessions, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range runs[0].Turns {
		b := turn.Bill
		rec.Messages[turn.Msg].Usage = &conv.Usage{Input: b.Input, CacheRead: b.CacheRead / 2, CacheWrite: b.CacheWrite, Output: b.Output}
	}
	rep := NewReport(runs, sessions, opts)
	rc := rep.Recorded
	if rc == nil || rc.Responses != len(runs[0].Turns) {
		t.Fatalf("recorded = %+v, want every response compared", rc)
	}
	if rc.ErrorPct.Input != 0 || rc.ErrorPct.CacheWrite != 0 || rc.ErrorPct.Output != 0 {
		t.Errorf("errors %+v, want 0 for input, writes and output", rc.ErrorPct)
	}
	if rc.ErrorPct.CacheRead < 99 || rc.ErrorPct.CacheRead > 101 {
		t.Errorf("cache read error %v%%, want +100%%", rc.ErrorPct.CacheRead)
	}
	// A recorded compaction ends the comparison: responses after the
	// epoch starts are left out.
	rec.Epochs = []int{5}
	if got := NewReport(runs, sessions, opts).Recorded.Responses; got != 2 {
		t.Errorf("with an epoch at message 5, %d responses compared, want 2", got)
	}
}

// TestBreakdown: the families and length classes each get a group, every
// interval holds its point estimate, and none is exactly 1.
func TestBreakdown(t *testing.T) {
	var sessions []Session
	for i, fam := range []string{"a", "a", "b"} {
		sessions = append(sessions, Session{Name: string(rune('x' + i)), Conv: chain(3+2*i, 200), Family: fam})
	}
	f, _ := Lookup("none,mask-10,bound")
	opts := Options{Window: 3000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: f}
	runs, err := Replay(context.Background(), sessions, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(runs, sessions, opts)
	labels := make(map[string]int)
	for _, g := range rep.Families {
		labels[g.Label()] = g.Sessions
		for _, row := range g.Rows {
			ci := row.CI95.CostVsNone
			if row.CostVsNone < ci.Low-1e-9 || row.CostVsNone > ci.High+1e-9 {
				t.Errorf("%s %s: %v outside [%v, %v]", g.Label(), row.Name, row.CostVsNone, ci.Low, ci.High)
			}
			if row.Name == "none" && (ci.Low != 1 || ci.High != 1) {
				t.Errorf("none's interval [%v, %v], want [1, 1]", ci.Low, ci.High)
			}
		}
	}
	if labels["a"] != 2 || labels["b"] != 1 || labels["short"]+labels["long"] != 3 {
		t.Errorf("groups %v, want a:2 b:1 and the length classes covering all 3", labels)
	}
}
