package compact

import (
	"math"
	"testing"

	"github.com/ctxkit/ctxkit/pricing"
)

func TestSchedule(t *testing.T) {
	c := session(8, 2, 400)
	withRequest(c, "go on")
	tests := []struct {
		name     string
		prices   pricing.Table
		requests int
		early    bool
	}{
		{"no prices: due at the soft threshold", pricing.Table{}, 1000, true},
		{"cache, long session", pricing.Anthropic(), 1000, true},
		{"cache, short session", pricing.Anthropic(), 4, false},
		{"no cache, long session", pricing.NoCache(), 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Window: 200_000, MaxOutput: 8_000, Pricing: tt.prices}
			cp := New(nil, cfg)
			cp.requests = tt.requests
			usage := cp.estimate(c)
			s := cp.schedule(c, usage)
			if s.Due > cp.budget.Hard {
				t.Errorf("due at %d, after the hard threshold %d", s.Due, cp.budget.Hard)
			}
			if tt.prices == (pricing.Table{}) {
				if s.Due != cp.budget.Soft {
					t.Errorf("without prices due at %d, want the soft threshold %d", s.Due, cp.budget.Soft)
				}
			} else {
				carry := tt.prices.CacheRead
				if !tt.prices.Caches() {
					carry = tt.prices.Input
				}
				if want := int(math.Sqrt(2 * s.Growth * s.Once / carry)); s.Cycle != want {
					t.Errorf("cycle %d, want √(2gA/c) = %d", s.Cycle, want)
				}
				if s.Kept <= 0 || s.Kept > usage {
					t.Errorf("kept %d of %d", s.Kept, usage)
				}
			}
			// The early rule, at a context past the due point.
			if got := cp.early(c, max(usage, s.Due)); got != tt.early {
				t.Errorf("early = %v, want %v (%+v)", got, tt.early, s)
			}
		})
	}
}

// TestFloor: the floor a compaction leaves falls with the growth and the
// prices of keeping it, rises with the knob and the window; at the
// default knob (a token in view worth what reading it costs) it is
// nothing beyond what must be kept, and at twice that it is the
// square-root rule with the compaction priced at the whole soft
// threshold.
func TestFloor(t *testing.T) {
	a, nc := pricing.Anthropic(), pricing.NoCache()
	if got := Floor(pricing.Table{}, 30_000, 1000, 1); got != 30_000 {
		t.Errorf("no prices: floor %d, want the soft threshold", got)
	}
	if got := Floor(a, 30_000, 0, 1); got != 30_000 {
		t.Errorf("no growth: floor %d, want the soft threshold", got)
	}
	for _, v := range []float64{-1, 0.5, DefaultKeepValue} {
		if got := Floor(a, 120_000, 1000, v); got != 0 {
			t.Errorf("knob %v: floor %d, want 0 (keep only what must be kept)", v, got)
		}
	}
	soft, g := 120_000, 1000.0
	k := a.CacheWrite*summaryInstrTokens + a.Output*summaryOutputTokens
	want := soft - int(math.Sqrt(2*g*(a.CacheWrite*float64(soft)+k)/a.CacheRead))
	if got := Floor(a, soft, g, 2); got != want {
		t.Errorf("knob 2: floor %d, want T − √(2g·A(T)/c) = %d", got, want)
	}
	for _, tt := range []struct {
		name   string
		lo, hi int
	}{
		{"faster growth keeps less", Floor(a, soft, 4000, 4), Floor(a, soft, 1000, 4)},
		{"a higher knob keeps more", Floor(a, soft, g, 2), Floor(a, soft, g, 4)},
		{"a larger window keeps more", Floor(a, 25_000, g, 4), Floor(a, soft, g, 4)},
		{"without a cache the floor costs less to write again", Floor(a, 25_000, g, 4), Floor(nc, 25_000, g, 4)},
	} {
		if !(tt.lo < tt.hi) {
			t.Errorf("%s: %d, not below %d", tt.name, tt.lo, tt.hi)
		}
	}
}

