package llm

import (
	"testing"
	"time"
)

func TestLookupModel(t *testing.T) {
	cases := []struct {
		name                 string
		window, out, minSize int
	}{
		{"claude-sonnet-4-5", 200_000, 64_000, 1_024},
		{"claude-sonnet-4-5-20250929", 200_000, 64_000, 1_024},
		{"claude-opus-4-5", 200_000, 64_000, 4_096},
		{"claude-opus-4-1-20250805", 200_000, 32_000, 1_024},
		{"claude-haiku-4-5", 200_000, 64_000, 4_096},
		{"claude-opus-5", 200_000, 64_000, 512},
		{"claude-future-9", 200_000, 64_000, 1_024},
		{"gpt-4o", 128_000, 16_384, 0},
		{"gpt-4o-mini", 128_000, 16_384, 0},
		{"gpt-4.1-mini", 1_047_576, 32_768, 0},
		{"gemini-2.5-pro", 1_048_576, 65_535, 0},
		{"gemini-3-pro-preview", 1_048_576, 65_535, 0},
		{"gemini-2.0-flash", 1_048_576, 8_192, 0},
		{"deepseek-chat", 128_000, 8_192, 0},
		{"qwen2.5-coder:7b", 128_000, 8_192, 0},
		{"", 128_000, 8_192, 0},
	}
	for _, tc := range cases {
		got := LookupModel(tc.name)
		if got.Name != tc.name || got.Window != tc.window || got.MaxOutput != tc.out || got.MinCacheable != tc.minSize {
			t.Errorf("LookupModel(%q) = %+v, want window %d, output %d, min cacheable %d", tc.name, got, tc.window, tc.out, tc.minSize)
		}
	}
}

func TestModelsOverride(t *testing.T) {
	ms := append(Models{
		{Name: "qwen3-coder", Window: 32_768, MaxOutput: 4_096},
		{Name: "claude-*", Window: 1_000_000, MaxOutput: 64_000},
		{Name: "*", Window: 8_192, MaxOutput: 1_024},
	}, DefaultModels()...)
	for name, want := range map[string]int{
		"qwen3-coder":       32_768,
		"qwen3-coder-next":  8_192, // the exact entry is not a prefix
		"claude-sonnet-4-5": 1_000_000,
		"claude-opus-4-5":   200_000, // a longer built-in prefix still wins
		"llama3":            8_192,
	} {
		if got := ms.Lookup(name).Window; got != want {
			t.Errorf("Lookup(%q).Window = %d, want %d", name, got, want)
		}
	}
	if got := (Models{}).Lookup("x"); got.Window != 128_000 {
		t.Errorf("an empty table answers %+v, want the built-in default", got)
	}
}

func TestRetryBackoff(t *testing.T) {
	r := Retry{Base: 100 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for range 20 {
			got := r.Backoff(n)
			if got > want || got < want*4/5 {
				t.Errorf("Backoff(%d) = %s, want within 20%% below %s", n, got, want)
			}
		}
	}
	d := Retry{}.WithDefaults()
	if d.Attempts != 6 || d.Base != time.Second || d.Max != 30*time.Second || d.MaxWait != 2*time.Minute {
		t.Errorf("defaults = %+v", d)
	}
	if got := (Retry{Attempts: 1}).WithDefaults().Attempts; got != 1 {
		t.Errorf("Attempts 1 became %d", got)
	}
}
