package micro

import (
	"errors"
	"math"
	"testing"

	"github.com/ctxkit/ctxkit/pricing"
)

// Hand-computed cases of the cache-aware rule (package doc). Prices in
// $/MTok; C = (T−F)·(w−r), H·F·r, rent = (W+F)·r.
func TestCacheAwareDecide(t *testing.T) {
	anthropic := pricing.Anthropic() // w 3.75, r 0.30: w−r = 3.45
	openai := pricing.OpenAI()       // w 1.25, r 0.125: w−r = 1.125
	tests := []struct {
		name  string
		table pricing.Table
		b     Batch
		want  Decision
	}{
		{
			// The package doc's worked case, first request of the batch:
			// H = 30/9 = 3, H·F·r = 7,200 < C: it does not pay back
			// within the horizon, so it is kept whatever the rent.
			name: "doc case, fresh", table: anthropic,
			b:    Batch{Freed: 8000, Suffix: 20000, Requests: 30},
			want: Decision{Horizon: 3, Rewrite: 41400, PerTurn: 2400, Predicted: 7200, Rent: 2400, Threshold: 20700, Clear: false},
		},
		{
			// At request 64, held since 30: the rent (272,000+8,000)·0.3 =
			// 84,000 is twice C, but H = 64/9 = 7 and H·F·r = 16,800 < C:
			// sending everything pays the same rent, so clearing now
			// would only add C (do no harm). Kept.
			name: "doc case, long held: rent buys nothing back", table: anthropic,
			b:    Batch{Freed: 8000, Suffix: 20000, Waited: 272000, Requests: 64},
			want: Decision{Horizon: 7, Rewrite: 41400, PerTurn: 2400, Predicted: 16800, Rent: 84000, Threshold: 20700, Clear: false},
		},
		{
			// At request 156 the horizon reaches C/(F·r) = 17.25:
			// H = 156/9 = 17, still short.
			name: "doc case, at request 156", table: anthropic,
			b:    Batch{Freed: 8000, Suffix: 20000, Waited: 272000, Requests: 156},
			want: Decision{Horizon: 17, Rewrite: 41400, PerTurn: 2400, Predicted: 40800, Rent: 84000, Threshold: 20700, Clear: false},
		},
		{
			// At request 162, H = 18: H·F·r = 43,200 ≥ C and the rent is
			// past λ·C: cleared.
			name: "doc case, at request 162", table: anthropic,
			b:    Batch{Freed: 8000, Suffix: 20000, Waited: 272000, Requests: 162},
			want: Decision{Horizon: 18, Rewrite: 41400, PerTurn: 2400, Predicted: 43200, Rent: 84000, Threshold: 20700, Clear: true},
		},
		{
			// The knob's round trip (keep 1: the request read once more,
			// 50,000·0.3 = 15,000) is the whole price when the batch frees
			// all it rewrites: paid within the horizon, cleared.
			name: "a round trip, paid", table: anthropic,
			b:    Batch{Freed: 8000, Suffix: 8000, Waited: 100000, Requests: 200, Total: 50000},
			want: Decision{Horizon: 22, Rewrite: 15000, PerTurn: 2400, Predicted: 52800, Rent: 32400, Threshold: 7500, Clear: true},
		},
		{
			// The same batch holding four results of recall calls: each
			// costs a round trip of its own, 4·15,000 = 60,000 > 52,800:
			// kept.
			name: "recalled results, a round trip each", table: anthropic,
			b:    Batch{Freed: 8000, Suffix: 8000, Waited: 100000, Requests: 200, Total: 50000, Recalled: 4},
			want: Decision{Horizon: 22, Rewrite: 60000, PerTurn: 2400, Predicted: 52800, Rent: 32400, Threshold: 30000, Clear: false},
		},
		{
			// Pays within the horizon but the rent is short of λ·C: wait,
			// in case the prediction is wrong. 200 requests: H = 22,
			// F 2,000, T 4,000: C = 6,900, λ·C = 3,450; rent 2,000·0.3 = 600.
			name: "pays, rent short: wait", table: anthropic,
			b:    Batch{Freed: 2000, Suffix: 4000, Requests: 200},
			want: Decision{Horizon: 22, Rewrite: 6900, PerTurn: 600, Predicted: 13200, Rent: 600, Threshold: 3450, Clear: false},
		},
		{
			// Short session: n clamps to 10, H = 1; H·F·r = 300 < C.
			// F 1,000, T 11,000: C = 10,000·3.45 = 34,500.
			name: "short horizon keeps", table: anthropic,
			b:    Batch{Freed: 1000, Suffix: 11000, Waited: 100000, Requests: 3},
			want: Decision{Horizon: 1, Rewrite: 34500, PerTurn: 300, Predicted: 300, Rent: 30300, Threshold: 17250, Clear: false},
		},
		{
			// n clamps at 200: H = 22; 22·600 = 13,200 < C.
			name: "long session", table: anthropic,
			b:    Batch{Freed: 2000, Suffix: 12000, Waited: 20000, Requests: 900},
			want: Decision{Horizon: 22, Rewrite: 34500, PerTurn: 600, Predicted: 13200, Rent: 6600, Threshold: 17250, Clear: false},
		},
		{
			// The batch is all there is after its first block: nothing to
			// rewrite, clear at once.
			name: "nothing to rewrite", table: anthropic,
			b:    Batch{Freed: 5000, Suffix: 5000, Requests: 4},
			want: Decision{Horizon: 1, Rewrite: 0, PerTurn: 1500, Predicted: 1500, Rent: 1500, Threshold: 0, Clear: true},
		},
		{
			// Not in the cached prefix at all (T = 0): this request
			// writes it anyway, so clearing saves F·(w−r) = 1,035 now.
			name: "past the cached prefix", table: anthropic,
			b:    Batch{Freed: 300, Suffix: 0, Requests: 12},
			want: Decision{Horizon: 1, Rewrite: -1035, PerTurn: 90, Predicted: 90, Rent: 90, Threshold: -517.5, Clear: true},
		},
		{
			// A cold cache (T = 0) and a request of 20,000 tokens: one
			// recall round trip, 6,000, against F·(w−r) + H·F·r =
			// 2,000·3.45 + 600 = 7,500 saved: cleared.
			name: "cold cache pays the round trip", table: anthropic,
			b:    Batch{Freed: 2000, Suffix: 0, Total: 20000, Requests: 12},
			want: Decision{Horizon: 1, Rewrite: -900, PerTurn: 600, Predicted: 600, Rent: 600, Threshold: -450, Clear: true},
		},
		{
			// The same on a 40,000-token request: the round trip (12,000)
			// is more than it saves. Kept.
			name: "cold cache, a round trip too dear", table: anthropic,
			b:    Batch{Freed: 2000, Suffix: 0, Total: 40000, Requests: 12},
			want: Decision{Horizon: 1, Rewrite: 5100, PerTurn: 600, Predicted: 600, Rent: 600, Threshold: 2550, Clear: false},
		},
		{
			// Compaction foreseen in 12 requests caps H at 12 (of 200/9 = 22):
			// F 2,000, T 4,000: C = 2,000·3.45 = 6,900; H·F·r =
			// 12·600 = 7,200 ≥ C, so λ·C = 3,450; rent (10,000+2,000)·0.3
			// = 3,600 clears.
			name: "compaction caps the horizon", table: anthropic,
			b:    Batch{Freed: 2000, Suffix: 4000, Waited: 10000, Requests: 200, Compaction: 12},
			want: Decision{Horizon: 12, Rewrite: 6900, PerTurn: 600, Predicted: 7200, Rent: 3600, Threshold: 3450, Clear: true},
		},
		{
			// Compaction in 5: H·F·r = 3,000 < C, so the same rent keeps.
			name: "compaction soon: keep", table: anthropic,
			b:    Batch{Freed: 2000, Suffix: 4000, Waited: 10000, Requests: 200, Compaction: 5},
			want: Decision{Horizon: 5, Rewrite: 6900, PerTurn: 600, Predicted: 3000, Rent: 3600, Threshold: 3450, Clear: false},
		},
		{
			// OpenAI: no write surcharge, w−r = 1.125. F 20,000, T 40,000:
			// C = 22,500; H = 200/9 = 22, H·F·r = 55,000 ≥ C; λ·C = 11,250;
			// rent (W 80,000 + F)·0.125 = 12,500.
			name: "openai clears after its rent", table: openai,
			b:    Batch{Freed: 20000, Suffix: 40000, Waited: 80000, Requests: 200},
			want: Decision{Horizon: 22, Rewrite: 22500, PerTurn: 2500, Predicted: 55000, Rent: 12500, Threshold: 11250, Clear: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CacheAware{Pricing: tt.table}.Decide(tt.b)
			if !near(got, tt.want) {
				t.Errorf("Decide(%+v)\n got %+v\nwant %+v", tt.b, got, tt.want)
			}
			if c := (CacheAware{Pricing: tt.table}).Clear(tt.b); c != tt.want.Clear {
				t.Errorf("Clear = %v, want %v", c, tt.want.Clear)
			}
		})
	}
}

