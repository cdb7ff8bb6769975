package textfmt

import "testing"

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 summaries"}, {1, "1 summary"}, {2, "2 summaries"}} {
		if got := Count(tt.n, "summary", "summaries"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"clip short", Clip("abc", 3), "abc"},
		{"clip long", Clip("abcdef", 4), "abc…"},
		{"clip runes", Clip("缓存设计说明", 3), "缓存…"},
		{"prefix", Prefix("abcdef", 4), "abcd"},
		{"prefix short", Prefix("ab", 4), "ab"},
		{"middle short", ClipMiddle("abc", 5), "abc"},
		{"middle", ClipMiddle("abcdefghijklmnop", 6), "abcd […10 chars…] op"},
		{"first line", FirstLine("  go test\n./...\n"), "go test"},
		{"one line", OneLine(" a\n\tb  c "), "a b c"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
