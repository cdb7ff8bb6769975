package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

// Defaults the engine fills in; every other package's own default is
// overridden by these, so a caller of the engine sees one set.
const (
	// DefaultWindow is the window of a model the model table does not
	// know: llm.DefaultWindow (128,000 tokens).
	DefaultWindow = llm.DefaultWindow
	// DefaultMaxTokens caps a request's max_tokens when Config.MaxTokens
	// is 0: the model's largest response, at most this.
	DefaultMaxTokens = 32_000
	// DefaultMinCacheTokens is the shortest cacheable prefix of a model
	// whose table entry names none.
	DefaultMinCacheTokens = micro.DefaultMinCacheTokens
)

// ErrConfig is wrapped by every error New returns for an invalid Config.
var ErrConfig = errors.New("engine: invalid config")

// Keeper makes the originals of an edit durable before the edit takes
// effect: the engine calls Keep with the conversation as it stands before
// the edit, and applies the edit only when Keep returned nil.
// *transcript.Store and *micro.MemoryKeeper implement it.
type Keeper interface {
	Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error
}

// Spiller writes a file the model is pointed to (an oversize tool result
// or user input) and returns its path. *transcript.Store and
// *micro.MemoryKeeper implement it.
type Spiller interface {
	Spill(ctx context.Context, name string, data []byte) (string, error)
}

// NewMemoryKeeper returns a Keeper and Spiller that holds originals in
// memory (micro.MemoryKeeper): for a replay, a test, or a run without a
// session folder.
func NewMemoryKeeper() *micro.MemoryKeeper { return micro.NewMemoryKeeper() }

// Workspace is the project rules files and @file mentions are looked up
// in (assemble.Workspace: an fs.StatFS; (*os.Root).FS() is one).
type Workspace = assemble.Workspace

// Todo is one item of the caller's todo list, recapped at the end of the
// request (layer L5).
type Todo = assemble.Todo

