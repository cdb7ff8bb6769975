package assemble

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/tokens"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxMentions    = 5
	DefaultMentionBytes   = 20_000  // about 5k tokens of code
	DefaultMaxInputBytes  = 100_000 // about 25k tokens of English
	DefaultMaxRulesBytes  = 256 << 10
	DefaultMinCacheTokens = 1024 // Sonnet 4.x and Opus 4.1; Haiku 4.5 needs 4096
	DefaultMaxAnchors     = 4    // the Anthropic API's limit
	DefaultLookback       = 20   // blocks the API walks back from a breakpoint
)

// DefaultRuleFiles are the project rule files looked for, first found wins.
func DefaultRuleFiles() []string { return []string{"CODE_LAW.md", "AGENTS.md", "CLAUDE.md"} }

// Sentinel errors, wrapped with details.
var (
	// ErrInvalid: the conversation would make a request the provider
	// rejects (the wrapped conv.Violations say why).
	ErrInvalid = errors.New("assemble: invalid request")
	// ErrEmpty: a turn with no tool results, no injections and no words.
	ErrEmpty = errors.New("assemble: nothing to send")
	// ErrResults: the tool results given do not answer exactly the calls
	// of the last assistant message.
	ErrResults = errors.New("assemble: tool results do not match the calls")
	// ErrOversize: a user input too large to send and no Spiller to save
	// it to.
	ErrOversize = errors.New("assemble: input too large")
)

// Spiller saves data to a file in the session folder and returns its
// path; transcript.Store implements it.
type Spiller interface {
	Spill(ctx context.Context, name string, data []byte) (path string, err error)
}

// Workspace is the project as the Builder sees it: an fs.FS that can also
// stat a path. (*os.Root).FS() is one, and confines every lookup to the
// root; a symlink that leaves it is reported as outside the workspace when
// the FS also implements fs.ReadLinkFS, as os.Root's does.
type Workspace interface {
	fs.StatFS
}