func near(a, b Decision) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-6*math.Max(1, math.Abs(y)) }
	return a.Horizon == b.Horizon && eq(a.Rewrite, b.Rewrite) && eq(a.PerTurn, b.PerTurn) &&
		eq(a.Predicted, b.Predicted) && eq(a.Rent, b.Rent) && eq(a.Threshold, b.Threshold) && a.Clear == b.Clear
}

func TestTrust(t *testing.T) {
	// rent 19,200, C 41,400; 200 requests: the horizon covers C at both λ.
	b := Batch{Freed: 8000, Suffix: 20000, Waited: 56000, Requests: 200}
	if d := (CacheAware{Pricing: pricing.Anthropic(), Trust: 1}).Decide(b); d.Threshold != 41400 || d.Clear {
		t.Errorf("λ=1: %+v, want threshold C and keep", d)
	}
	if d := (CacheAware{Pricing: pricing.Anthropic(), Trust: 0.25}).Decide(b); d.Threshold != 10350 || !d.Clear {
		t.Errorf("λ=0.25: %+v, want threshold C/4 and clear", d)
	}
}

func TestPolicies(t *testing.T) {
	hold := Batch{Freed: 8000, Suffix: 200000, Requests: 5} // a rewrite no policy with a cache pays now
	near := hold
	near.Near = true
	tests := []struct {
		p          Policy
		b          Batch
		want       bool
		desc, name string
	}{
		{Eager{}, hold, true, "eager clears whatever it costs", "eager"},
		{Eager{}, Batch{}, false, "eager has nothing to clear", "eager"},
		{Batched{}, hold, false, "batched waits below 10,000", "batched"},
		{Batched{}, Batch{Freed: 10000}, true, "batched clears at 10,000", "batched"},
		{Batched{AtLeast: 5000}, hold, true, "batched with a lower minimum", "batched"},
		{Batched{}, near, true, "batched clears near the window", "batched"},
		{CacheAware{Pricing: pricing.Anthropic()}, hold, false, "cache-aware waits", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic()}, near, true, "cache-aware clears near the window", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache()}, Batch{Freed: 8000, Total: 20000, Requests: 30}, true, "cache-aware without a cache clears what saves a round trip within the horizon", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache()}, Batch{Freed: 800, Total: 20000, Requests: 30}, false, "…and keeps what does not (do no harm)", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache()}, Batch{}, false, "…but not on nothing", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache(), KeepValue: 2}, Batch{Freed: 8000, Total: 20000, Requests: 30}, false, "at keep value 2 the same batch must save two round trips: kept", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache(), KeepValue: 2}, Batch{Freed: 16000, Total: 20000, Requests: 30}, true, "…and twice the batch is cleared", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache(), KeepValue: 2}, Batch{Freed: 800, Total: 20000, Requests: 30, Near: true}, true, "…and anything near the window", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic(), KeepValue: 4}, Batch{Freed: 20000, Suffix: 20000, Waited: 100000, Total: 100000, Requests: 1000}, false, "with a cache, keep value 4: the rent does not cover four round trips", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic(), KeepValue: -1}, Batch{Freed: 20000, Suffix: 20000, Waited: 100000, Total: 100000, Requests: 1000}, true, "…which weighing dollars alone clears", "cache-aware"},
		// The session's account (Accounted): the doc case at request 162
		// clears by the rule, but stakes (20,000−8,000)·3.45 less the
		// 8,000·0.3 the request carrying it saves: 39,000.
		{CacheAware{Pricing: pricing.Anthropic()}, Batch{Freed: 8000, Suffix: 20000, Waited: 272000, Requests: 162, Accounted: true}, false, "the account: nothing saved yet, the stake waits", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic()}, Batch{Freed: 8000, Suffix: 20000, Waited: 272000, Requests: 162, Accounted: true, Saved: 38999}, false, "…a dollar-millionth short, it still waits", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic()}, Batch{Freed: 8000, Suffix: 20000, Waited: 272000, Requests: 162, Accounted: true, Saved: 39000}, true, "…covered, it clears", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic()}, Batch{Freed: 8000, Suffix: 20000, Requests: 5, Accounted: true, Near: true}, true, "…near the window it clears whatever it stakes", "cache-aware"},
		{CacheAware{Pricing: pricing.Anthropic()}, Batch{Freed: 8000, Suffix: 8500, Waited: 100000, Total: 20000, Requests: 200, Accounted: true}, true, "…and a batch the request carrying it pays back stakes nothing", "cache-aware"},
		{CacheAware{Pricing: pricing.NoCache()}, Batch{Freed: 8000, Total: 20000, Requests: 30, Accounted: true}, true, "…without a cache there is no rewrite to stake", "cache-aware"},
	}
	for _, tt := range tests {
		if got := tt.p.Clear(tt.b); got != tt.want {
			t.Errorf("%s: Clear = %v, want %v", tt.desc, got, tt.want)
		}
		if tt.p.Name() != tt.name {
			t.Errorf("%s: Name = %q", tt.desc, tt.p.Name())
		}
	}
}