// Config sets up an Engine. Keeper is required; every zero field takes the
// default its comment names, and New fills them in one place (see
// Engine.Config). A value that cannot work is an error from New, never
// silently replaced.
type Config struct {
	// Model names the model; its window, output limit and shortest
	// cacheable prefix come from Models (llm.DefaultModels() when nil).
	// A model the table does not know gets DefaultWindow.
	Model  string
	Models llm.Models
	// Window is the context window in tokens, MaxOutput the model's
	// largest response (both from the model table when 0), MaxTokens the
	// max_tokens of each request (MaxOutput capped at DefaultMaxTokens
	// when 0, and at a quarter of a small window). MinCacheTokens is the
	// shortest prefix the provider caches (from the model table, else
	// DefaultMinCacheTokens).
	Window, MaxOutput, MaxTokens int
	MinCacheTokens               int

	// Pricing is the provider's price list (pricing.Anthropic() when
	// zero): it drives the cache-aware policy and says whether the
	// provider caches at explicit anchors, by itself, or not at all.
	Pricing pricing.Table
	// Policy decides when consumed tool results are cleared (rung 2):
	// micro.CacheAware with Pricing when nil.
	Policy micro.Policy
	// Summarizer writes compaction summaries (rung 3):
	// summarize.NewExtractive() when nil, which works offline.
	Summarizer summarize.Summarizer
	// Counter counts tokens (tokens.NewEstimator() when nil).
	Counter conv.Counter
	// Clock is the time source the cache lifetime is judged by. nil means
	// none: the prompt cache is taken as warm unless Expire says
	// otherwise, which keeps a replay deterministic.
	Clock func() time.Time

	// Keeper makes originals durable before an edit takes effect
	// (required). Spiller writes oversize results and inputs to files; nil
	// means Keeper when it is a Spiller, else the recall id alone leads
	// back to the original.
	Keeper  Keeper
	Spiller Spiller
	// Workspace is where project rules (L2) and @file mentions are looked
	// up (nil: no rules, mentions not resolved); Dir is its absolute path,
	// used only to recognise absolute @mentions. RuleFiles are the rule
	// files looked for, first found wins (assemble.DefaultRuleFiles()
	// when nil).
	Workspace Workspace
	Dir       string
	RuleFiles []string
	// Todos returns the todo list recapped at the end of each request
	// (none when nil).
	Todos func() []Todo

	// RecallTool names the tool the model recalls an original with when
	// it is not just "recall" (a proxied client's MCP tool,
	// mcp__ctxkit__recall): every placeholder, cut note and recall index
	// names it (toolresult.Recall).
	RecallTool string

	// KeepValue is the one knob between cost and recall: what keeping a
	// token in view for one more request is worth, as a multiple of the
	// price of reading it (compact.Config.KeepValue; default
	// compact.DefaultKeepValue, 1). At or below 1 a compaction keeps only
	// what it must (a token worth no more than its read price does not pay
	// for being kept); above 1 it keeps more of the summaries and the
	// user's words through a compaction, and costs more. Clearing (a
	// micro.CacheAware policy) and rung 1 at the end of a round take a
	// result out of view only when what they save covers, besides any
	// rewrite, the recall round trips micro.RecallTrips asks (at the
	// default, one). ctxkit bench --frontier draws the curve it moves
	// along.
	KeepValue float64

	// Micro tunes rungs 1–2 (keep count, skip size, preserve list,
	// high-water mark, oversize guard, …) and Compact tunes rung 3
	// (thresholds, keep counts, mode, timeout, guards). The engine sets
	// their window, counter, policy, clock, cache minimum, compaction
	// point and request prefix itself: set those here, not there.
	Micro   micro.Config
	Compact compact.Config
	// NoMicro turns rungs 1–2 off (the oversize guard included);
	// NoCompaction turns automatic compaction off (Retry, Compact and
	// CompactTool still compact).
	NoMicro, NoCompaction bool

	// OnCompact, when set, is called as an automatic compaction is about
	// to ask the summarizer (which may take a while), with its trigger:
	// for a caller to say "compacting…". It must not call the Engine.
	OnCompact func(compact.Trigger)

	// Logger receives the engine's decisions at debug level (discarded
	// when nil).
	Logger *slog.Logger
}

// ErrKeepValue is wrapped by CheckKeepValue's error: the knob is not a
// number (NaN or infinite).
var ErrKeepValue = errors.New("the keep value must be a finite number")

// CheckKeepValue reports whether v can be Config.KeepValue: any finite
// number (0 is the default, 1; at or below 1 a compaction keeps only what
// it must; below 0 clearing weighs dollars alone). Every command that
// takes the knob (--keep-value) checks it here.
func CheckKeepValue(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%w, not %v", ErrKeepValue, v)
	}
	return nil
}

// Defaults returns cfg with every zero field set to its default, as New
// uses it, or an error wrapping ErrConfig when cfg cannot work.
func (cfg Config) Defaults() (Config, error) {
	cfg, _, err := cfg.withDefaults()
	return cfg, err
}

