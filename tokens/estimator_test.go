package tokens

import "testing"

func TestEstimatorEmpty(t *testing.T) {
	if got := NewEstimator().Count(""); got != 0 {
		t.Fatalf("Count(\"\") = %d, want 0", got)
	}
}
