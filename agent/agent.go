package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/health"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
)

// Errors Run and its relatives return; test them with errors.Is.
var (
	// ErrInterrupted: the caller cancelled the turn (Ctrl-C). The session
	// is intact: every message produced so far is recorded, an interrupted
	// tool call has an error result, and the next Run goes on from there.
	ErrInterrupted = errors.New("agent: interrupted by the user")
	// ErrNothing: Run was given no prompt and no turn is waiting to go on.
	ErrNothing = errors.New("agent: nothing to do: the prompt is empty and no turn is waiting")
	// ErrMaxSteps: the run made Config.MaxSteps model requests without the
	// model finishing; the next Run (even with an empty prompt) goes on.
	ErrMaxSteps = errors.New("agent: step limit reached before the model finished")
)

// InterruptedText is the error result an interrupted tool call gets.
const InterruptedText = "interrupted by the user"

// Provider is a model endpoint; llm/anthropic and llm/openai provide
// them.
type Provider interface {
	Stream(ctx context.Context, req *llm.Request, on func(llm.Event)) (*llm.Response, error)
}

// Tools are the workspace tools the model may call; *tools.Set is one.
type Tools interface {
	Schemas() []conv.Tool
	Run(ctx context.Context, name string, input json.RawMessage) tools.Result
	Todos() []tools.Todo
	RestoreTodos(todos []tools.Todo)
}

// Store is the session's durable transcript; *transcript.Store is one.
// Every message goes to Append before anything can change it, every lossy
// change to Keep before it is applied.
type Store interface {
	Append(ctx context.Context, m conv.Message) error
	Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error
	Recall(id string) (conv.Block, error)
	Spill(ctx context.Context, name string, data []byte) (string, error)
	SetHeader(ctx context.Context, system []conv.Block, tools []conv.Tool) error
	Conversation() *conv.Conversation
}

// Config sets up an Agent. Provider, Model, Tools, Store and Workspace are
// required; every other zero field takes the default its comment names.
type Config struct {
	Provider Provider
	Model    string
	// Window is the model's context window in tokens and MaxOutput its
	// largest response (llm.LookupModel(Model) when 0). MaxTokens is the
	// max_tokens of each request (MaxOutput capped at 32,000 when 0).
	Window    int
	MaxOutput int
	MaxTokens int
	// Pricing is the provider's price list: it drives the cache-aware
	// clearing policy and says whether the provider caches prompts at
	// explicit anchors (Anthropic), by itself (Automatic) or not at all.
	// Default pricing.Anthropic().
	Pricing pricing.Table

	Tools     Tools
	Store     Store
	Workspace string

	// System is the system prompt (DefaultSystem when empty).
	System string
	// Summarizer writes compaction summaries. nil means an LLM summarizer
	// on Provider that reuses the agent's cached prefix where the provider
	// caches prompts; summarize.NewExtractive() works offline.
	Summarizer summarize.Summarizer
	// Micro and Compact tune rungs 1–2 and rung 3; the agent fills in the
	// window, the counter, the clock and the request prefix. Automatic
	// compaction, the oversize guard and the circuit breaker are on
	// whatever these say.
	Micro   micro.Config
	Compact compact.Config
	// Counter counts tokens (tokens.NewEstimator() when nil).
	Counter conv.Counter
	// Carry are blocks placed at the start of the first user message of a
	// new session: the summary /clear --keep-summary carries over.
	Carry []conv.Block
	// MaxSteps bounds the model requests one Run makes (0: no bound).
	MaxSteps int
	// OnEvent receives progress as it happens (may be nil). It is called
	// from the goroutine running Run and, for tool events, from the
	// goroutines running parallel tool calls; it must not block for long.
	OnEvent func(Event)
	// Clock is the time source (time.Now when nil): message timestamps,
	// cache lifetimes.
	Clock  func() time.Time
	Logger *slog.Logger
}

