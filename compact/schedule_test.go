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
		{"no prices: only the thresholds", pricing.Table{}, 1000, false},
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
			if s.Due > cp.budget.Soft {
				t.Errorf("due at %d, after the soft threshold %d", s.Due, cp.budget.Soft)
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
