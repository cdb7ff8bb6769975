package engine_test

import (
	"errors"
	"math"
	"testing"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/micro"
)

// TestKeepValue checks the knob as every caller hands it to the engine: a
// finite number is taken (0 is the default, and the clearing policy gets
// the same value), anything else is a config error that says so.
func TestKeepValue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       float64
		compact float64
		want    float64
		err     error
	}{
		{name: "default", v: 0, want: compact.DefaultKeepValue},
		{name: "set", v: 4, want: 4},
		{name: "below a half", v: 0.25, want: 0.25},
		{name: "dollars alone", v: -1, want: -1},
		{name: "through compact", compact: 2, want: 2},
		{name: "both the same", v: 2, compact: 2, want: 2},
		{name: "both differ", v: 2, compact: 3, err: engine.ErrConfig},
		{name: "NaN", v: math.NaN(), err: engine.ErrKeepValue},
		{name: "infinite", v: math.Inf(1), err: engine.ErrKeepValue},
		{name: "minus infinite", v: math.Inf(-1), err: engine.ErrKeepValue},
		{name: "NaN through compact", compact: math.NaN(), err: engine.ErrKeepValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.Config{Keeper: engine.NewMemoryKeeper(), KeepValue: tc.v, Compact: compact.Config{KeepValue: tc.compact}}
			got, err := cfg.Defaults()
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !errors.Is(err, engine.ErrConfig) {
					t.Fatalf("Defaults() error %v, want %v (and ErrConfig)", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.KeepValue != tc.want {
				t.Errorf("KeepValue %v, want %v", got.KeepValue, tc.want)
			}
			if p, ok := got.Policy.(micro.CacheAware); !ok || p.KeepValue != tc.want {
				t.Errorf("policy %#v: clearing does not weigh the same knob %v", got.Policy, tc.want)
			}
			if err := engine.CheckKeepValue(tc.v); err != nil {
				t.Errorf("CheckKeepValue(%v) = %v", tc.v, err)
			}
		})
	}
}

// TestGuardDefault: the oversize guard's limit is the engine's default for
// every caller (micro.Guard): 25,000 tokens, and a quarter of a window
// under 100,000, so that one result never takes more than a quarter of the
// context, in the agent as in the proxy.
func TestGuardDefault(t *testing.T) {
	for _, tc := range []struct{ window, want int }{
		{200_000, 25_000}, {100_000, 25_000}, {64_000, 16_000}, {16_000, 4_000},
	} {
		cfg, err := engine.Config{Keeper: engine.NewMemoryKeeper(), Window: tc.window}.Defaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Micro.GuardTokens; got != tc.want || got != micro.Guard(tc.window) {
			t.Errorf("window %d: guard %d, want %d", tc.window, got, tc.want)
		}
	}
	cfg, err := engine.Config{Keeper: engine.NewMemoryKeeper(), Window: 64_000, Micro: micro.Config{GuardTokens: -1}}.Defaults()
	if err != nil || cfg.Micro.GuardTokens != -1 {
		t.Errorf("a guard turned off: %d, %v", cfg.Micro.GuardTokens, err)
	}
}
