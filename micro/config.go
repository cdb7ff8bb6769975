package micro

import (
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Defaults of Config.
const (
	DefaultKeep         = 3
	DefaultSkipChars    = 100
	DefaultWindow       = llm.DefaultWindow // one default for every package: see llm.DefaultWindow
	DefaultHighWater    = 0.8
	DefaultGuardTokens  = 25_000 // at most: see Guard
	DefaultGuardPreview = 2_000
)

// Guard is the oversize guard's limit at a window of window tokens: a new
// tool result, or a text of the user's newest message, larger than this
// never reaches the model whole. It is DefaultGuardTokens, and a quarter
// of a window smaller than 100,000 tokens, so that one result never takes
// more than a quarter of the context. Every caller of the engine gets it
// (the agent, the bench's replay, ctxkit compact and the proxy, which had
// a quarter of the window as a rule of its own).
func Guard(window int) int { return min(DefaultGuardTokens, max(window/4, 1)) }

// Config is what a Clearer is built with. The zero value is the default
// setup: cache-aware with Anthropic's prices.
type Config struct {
	// RecallTool names the tool the model recalls an original with, when
	// it is not just "recall" (toolresult.Recall): placeholders name it.
	RecallTool string
	// Keep is how many of the most recent consumed tool results stay whole
	// (DefaultKeep when 0; a negative value keeps none).
	Keep int
	// SkipChars: results this short or shorter are never cleared
	// (DefaultSkipChars when 0).
	SkipChars int
	// Preserve names what is kept until stale: tool names, or tool kinds
	// (read, write, edit, ls, grep, bash; see toolresult.Classify) of
	// dedicated tools, matched case-insensitively. nil means {"read"}: the
	// read-file tools, as seed 003 keeps read_file results. A file read
	// through a shell command (cat, sed -n) is the shell tool's result and
	// is preserved only if that tool's name is listed. An empty non-nil
	// list preserves nothing.
	Preserve []string
	// Policy decides when to clear (CacheAware with Anthropic prices when
	// nil).
	Policy Policy
	// Counter counts tokens (tokens.NewEstimator() when nil).
	Counter conv.Counter
	// Window is the model's context window (DefaultWindow when 0), and
	// HighWater the share of it (DefaultHighWater when 0) above which
	// every clearable block is cleared whatever the policy says.
	Window    int
	HighWater float64
	// GuardTokens is the size above which a new tool result is spilled to
	// a file and shown as head and tail (Guard(Window) when 0; a negative
	// value turns the guard off); GuardPreview the tokens of head and tail
	// left in its place (DefaultGuardPreview when 0).
	GuardTokens  int
	GuardPreview int
	// Compressor makes rung 1 (toolresult defaults when nil); NoRung1
	// turns rung 1 off, leaving only placeholders.
	Compressor *toolresult.Compressor
	NoRung1    bool
	// InputLimits bound rung 1 of tool call inputs (toolresult
	// defaults when zero): in a round that has ended, a call's string
	// values longer than InputLimits.String characters keep their first
	// lines, size, hash and recall id.
	InputLimits toolresult.InputLimits
	// Clock, when set, lets Step notice an expired prompt cache: a request
	// more than CacheTTL (DefaultCacheTTL when 0) after the previous one
	// finds the cache cold, so clearing costs no rewrite. Without a Clock
	// the cache is taken as warm unless Expire says otherwise, which keeps
	// replays deterministic.
	Clock    func() time.Time
	CacheTTL time.Duration
	// MinCacheTokens is the shortest prefix the provider caches
	// (DefaultMinCacheTokens when 0): a shorter anchored prefix was never
	// written, so a change after it rewrites from the system prefix.
	MinCacheTokens int
	// CompactAt is the context size, in tokens, at which the engine
	// compacts (rung 3 rewrites the prompt): compact.Ladder's soft
	// threshold (compact.Config.Budget().Soft). Clearing saves nothing
	// past it, so it bounds the cache-aware horizon (package doc). 0: no
	// compaction is expected.
	CompactAt int
}

// DefaultMinCacheTokens is the minimum cacheable prompt of Sonnet-class
// models.
const DefaultMinCacheTokens = 1024

// automatic reports whether the provider caches every prefix by itself
// (OpenAI-style), as a policy that knows the provider says (CacheAware's
// prices do): then a change rewrites from the changed block, and there
// are no anchors to hold. Otherwise caching is taken to be explicit.
func (cfg *Config) automatic() bool {
	p, ok := cfg.Policy.(interface{ Automatic() bool })
	return ok && p.Automatic()
}

// DefaultCacheTTL is the lifetime of Anthropic's default cache entries.
const DefaultCacheTTL = 5 * time.Minute

func (cfg Config) withDefaults() Config {
	if cfg.Keep == 0 {
		cfg.Keep = DefaultKeep
	} else if cfg.Keep < 0 {
		cfg.Keep = 0
	}
	if cfg.SkipChars <= 0 {
		cfg.SkipChars = DefaultSkipChars
	}
	if cfg.Preserve == nil {
		cfg.Preserve = []string{string(toolresult.KindRead)}
	}
	if cfg.Policy == nil {
		cfg.Policy = CacheAware{Pricing: pricing.Anthropic()}
	}
	if cfg.Counter == nil {
		cfg.Counter = tokens.NewEstimator()
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.HighWater <= 0 || cfg.HighWater > 1 {
		cfg.HighWater = DefaultHighWater
	}
	if cfg.GuardTokens == 0 {
		cfg.GuardTokens = Guard(cfg.Window)
	}
	if cfg.GuardPreview <= 0 {
		cfg.GuardPreview = DefaultGuardPreview
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.MinCacheTokens <= 0 {
		cfg.MinCacheTokens = DefaultMinCacheTokens
	}
	if cfg.InputLimits.String <= 0 {
		cfg.InputLimits.String = toolresult.DefaultInputString
	}
	if cfg.InputLimits.Lines <= 0 {
		cfg.InputLimits.Lines = toolresult.DefaultInputLines
	}
	if cfg.Compressor == nil {
		cfg.Compressor = toolresult.New(toolresult.Limits{})
	}
	return cfg
}

// preserved reports whether a result of call is on the preserve list.
func (cfg *Config) preserved(call toolresult.Call) bool {
	for _, p := range cfg.Preserve {
		if strings.EqualFold(p, call.Tool) || !call.Shell() && strings.EqualFold(p, string(call.Kind)) {
			return true
		}
	}
	return false
}