// Agent is one session of the coding agent: the conversation, its
// transcript, and the engine that keeps the context within the window.
// Run, Compact and Close must not be called concurrently; Stats and
// Context may be called at any time.
type Agent struct {
	cfg     Config
	conv    *conv.Conversation
	store   Store
	tools   Tools
	builder *assemble.Builder
	micro   *micro.Compactor
	compact *compact.Compactor
	monitor *health.Monitor
	counter conv.Counter
	info    llm.ModelInfo
	carry   []conv.Block
	// incompressible are results whose rung-1 form would not be smaller;
	// settle skips them.
	incompressible map[string]bool
	measure        measure
	rulesTokens    int

	mu    sync.Mutex // guards stats and the conversation for readers
	stats Stats
}

// Stats are a session's running totals.
type Stats struct {
	// Turns counts model responses; Usage sums what every request cost,
	// summary requests included; Compactions counts rung-3 compactions.
	Turns       int       `json:"turns"`
	Usage       llm.Usage `json:"usage"`
	Compactions int       `json:"compactions"`
	// Compressed and Cleared count blocks moved to rungs 1 and 2; Spilled
	// the results the oversize guard wrote to files.
	Compressed int `json:"compressed"`
	Cleared    int `json:"cleared"`
	Spilled    int `json:"spilled"`
	// Interrupted counts turns cut short by the user.
	Interrupted int `json:"interrupted"`
	// CacheHitRate is the share of prompt tokens read from the cache.
	CacheHitRate float64 `json:"cache_hit_rate"`
	// TokenRatio is the provider's token count per estimated token, as
	// calibrated from the responses so far.
	TokenRatio float64 `json:"token_ratio"`
	// LastPrompt is the prompt size the provider reported last.
	LastPrompt int `json:"last_prompt"`
}

