package pricing

import "testing"

// TestPrices: what reading, writing and writing again a token of the
// prompt cost, with a prompt cache and without one.
func TestPrices(t *testing.T) {
	tests := []struct {
		name                 string
		table                Table
		read, write, rewrite float64
	}{
		{"anthropic", Anthropic(), 0.30, 3.75, 3.45},
		{"no cache", NoCache(), 3, 3, 0},
	}
	for _, tt := range tests {
		if got := tt.table.ReadPrice(); got != tt.read {
			t.Errorf("%s: ReadPrice %v, want %v", tt.name, got, tt.read)
		}
		if got := tt.table.WritePrice(); got != tt.write {
			t.Errorf("%s: WritePrice %v, want %v", tt.name, got, tt.write)
		}
		if got := tt.table.RewritePrice(); got < tt.rewrite-1e-12 || got > tt.rewrite+1e-12 {
			t.Errorf("%s: RewritePrice %v, want %v", tt.name, got, tt.rewrite)
		}
	}
}
