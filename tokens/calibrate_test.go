package tokens

import (
	"math"
	"sync"
	"testing"
)

func TestCalibrator(t *testing.T) {
	type obs struct{ actual, estimate int }
	tests := []struct {
		name      string
		cfg       CalibratorConfig
		obs       []obs
		wantRatio float64
		// Estimate(last, add) == want
		last, add, want int
	}{
		{name: "no observations", wantRatio: 1, last: 5000, add: 100, want: 5100},
		{name: "first observation sets the ratio", obs: []obs{{1200, 1000}}, wantRatio: 1.2, last: 5000, add: 100, want: 5120},
		// 1.2 + 0.3*(1.3-1.2) = 1.23; ceil(1.23*100) = 123
		{name: "later ones are smoothed", obs: []obs{{1200, 1000}, {1300, 1000}}, wantRatio: 1.23, last: 5000, add: 100, want: 5123},
		// 1.23 + 0.3*(1.1-1.23) = 1.191; ceil(1.191*7) = ceil(8.337) = 9
		{name: "three observations", obs: []obs{{1200, 1000}, {1300, 1000}, {1100, 1000}}, wantRatio: 1.191, last: 10, add: 7, want: 19},
		{name: "below the floor is clamped to 1", obs: []obs{{500, 1000}}, wantRatio: 1, last: 0, add: 1000, want: 1000},
		{name: "above the ceiling is clamped to 3", obs: []obs{{10000, 1000}}, wantRatio: 3, last: 0, add: 10, want: 30},
		{name: "a lower floor when asked", cfg: CalibratorConfig{Min: 0.5}, obs: []obs{{800, 1000}}, wantRatio: 0.8, last: 100, add: 10, want: 108},
		{name: "empty observations are ignored", obs: []obs{{0, 1000}, {1000, 0}, {-5, 10}}, wantRatio: 1, last: 1, add: 1, want: 2},
		{name: "custom weight and initial", cfg: CalibratorConfig{Initial: 1.5, Weight: 0.5}, obs: nil, wantRatio: 1.5, last: 0, add: 3, want: 5},
		// first sets 2.0, then 2.0 + 0.5*(1.0-2.0) = 1.5
		{name: "custom weight", cfg: CalibratorConfig{Weight: 0.5}, obs: []obs{{2000, 1000}, {1000, 1000}}, wantRatio: 1.5, last: 0, add: 2, want: 3},
		{name: "negative last usage counts as none", last: -10, add: 4, wantRatio: 1, want: 4},
		{name: "nothing new", obs: []obs{{1500, 1000}}, wantRatio: 1.5, last: 700, add: 0, want: 700},
		{name: "initial outside the bounds is clamped", cfg: CalibratorConfig{Initial: 9}, wantRatio: 3, last: 0, add: 1, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCalibrator(tt.cfg)
			for _, o := range tt.obs {
				c.Observe(o.actual, o.estimate)
			}
			if got := c.Ratio(); math.Abs(got-tt.wantRatio) > 1e-9 {
				t.Errorf("Ratio() = %v, want %v", got, tt.wantRatio)
			}
			if got := c.Estimate(tt.last, tt.add); got != tt.want {
				t.Errorf("Estimate(%d, %d) = %d, want %d", tt.last, tt.add, got, tt.want)
			}
		})
	}
}

func TestPromptTokens(t *testing.T) {
	if got := PromptTokens(120, 3000, 45000); got != 48120 {
		t.Errorf("PromptTokens = %d, want 48120", got)
	}
	if got := PromptTokens(-1, 0, 5); got != 5 {
		t.Errorf("PromptTokens with a negative part = %d, want 5", got)
	}
}

func TestCalibratorsPerModel(t *testing.T) {
	cs := NewCalibrators(CalibratorConfig{})
	a, b := cs.For("claude-sonnet-4-5"), cs.For("gpt-4.1")
	if cs.For("claude-sonnet-4-5") != a {
		t.Fatal("For returned a new calibrator for a known model")
	}
	a.Observe(1300, 1000)
	if a.Ratio() != 1.3 || b.Ratio() != 1 {
		t.Errorf("ratios = %v, %v; want 1.3, 1 (models are independent)", a.Ratio(), b.Ratio())
	}
}

// TestCalibratorConcurrent runs observers and readers at once; run with
// -race.
func TestCalibratorConcurrent(t *testing.T) {
	cs := NewCalibrators(CalibratorConfig{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			c := cs.For([]string{"a", "b"}[g%2])
			for i := range 200 {
				c.Observe(1000+i, 1000)
				if got := c.Estimate(100, 10); got < 110 || got > 130 {
					t.Errorf("Estimate = %d, want within [110, 130]", got)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, m := range []string{"a", "b"} {
		if n := cs.For(m).Observations(); n != 800 {
			t.Errorf("%s: %d observations, want 800", m, n)
		}
	}
}