// New opens the agent on cfg.Store's conversation: a new session when the
// store is empty, else the session as it stopped. A tool call the
// transcript shows unanswered (the process died while it ran) gets an
// error result, so the session goes on with every call paired.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	switch {
	case cfg.Provider == nil:
		return nil, errors.New("agent: Config.Provider is nil")
	case cfg.Tools == nil:
		return nil, errors.New("agent: Config.Tools is nil")
	case cfg.Store == nil:
		return nil, errors.New("agent: Config.Store is nil")
	case cfg.Workspace == "":
		return nil, errors.New("agent: Config.Workspace is empty")
	}
	if cfg.Counter == nil {
		cfg.Counter = tokens.NewEstimator()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Pricing == (pricing.Table{}) {
		cfg.Pricing = pricing.Anthropic()
	}
	if cfg.System == "" {
		cfg.System = DefaultSystem
	}
	info := llm.LookupModel(cfg.Model)
	if cfg.Window <= 0 {
		cfg.Window = info.Window
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = info.MaxOutput
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = min(cfg.MaxOutput, 32_000)
	}
	// A window smaller than the response reserve leaves nothing for the
	// prompt; keep a quarter of it for the prompt at least.
	cfg.MaxTokens = min(cfg.MaxTokens, max(cfg.Window/4, 256))

	a := &Agent{cfg: cfg, store: cfg.Store, tools: cfg.Tools, counter: cfg.Counter, info: info}
	a.measure.cal = tokens.NewCalibrator(tokens.CalibratorConfig{})
	a.carry = conv.CloneBlocks(cfg.Carry)

	anchors := 0
	switch {
	case !cfg.Pricing.Caches(), cfg.Pricing.Automatic:
		anchors = -1 // no explicit anchors: none to place
	}
	minCache := info.MinCacheable
	b, err := assemble.New(assemble.Config{
		Model:          cfg.Model,
		MaxTokens:      cfg.MaxTokens,
		Workspace:      cfg.Workspace,
		Spiller:        cfg.Store,
		MinCacheTokens: minCache,
		MaxAnchors:     anchors,
		Counter:        cfg.Counter,
		Logger:         cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.builder = b
	if r := b.Rules(); r.File != "" {
		a.rulesTokens = cfg.Counter.Count(r.Text)
	}

	mc := cfg.Micro
	mc.Window = cfg.Window
	if mc.Counter == nil {
		mc.Counter = cfg.Counter
	}
	if mc.Policy == nil {
		mc.Policy = micro.CacheAware{Pricing: cfg.Pricing}
	}
	if mc.Clock == nil {
		mc.Clock = cfg.Clock
	}
	if mc.GuardTokens < 0 {
		mc.GuardTokens = 0 // the guard is always on
	}
	if mc.MinCacheTokens == 0 {
		mc.MinCacheTokens = minCache
	}
	if mc.CompactAt == 0 {
		// Clearing pays only for the turns before compaction would
		// rewrite the prompt anyway (micro's package doc).
		bc := cfg.Compact
		bc.Window, bc.MaxOutput = cfg.Window, cfg.MaxTokens
		mc.CompactAt = bc.Budget().Soft
	}
	a.micro = micro.New(mc)

	cc := cfg.Compact
	cc.Window = cfg.Window
	cc.MaxOutput = cfg.MaxTokens
	if cc.Counter == nil {
		cc.Counter = cfg.Counter
	}
	if cc.Logger == nil {
		cc.Logger = cfg.Logger
	}
	cc.Prefix = a.prefix
	sum := cfg.Summarizer
	if sum == nil {
		sum = summarize.NewLLM(cfg.Provider, cfg.Model, summarize.LLMOptions{NoCacheReuse: !cfg.Pricing.Caches()})
	}
	a.compact = compact.New(sum, cc)

	a.monitor = health.New(health.Config{
		TTL:            micro.DefaultCacheTTL,
		Automatic:      cfg.Pricing.Automatic,
		MinCacheTokens: minCache,
		Logger:         cfg.Logger,
	})

	if err := a.open(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// open loads the store's conversation, records the header when it is new
// or changed, and answers dangling tool calls.
func (a *Agent) open(ctx context.Context) error {
	c := a.store.Conversation()
	if c == nil {
		c = &conv.Conversation{}
	}
	resumed := len(c.Messages) > 0
	system := []conv.Block{conv.NewText(conv.SourceSystem, a.cfg.System)}
	schemas := a.schemas()
	if !sameHeader(c, system, schemas) {
		c.Stamp(system)
		if err := a.store.SetHeader(ctx, system, schemas); err != nil {
			return fmt.Errorf("agent: recording the session header: %w", err)
		}
		c.System, c.Tools = system, schemas
	}
	a.conv = c
	if vs := conv.Check(c); len(vs) > 0 {
		return fmt.Errorf("agent: the session's conversation is inconsistent: %w", vs)
	}
	if !resumed {
		return nil
	}
	a.micro.Expire() // a resumed session finds the provider's cache cold
	a.restoreTodos()
	return a.answerDangling(ctx)
}

// answerDangling gives every unanswered tool call of a trailing assistant
// message an error result: the process stopped (or the transcript failed)
// before its result was recorded.
func (a *Agent) answerDangling(ctx context.Context) error {
	calls := danglingCalls(a.conv)
	if len(calls) == 0 {
		return nil
	}
	results := make([]conv.Block, len(calls))
	for i, call := range calls {
		results[i] = conv.NewToolResult(call.ToolUseID, call.Name,
			"Error: the session stopped before this tool call finished, so it has no result. Check its effects (files, processes) before running it again.", true)
	}
	_, err := a.appendUser(ctx, assemble.Input{Results: results}, nil)
	return err
}

// schemas is every tool the model is offered: the workspace tools, then
// recall and compact.
func (a *Agent) schemas() []conv.Tool {
	ts := append([]conv.Tool(nil), a.tools.Schemas()...)
	return append(ts, transcript.RecallTool(), compact.Tool())
}

// sameHeader reports whether c already carries system and tools, so a
// resumed session keeps its recorded header (and its cached prefix).
func sameHeader(c *conv.Conversation, system []conv.Block, ts []conv.Tool) bool {
	if len(c.System) != len(system) || len(c.Tools) != len(ts) {
		return false
	}
	for i := range system {
		if c.System[i].Type != system[i].Type || c.System[i].Text != system[i].Text {
			return false
		}
	}
	for i := range ts {
		if c.Tools[i].Name != ts[i].Name || c.Tools[i].Description != ts[i].Description ||
			!bytes.Equal(c.Tools[i].InputSchema, ts[i].InputSchema) {
			return false
		}
	}
	return true
}

// danglingCalls returns the tool calls of a trailing assistant message:
// calls that were never answered.
func danglingCalls(c *conv.Conversation) []*conv.Block {
	n := len(c.Messages)
	if n == 0 || c.Messages[n-1].Role != conv.RoleAssistant {
		return nil
	}
	var calls []*conv.Block
	m := &c.Messages[n-1]
	for i := range m.Blocks {
		if m.Blocks[i].Type == conv.TypeToolUse {
			calls = append(calls, &m.Blocks[i])
		}
	}
	return calls
}

// restoreTodos gives the tools the todo list of the last TodoWrite call
// still in the conversation.
func (a *Agent) restoreTodos() {
	for i := len(a.conv.Messages) - 1; i >= 0; i-- {
		m := &a.conv.Messages[i]
		for j := len(m.Blocks) - 1; j >= 0; j-- {
			b := &m.Blocks[j]
			if b.Type != conv.TypeToolUse || b.Name != tools.NameTodoWrite {
				continue
			}
			var in struct {
				Todos []tools.Todo `json:"todos"`
			}
			if json.Unmarshal(b.Input, &in) == nil {
				a.tools.RestoreTodos(in.Todos)
			}
			return
		}
	}
}

// Pending reports whether the conversation ends with a user message the
// model has not answered: a turn that was interrupted or cut off by a
// crash. Run with an empty prompt sends it as it is; Run with a prompt adds
// the prompt to it.
func (a *Agent) Pending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.conv.Messages)
	return n > 0 && a.conv.Messages[n-1].Role == conv.RoleUser
}

// Conversation returns a copy of the conversation as the model sees it.
func (a *Agent) Conversation() *conv.Conversation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conv.Clone()
}

// Stats returns the session's totals so far.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stats
	hs := a.monitor.Stats()
	s.CacheHitRate = hs.HitRate
	s.TokenRatio = a.measure.cal.Ratio()
	return s
}