// withDefaults fills in cfg's zero fields and checks what is left.
func (cfg Config) withDefaults() (Config, llm.ModelInfo, error) {
	bad := func(format string, args ...any) (Config, llm.ModelInfo, error) {
		return cfg, llm.ModelInfo{}, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if cfg.Keeper == nil {
		return bad("no Keeper: the originals must be made durable before they leave the context")
	}
	switch {
	case cfg.Window < 0:
		return bad("window %d is negative", cfg.Window)
	case cfg.MaxOutput < 0:
		return bad("max output %d is negative", cfg.MaxOutput)
	case cfg.MaxTokens < 0:
		return bad("max tokens %d is negative", cfg.MaxTokens)
	case cfg.MinCacheTokens < 0:
		return bad("minimum cacheable prefix %d is negative", cfg.MinCacheTokens)
	case cfg.Micro.Window != 0 || cfg.Compact.Window != 0 || cfg.Compact.MaxOutput != 0:
		return bad("set the window and output limit in Config.Window and Config.MaxOutput, not in Micro or Compact")
	case cfg.Micro.Policy != nil:
		return bad("set the policy in Config.Policy, not in Micro")
	case cfg.Micro.HighWater < 0 || cfg.Micro.HighWater > 1:
		return bad("high-water mark %v is not a share of the window in (0, 1]", cfg.Micro.HighWater)
	case cfg.Compact.Soft < 0 || cfg.Compact.Soft >= 1:
		return bad("soft threshold %v is not a share of the window in (0, 1)", cfg.Compact.Soft)
	case cfg.Compact.Hard < 0 || cfg.Compact.Hard > 1:
		return bad("hard threshold %v is not a share of the window in (0, 1]", cfg.Compact.Hard)
	case cfg.Compact.Soft > 0 && cfg.Compact.Hard > 0 && cfg.Compact.Soft >= cfg.Compact.Hard:
		return bad("soft threshold %v is not below the hard threshold %v", cfg.Compact.Soft, cfg.Compact.Hard)
	case cfg.Compact.SoftTarget < 0 || cfg.Compact.SoftTarget >= 1:
		return bad("compaction target %v is not a share of the window in (0, 1)", cfg.Compact.SoftTarget)
	}
	if err := CheckKeepValue(cfg.KeepValue); err != nil {
		return bad("%w", err)
	}
	if err := CheckKeepValue(cfg.Compact.KeepValue); err != nil {
		return bad("%w", err)
	}
	if cfg.KeepValue != 0 && cfg.Compact.KeepValue != 0 && cfg.KeepValue != cfg.Compact.KeepValue {
		return bad("set the keep value in Config.KeepValue, not in Compact")
	}
	if cfg.Compact.Mode != "" {
		if _, err := compact.ParseMode(string(cfg.Compact.Mode)); err != nil {
			return bad("%v", err)
		}
	}
	models := cfg.Models
	if models == nil {
		models = llm.DefaultModels()
	}
	info := models.Lookup(cfg.Model)
	if cfg.Window == 0 {
		cfg.Window = info.Window
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = info.MaxOutput
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = llm.DefaultMaxOutput
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = min(cfg.MaxOutput, DefaultMaxTokens)
		// A window smaller than the response reserve leaves nothing for
		// the prompt; keep three quarters of it for the prompt at least.
		cfg.MaxTokens = min(cfg.MaxTokens, max(cfg.Window/4, 256))
	}
	if cfg.MaxTokens >= cfg.Window {
		return bad("max tokens %d leave no room for a prompt in a %d-token window", cfg.MaxTokens, cfg.Window)
	}
	if cfg.Micro.GuardTokens == 0 {
		cfg.Micro.GuardTokens = micro.Guard(cfg.Window)
	}
	if cfg.MinCacheTokens == 0 {
		cfg.MinCacheTokens = info.MinCacheable
	}
	if cfg.MinCacheTokens == 0 {
		cfg.MinCacheTokens = DefaultMinCacheTokens
	}
	if cfg.Pricing == (pricing.Table{}) {
		cfg.Pricing = pricing.Anthropic()
	}
	if cfg.KeepValue == 0 {
		cfg.KeepValue = cfg.Compact.KeepValue
	}
	if cfg.KeepValue == 0 {
		cfg.KeepValue = compact.DefaultKeepValue
	}
	switch p := cfg.Policy.(type) {
	case nil:
		cfg.Policy = micro.CacheAware{Pricing: cfg.Pricing, KeepValue: cfg.KeepValue}
	case micro.CacheAware:
		// One knob: clearing weighs it as rung 1 and the compaction
		// floor do, unless the policy sets its own.
		if p.KeepValue == 0 {
			p.KeepValue = cfg.KeepValue
			cfg.Policy = p
		}
	}
	if cfg.Summarizer == nil {
		cfg.Summarizer = summarize.NewExtractive()
	}
	if cfg.Counter == nil {
		cfg.Counter = tokens.NewEstimator()
	}
	if cfg.Spiller == nil {
		if sp, ok := cfg.Keeper.(Spiller); ok {
			cfg.Spiller = sp
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, info, nil
}
