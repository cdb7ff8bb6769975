// Package pricing holds what a provider charges per million tokens and the
// arithmetic that turns usage into dollars, for the cache-aware clearing
// policy and the replay benchmark.
//
// The tables are list prices as the providers documented them on the date
// in Table.Date; cache premiums are stated as multiples of the input
// price: Anthropic writes the 5-minute cache at 1.25× and the 1-hour cache
// at 2×, and reads either at 0.1×; OpenAI caches prefixes by itself and
// reads them at 0.1×, with no write premium for older models and 1.25×
// for GPT-5.6 and later; Gemini caches prefixes implicitly too (no write
// charge, reads at 0.1× on 2.5 models and later).
package pricing

import (
	"slices"
	"strings"
)

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
	// TTL is how long, in seconds, a cache entry lives after it was last
	// written or read: 300 for the 5-minute cache, 3600 for the 1-hour
	// one; 0 when the provider does not say (automatic caching keeps
	// prefixes for minutes to an hour).
	TTL int `json:"ttl_seconds,omitempty"`
	// Date is when the prices were taken from the provider's pricing page.
	Date string `json:"date,omitempty"`
	// Note says which models the table is for.
	Note string `json:"note,omitempty"`
}

// Caches reports whether the provider has a prompt cache.
func (t Table) Caches() bool { return t.CacheRead > 0 }

// ReadPrice is what a token of the prompt costs to read again at the next
// request: the cache-read price with a prompt cache, else the input price.
func (t Table) ReadPrice() float64 {
	if t.Caches() {
		return t.CacheRead
	}
	return t.Input
}

// WritePrice is what a token costs the first time a request sends it: the
// cache-write price with a prompt cache, else the input price.
func (t Table) WritePrice() float64 {
	if t.Caches() {
		return t.CacheWrite
	}
	return t.Input
}

// RewritePrice is what writing a token again costs beyond reading it,
// when a change makes the provider write the cached prompt after it
// again: w − r with a prompt cache, nothing without one.
func (t Table) RewritePrice() float64 {
	if t.Caches() {
		return t.CacheWrite - t.CacheRead
	}
	return 0
}

// WritePremium reports whether an automatic cache bills its writes above
// the input price.
func (t Table) WritePremium() bool { return t.Automatic && t.CacheWrite > t.Input }

// Cost is the price of a call in dollars.
func (t Table) Cost(input, cacheWrite, cacheRead, output int) float64 {
	return (float64(input)*t.Input + float64(cacheWrite)*t.CacheWrite +
		float64(cacheRead)*t.CacheRead + float64(output)*t.Output) / 1e6
}

// taken is the date the list prices below were read.
const taken = "2026-11-23"

// Anthropic is Sonnet-class pricing with the 5-minute cache: writes at
// 1.25× and reads at 0.1× the input price.
func Anthropic() Table {
	return Table{Name: "anthropic", Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30, TTL: 300, Date: taken,
		Note: "Claude Sonnet class, 5-minute cache (write 1.25×, read 0.1×)"}
}

// Anthropic1h is Sonnet-class pricing with the 1-hour cache: writes at 2×.
func Anthropic1h() Table {
	return Table{Name: "anthropic-1h", Input: 3, Output: 15, CacheWrite: 6, CacheRead: 0.30, TTL: 3600, Date: taken,
		Note: "Claude Sonnet class, 1-hour cache (write 2×, read 0.1×)"}
}

// OpenAI is GPT-class pricing with automatic prefix caching: no write
// surcharge, reads at a tenth of input.
func OpenAI() Table {
	return Table{Name: "openai", Input: 1.25, Output: 10, CacheWrite: 1.25, CacheRead: 0.125, Automatic: true, Date: taken,
		Note: "GPT-5 class, automatic caching without a write premium (read 0.1×)"}
}

// OpenAIWritePremium is automatic prefix caching with the write premium
// GPT-5.6 and later bill: the prefix a request caches costs 1.25× input.
func OpenAIWritePremium() Table {
	return Table{Name: "openai-write", Input: 1.25, Output: 10, CacheWrite: 1.5625, CacheRead: 0.125, Automatic: true, Date: taken,
		Note: "GPT-5.6 and later, automatic caching with cache writes at 1.25×"}
}

// Gemini is Gemini Pro-class pricing for prompts up to 200k tokens with
// implicit caching: the API caches common prefixes by itself, bills no
// write and reads cached tokens at a tenth of input (explicit caches,
// which bill storage by the hour, are not modelled).
func Gemini() Table {
	return Table{Name: "gemini", Input: 1.25, Output: 10, CacheWrite: 1.25, CacheRead: 0.125, Automatic: true, Date: "2025-06-17",
		Note: "Gemini 2.5 Pro list price, prompts up to 200k tokens; implicit caching, no write premium (read 0.1×)"}
}

// NoCache is Anthropic's list price with no prompt cache.
func NoCache() Table {
	return Table{Name: "nocache", Input: 3, Output: 15, Date: taken, Note: "Claude Sonnet class list price, no prompt cache"}
}

// Tables lists every table, selectable by name.
func Tables() []Table {
	return []Table{Anthropic(), Anthropic1h(), OpenAI(), OpenAIWritePremium(), Gemini(), NoCache()}
}

// Names are the tables' names, for messages.
func Names() string {
	var ns []string
	for _, t := range Tables() {
		ns = append(ns, t.Name)
	}
	return strings.Join(ns, ", ")
}

// ByName returns the table called name (see Tables).
func ByName(name string) (Table, bool) {
	ts := Tables()
	i := slices.IndexFunc(ts, func(t Table) bool { return t.Name == name })
	if i < 0 {
		return Table{}, false
	}
	return ts[i], true
}