// CompactState reports the compactor's guards: whether automatic
// compaction is stopped, and why.
func (a *Agent) CompactState() compact.State { return a.compact.State() }

// Window is the context window the agent works with.
func (a *Agent) Window() int { return a.cfg.Window }

// Summaries returns the summary blocks in the conversation, oldest first:
// what /clear --keep-summary carries to a new session.
func (a *Agent) Summaries() []conv.Block {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []conv.Block
	for _, m := range a.conv.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeSummary {
				out = append(out, b.Clone())
			}
		}
	}
	return out
}

// prefix builds the request the agent would send for c, for a summarizer
// that reuses the cached prefix.
func (a *Agent) prefix(c *conv.Conversation) (*llm.Request, error) {
	asm, err := a.builder.Build(c, a.todos())
	if err != nil {
		return nil, err
	}
	return asm.Request, nil
}

// estimate is the estimated size of the request for the conversation as
// it stands.
func (a *Agent) estimate() int {
	return a.conv.Tokens(a.counter).Total() + a.rulesTokens
}

func (a *Agent) todos() []assemble.Todo {
	ts := a.tools.Todos()
	if len(ts) == 0 {
		return nil
	}
	out := make([]assemble.Todo, len(ts))
	for i, t := range ts {
		out[i] = assemble.Todo{Content: t.Content, Status: t.Status}
	}
	return out
}

func (a *Agent) emit(e Event) {
	if a.cfg.OnEvent != nil {
		a.cfg.OnEvent(e)
	}
}