func TestByName(t *testing.T) {
	for _, name := range []string{"eager", "batched", "cache-aware"} {
		p, err := ByName(name, pricing.Anthropic())
		if err != nil || p.Name() != name {
			t.Errorf("ByName(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := ByName("lru", pricing.Anthropic()); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("ByName(lru) error = %v, want ErrUnknownPolicy", err)
	}
}

// TestRecallTrips: what the knob asks a step that takes tokens out of view
// to save besides its rewrite.
func TestStake(t *testing.T) {
	tests := []struct {
		name          string
		table         pricing.Table
		suffix, freed int
		want          float64
	}{
		// (20,000−8,000)·3.45 − 8,000·0.3
		{"the doc case", pricing.Anthropic(), 20000, 8000, 39000},
		// 500·3.45 − 8,000·0.3: the request carrying it pays it back
		{"a batch at the end", pricing.Anthropic(), 8500, 8000, -675},
		// (40,000−20,000)·1.125 − 20,000·0.125
		{"openai", pricing.OpenAI(), 40000, 20000, 20000},
		{"no cache, no rewrite", pricing.NoCache(), 20000, 8000, 0},
	}
	for _, tt := range tests {
		if got := Stake(tt.table, tt.suffix, tt.freed); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Stake = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRecallTrips(t *testing.T) {
	for _, tt := range []struct {
		keep              float64
		request, recalled int
		want              float64
	}{
		{0, 1000, 0, 0}, {-1, 1000, 0, 0}, {1, 1000, 0, 1000}, {2.5, 1000, 0, 2500}, {0.5, 1000, 0, 500},
		// Each recalled result the step takes out costs a trip of its
		// own; one of them is the trip the knob asks anyway.
		{1, 1000, 1, 1000}, {1, 1000, 3, 3000}, {0.5, 1000, 2, 1000}, {0, 1000, 2, 0}, {1, 1000, -1, 1000},
	} {
		if got := RecallTrips(tt.keep, tt.request, tt.recalled); got != tt.want {
			t.Errorf("RecallTrips(%v, %d, %d) = %v, want %v", tt.keep, tt.request, tt.recalled, got, tt.want)
		}
	}
}