// Config says how requests are assembled. The zero value of every field
// means its default.
type Config struct {
	Model     string
	MaxTokens int

	// Workspace is where @file mentions and project rules are looked up:
	// the caller's view of the project, through which alone the Builder
	// touches files (the agent passes its os.Root's FS). nil means no
	// workspace: no project rules, and @mentions are not resolved.
	Workspace Workspace
	// Dir is the workspace's absolute path, only to recognise an absolute
	// @mention that points into it; the Builder does no I/O with it.
	Dir string
	// RuleFiles are the project rule files (L2) looked for in Workspace,
	// the first one found is used: DefaultRuleFiles.
	RuleFiles []string
	// MaxRulesBytes caps the project rules read; the rest is cut with a
	// note saying so.
	MaxRulesBytes int

	// MaxMentions is how many distinct @file mentions one input may have
	// resolved; further ones are listed as ignored.
	MaxMentions int
	// MentionBytes is the most bytes of mentioned files one input carries
	// (DefaultMentionBytes; negative: none). A mentioned text file that
	// fits in what is left is put in the turn, tagged with its path; a
	// larger one is only named, for the model to read with the Read tool.
	MentionBytes int
	// MaxInputBytes is the largest user input sent as it is; a larger one
	// is saved through Spiller and replaced by a reference.
	MaxInputBytes int
	Spiller       Spiller

	// MinCacheTokens is the model's minimum cacheable prefix: no anchor is
	// placed before a prefix this long. See the provider's documentation
	// (4096 for Haiku 4.5 and Opus 4.5/4.6, 2048 for Opus 4.7).
	MinCacheTokens int
	// MaxAnchors is how many cache anchors a request may carry; negative
	// means none (a provider without prompt caching, or one that caches
	// prefixes by itself).
	MaxAnchors int
	// Lookback is how many blocks the provider walks back from an anchor to
	// find an earlier cache entry.
	Lookback int
	// CacheTTL is the anchors' time to live: "" for the provider's
	// default (5 minutes), or "1h".
	CacheTTL string

	// Tags overrides the tag an injection of a source is wrapped in (Tag).
	Tags map[conv.Source]string
	// Counter counts tokens for anchor placement: tokens.NewEstimator().
	Counter conv.Counter
	Logger  *slog.Logger
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir != "" && !filepath.IsAbs(cfg.Dir) {
		return cfg, fmt.Errorf("assemble: Config.Dir %q is not an absolute path", cfg.Dir)
	}
	if cfg.RuleFiles == nil {
		cfg.RuleFiles = DefaultRuleFiles()
	}
	if cfg.MaxRulesBytes <= 0 {
		cfg.MaxRulesBytes = DefaultMaxRulesBytes
	}
	if cfg.MaxMentions <= 0 {
		cfg.MaxMentions = DefaultMaxMentions
	}
	if cfg.MentionBytes == 0 {
		cfg.MentionBytes = DefaultMentionBytes
	}
	if cfg.MaxInputBytes <= 0 {
		cfg.MaxInputBytes = DefaultMaxInputBytes
	}
	if cfg.MinCacheTokens <= 0 {
		cfg.MinCacheTokens = DefaultMinCacheTokens
	}
	switch {
	case cfg.MaxAnchors == 0:
		cfg.MaxAnchors = DefaultMaxAnchors
	case cfg.MaxAnchors < 0:
		cfg.MaxAnchors = 0
	case cfg.MaxAnchors > DefaultMaxAnchors:
		return cfg, fmt.Errorf("assemble: MaxAnchors %d exceeds the provider limit of %d", cfg.MaxAnchors, DefaultMaxAnchors)
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = DefaultLookback
	}
	switch cfg.CacheTTL {
	case "", "5m", "1h":
	default:
		return cfg, fmt.Errorf("assemble: CacheTTL %q: want \"5m\" or \"1h\"", cfg.CacheTTL)
	}
	if cfg.Counter == nil {
		cfg.Counter = tokens.NewEstimator()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// Builder assembles requests for one session. It holds the project rules,
// read once (New, Reload), so the system prefix stays byte-stable and
// cached. Build is a pure function of the conversation, the todo list and
// what the Builder holds; Turn does the file work of a user input.
type Builder struct {
	cfg   Config
	rules Rules
	// rulesBlock is L2 as the system block it is sent as; zero when there
	// are no rules.
	rulesBlock conv.Block

	// checked remembers how far the conversation Build last saw was
	// verified, so the next Build checks only what was appended.
	mu      sync.Mutex
	checked checkpoint
}

// checkpoint identifies a verified conversation prefix: its length and the
// ids of its first and last messages' first blocks. Edits that change the
// structure (compaction) change one of these; rung edits change only
// content, which cannot break an invariant.
type checkpoint struct {
	n           int
	first, last string
	system      int
}

// New returns a Builder for cfg and reads the project rules.
func New(cfg Config) (*Builder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Builder{cfg: cfg}
	if err := b.Reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// Reload reads the project rules again. Call it only where the cache
// prefix is lost anyway (after /clear or a compaction): any change in the
// rules rewrites the whole cached prompt.
func (b *Builder) Reload() error {
	r, err := LoadRules(b.cfg.Workspace, b.cfg.RuleFiles, b.cfg.MaxRulesBytes)
	if err != nil {
		return err
	}
	for _, n := range r.Notes {
		b.cfg.Logger.Warn("assemble: project rules", "note", n)
	}
	b.rules = r
	b.rulesBlock = conv.Block{}
	if r.File != "" {
		b.rulesBlock = conv.NewText(conv.SourceSystem, rulesText(r))
		conv.BlockTokens(&b.rulesBlock, b.cfg.Counter)
	}
	return nil
}

// Rules returns the project rules the Builder holds.
func (b *Builder) Rules() Rules { return b.rules }
