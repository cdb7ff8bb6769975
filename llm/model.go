package llm

import "strings"

// ModelInfo is what the engine needs to know about a model: how much it can
// read and write, and the shortest prefix its provider will cache.
type ModelInfo struct {
	// Name is a model name, or a prefix ending in "*" ("claude-*").
	Name string `json:"name"`
	// Window is the context window in tokens: input plus output.
	Window int `json:"window"`
	// MaxOutput is the most output tokens one response may have.
	MaxOutput int `json:"max_output"`
	// MinCacheable is the shortest prefix, in tokens, that an explicit cache
	// breakpoint caches; shorter prefixes are silently not cached. 0 when
	// the provider has no explicit breakpoints.
	MinCacheable int `json:"min_cacheable,omitempty"`
}

// Models is a table of model facts. Lookup prefers an exact name, then the
// longest matching prefix ("*" matches every name), then the earlier entry;
// so overrides go first:
//
//	ms := append(llm.Models{{Name: "qwen3-coder", Window: 32_768, MaxOutput: 8_192}}, llm.DefaultModels()...)
type Models []ModelInfo

// DefaultWindow and DefaultMaxOutput are what a model the table does not
// know gets (the "*" entry): a 128k window and 8,192 output tokens, which
// most current models meet. Every package that needs a window for an
// unknown model uses these; override them for smaller local contexts.
const (
	DefaultWindow    = 128_000
	DefaultMaxOutput = 8_192
)

// DefaultModels returns the built-in table: published windows, output
// limits and minimum cacheable lengths. Claude models count as 200k even
// where a 1M window exists behind a beta flag, since a window assumed too
// large overflows and one assumed too small only compacts early. A model it
// does not know (a local model, say) gets the "*" entry: a 128k window and
// 8,192 output tokens, which most current models meet; override it for
// smaller local contexts.
func DefaultModels() Models {
	return Models{
		{Name: "*", Window: DefaultWindow, MaxOutput: DefaultMaxOutput},
		{Name: "claude-*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 1_024},
		{Name: "claude-opus-5*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 512},
		{Name: "claude-fable-5*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 512},
		{Name: "claude-mythos-5*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 512},
		{Name: "claude-mythos-preview*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 2_048},
		{Name: "claude-opus-4-8*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 1_024},
		{Name: "claude-opus-4-7*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 2_048},
		{Name: "claude-opus-4-6*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 4_096},
		{Name: "claude-opus-4-5*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 4_096},
		{Name: "claude-opus-4-1*", Window: 200_000, MaxOutput: 32_000, MinCacheable: 1_024},
		{Name: "claude-opus-4-0*", Window: 200_000, MaxOutput: 32_000, MinCacheable: 1_024},
		{Name: "claude-opus-4-2*", Window: 200_000, MaxOutput: 32_000, MinCacheable: 1_024},
		{Name: "claude-haiku-4-5*", Window: 200_000, MaxOutput: 64_000, MinCacheable: 4_096},
		{Name: "claude-3-5-haiku*", Window: 200_000, MaxOutput: 8_192, MinCacheable: 2_048},
		{Name: "claude-3-haiku*", Window: 200_000, MaxOutput: 4_096, MinCacheable: 2_048},
		{Name: "gpt-4o*", Window: 128_000, MaxOutput: 16_384},
		{Name: "gpt-4.1*", Window: 1_047_576, MaxOutput: 32_768},
		{Name: "gpt-4-turbo*", Window: 128_000, MaxOutput: 4_096},
		{Name: "gpt-5*", Window: 400_000, MaxOutput: 128_000},
		{Name: "o1*", Window: 200_000, MaxOutput: 100_000},
		{Name: "o3*", Window: 200_000, MaxOutput: 100_000},
		{Name: "o4-mini*", Window: 200_000, MaxOutput: 100_000},
		// Gemini: 1,048,576 input tokens, 65,535 output (8,192 for 2.0);
		// ai.google.dev/gemini-api/docs/models and Vertex AI's model
		// pages, taken 2026-11-27. Gemini CLI counts the same window.
		{Name: "gemini-*", Window: 1_048_576, MaxOutput: 65_535},
		{Name: "gemini-2.0-*", Window: 1_048_576, MaxOutput: 8_192},
		{Name: "deepseek-chat", Window: 128_000, MaxOutput: 8_192},
		{Name: "deepseek-reasoner", Window: 128_000, MaxOutput: 64_000},
	}
}

// LookupModel looks name up in the built-in table.
func LookupModel(name string) ModelInfo { return DefaultModels().Lookup(name) }

// Lookup returns the entry for name (see Models), with Name set to name. A
// table with no match answers the "*" entry of DefaultModels.
func (ms Models) Lookup(name string) ModelInfo {
	best, bestLen := -1, -1
	for i, m := range ms {
		if m.Name == name {
			best = i
			break
		}
		prefix, ok := strings.CutSuffix(m.Name, "*")
		if ok && strings.HasPrefix(name, prefix) && len(prefix) > bestLen {
			best, bestLen = i, len(prefix)
		}
	}
	var info ModelInfo
	if best >= 0 {
		info = ms[best]
	} else {
		info = DefaultModels()[0]
	}
	info.Name = name
	return info
}
