package compact

import "testing"

// KeepRecentTokens defaults to 2% of the window: seed 001's 20,000 for
// its 1,000,000-token example.
func TestKeepRecentTokensDefault(t *testing.T) {
	for _, tt := range []struct{ window, want int }{
		{1_000_000, 20_000},
		{200_000, 4_000},
		{64_000, 1_280},
		{0, 2_560}, // the default window, llm.DefaultWindow (128,000)
	} {
		if got := (Config{Window: tt.window}).withDefaults().KeepRecentTokens; got != tt.want {
			t.Errorf("window %d: KeepRecentTokens %d, want %d", tt.window, got, tt.want)
		}
	}
	if got := (Config{Window: 64_000, KeepRecentTokens: 9_000}).withDefaults().KeepRecentTokens; got != 9_000 {
		t.Errorf("a set KeepRecentTokens became %d", got)
	}
}
