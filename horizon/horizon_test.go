package horizon

import (
	"math"
	"testing"
)

func TestRequests(t *testing.T) {
	tests := []struct {
		n    int
		p    float64
		want float64
	}{
		{90, 0.9, 10},
		{90, 0, 10}, // default
		{30, 2.0 / 3, 15},
		{0, 0.9, 0},
		{-5, 0.9, 0},
	}
	for _, tt := range tests {
		got := Requests(tt.n, tt.p)
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Requests(%d, %v) = %v, want %v", tt.n, tt.p, got, tt.want)
		}
		// The Lindy prior: a session of n requests makes the horizon's
		// worth more with probability n/(n+x) ≥ P.
		if tt.n > 0 && tt.p > 0 && float64(tt.n)/(float64(tt.n)+got) < tt.p-1e-9 {
			t.Errorf("horizon %v of %d reached with probability below %v", got, tt.n, tt.p)
		}
	}
}

func TestCovered(t *testing.T) {
	tests := []struct {
		stake, saved float64
		want         bool
	}{
		{100, 0, false},    // nothing saved yet
		{100, 99.9, false}, // short
		{100, 100, true},   // covered
		{0, 0, true},       // the request carrying it pays for it
		{-5, -50, true},    // … even with the account below zero
		{10, -50, false},   // a stake with the account below zero
	}
	for _, tt := range tests {
		if got := Covered(tt.stake, tt.saved); got != tt.want {
			t.Errorf("Covered(%v, %v) = %v, want %v", tt.stake, tt.saved, got, tt.want)
		}
	}
}