// TestFloorSizesSummaries: the summaries a compaction carries are part of
// its floor: with prices and growth, the budget they may take before a
// merge shrinks with the floor (to two of the smallest summaries when the
// knob keeps only what must be kept) and never exceeds the configured
// share of the target; without prices it is that share. A new summary
// aims within that budget.
func TestFloorSizesSummaries(t *testing.T) {
	c := session(40, 2, 400)
	withRequest(c, "go on")
	for _, tt := range []struct {
		name   string
		prices pricing.Table
		keep   float64
		want   func(cp *Ladder) bool
	}{
		{"no prices: the configured share", pricing.Table{}, 1, func(cp *Ladder) bool { return cp.summaryBudget() == cp.configuredSummaryBudget() }},
		{"the default knob: the least", pricing.Anthropic(), DefaultKeepValue, func(cp *Ladder) bool { return cp.summaryBudget() == 2*cp.cfg.SummaryMin }},
		{"knob 4: at most the configured share", pricing.Anthropic(), 4, func(cp *Ladder) bool {
			return cp.summaryBudget() <= cp.configuredSummaryBudget() && cp.summaryBudget() > 2*cp.cfg.SummaryMin
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cp := New(nil, Config{Window: 64_000, Pricing: tt.prices, KeepValue: tt.keep})
			cp.requests = 100
			cp.sizeFloor(c, cp.estimate(c))
			if !tt.want(cp) {
				t.Errorf("summary budget %d (configured %d, least %d)", cp.summaryBudget(), cp.configuredSummaryBudget(), 2*cp.cfg.SummaryMin)
			}
			// A new summary aims within the budget: a fifth of a large
			// region would be SummaryMax.
			region := 100 * cp.cfg.SummaryMax
			want := cp.cfg.SummaryMax
			if cp.keep.sized {
				want = min(want, cp.summaryBudget())
			}
			if got := cp.target(region); got != want {
				t.Errorf("target for a region of %d: %d, want %d (budget %d)", region, got, want, cp.summaryBudget())
			}
		})
	}
}

// TestScheduleMeasured: once a compaction has run, the schedule prices the
// next by what the last one left and wrote, when that is more than the
// estimate of a single new summary (carried summaries, merges, the recall
// index).
func TestScheduleMeasured(t *testing.T) {
	c := session(8, 2, 400)
	withRequest(c, "go on")
	cp := New(nil, Config{Window: 200_000, Pricing: pricing.Anthropic()})
	cp.requests = 1000
	usage := cp.estimate(c)
	before := cp.schedule(c, usage)
	cp.keptAfter, cp.wrote, cp.sinceAuto = usage-10, 6_000, 10
	after := cp.schedule(c, usage)
	if after.Kept != usage-10 || after.Kept <= before.Kept {
		t.Errorf("kept %d after a compaction that left %d (estimate %d)", after.Kept, usage-10, before.Kept)
	}
	if after.Once <= before.Once {
		t.Errorf("one compaction %v, not above %v with the larger summary and floor", after.Once, before.Once)
	}
}

// TestCost: a compaction's cost is the schedule's price of one (Once,
// with the context at what it keeps) plus the summary call's read of the
// rest, and what the payback divides.
func TestCost(t *testing.T) {
	for _, p := range []pricing.Table{pricing.Anthropic(), pricing.NoCache(), pricing.OpenAI()} {
		s := Plan(p, 150_000, 20_000, 1000, 500, 3_000)
		if got := Cost(p, 20_000, 20_000, 3_000); math.Abs(got-s.Once) > 1e-9 {
			t.Errorf("%s: Cost at the kept size %v, Once %v", p.Name, got, s.Once)
		}
		carry := p.CacheRead
		if !p.Caches() {
			carry = p.Input
		}
		want := (s.Once + carry*float64(s.Due-s.Kept)) / (carry * float64(s.Due-s.Kept))
		if s.Payback != min(want, s.Payback) || math.Abs(Cost(p, s.Due, s.Kept, 3_000)/(carry*float64(s.Due-s.Kept))-want) > 1e-9 {
			t.Errorf("%s: payback %v, want at most %v", p.Name, s.Payback, want)
		}
		if Cost(p, 20_000, 20_000, 0) != Cost(p, 20_000, 20_000, summaryOutputTokens) {
			t.Errorf("%s: a summary below the floor is priced at the floor", p.Name)
		}
	}
}

// TestEarlyStakesSaved: given the session's account, an early compaction
// is taken only when what it costs at once, less what the request after
// it reads less, is covered by what the session has saved; a ladder never
// given the account compacts by the schedule alone.
func TestEarlyStakesSaved(t *testing.T) {
	c := session(8, 2, 400)
	withRequest(c, "go on")
	for _, p := range []pricing.Table{pricing.Anthropic(), pricing.NoCache()} {
		cp := New(nil, Config{Window: 200_000, MaxOutput: 8_000, Pricing: p})
		cp.requests = 1000
		usage := cp.estimate(c)
		s := cp.schedule(c, usage)
		at := max(usage, s.Due)
		stake := Cost(p, at, s.Kept, s.Summary) - p.ReadPrice()*float64(at-s.Kept)
		if stake <= 0 {
			t.Fatalf("%s: stake %v, want a compaction that costs at once", p.Name, stake)
		}
		tests := []struct {
			name  string
			set   bool
			saved float64
			want  bool
		}{
			{"no account", false, 0, true},
			{"nothing saved", true, 0, false},
			{"short of the stake", true, stake * 0.999, false},
			{"the stake covered", true, stake, true},
		}
		for _, tt := range tests {
			cp.accounted, cp.saved = false, 0
			if tt.set {
				cp.SetSaved(tt.saved)
			}
			if got := cp.early(c, at); got != tt.want {
				t.Errorf("%s, %s: early = %v, want %v", p.Name, tt.name, got, tt.want)
			}
		}
	}
}
