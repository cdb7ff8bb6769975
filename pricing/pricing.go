// Package pricing holds what a provider charges per million tokens and the
// arithmetic that turns usage into dollars, for the cache-aware clearing
// policy and the replay benchmark.
package pricing

// Table is a provider's price list in US dollars per million tokens.
type Table struct {
	Name       string  `json:"name"`
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"` // 0 with CacheRead 0: no prompt caching
	CacheRead  float64 `json:"cache_read"`
	// Automatic is true when the provider caches the longest common prefix
	// by itself (OpenAI-style) instead of at explicit anchors.
	Automatic bool `json:"automatic"`
}

// Caches reports whether the provider has a prompt cache.
func (t Table) Caches() bool { return t.CacheRead > 0 }

// Cost is the price of a call in dollars.
func (t Table) Cost(input, cacheWrite, cacheRead, output int) float64 {
	return (float64(input)*t.Input + float64(cacheWrite)*t.CacheWrite +
		float64(cacheRead)*t.CacheRead + float64(output)*t.Output) / 1e6
}

// Anthropic is Sonnet-class pricing with the 5-minute cache: writes at
// 1.25× and reads at 0.1× the input price.
func Anthropic() Table {
	return Table{Name: "anthropic", Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}
}

// OpenAI is GPT-class pricing with automatic prefix caching: no write
// surcharge, reads at a tenth of input.
func OpenAI() Table {
	return Table{Name: "openai", Input: 1.25, Output: 10, CacheWrite: 1.25, CacheRead: 0.125, Automatic: true}
}

// NoCache is Anthropic's list price with no prompt cache.
func NoCache() Table {
	return Table{Name: "nocache", Input: 3, Output: 15}
}

// ByName returns the table called name: anthropic, openai or nocache.
func ByName(name string) (Table, bool) {
	switch name {
	case "anthropic":
		return Anthropic(), true
	case "openai":
		return OpenAI(), true
	case "nocache":
		return NoCache(), true
	}
	return Table{}, false
}
