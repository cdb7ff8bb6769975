package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/health"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
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

// Changes describes the files the model read or wrote that have changed
// since, each change once ("" when none did).
type Changes interface {
	Changed() string
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
	// SetState records the engine's account (engine.Account, as JSON);
	// State returns the last one recorded, nil if none.
	SetState(ctx context.Context, data json.RawMessage) error
	State() json.RawMessage
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
	// Policy decides when consumed results are cleared (cache-aware on
	// Pricing when nil). Micro and Compact tune rungs 1–2 and rung 3 (see
	// engine.Config); the engine fills in the window, the counter, the
	// clock and the request prefix. Automatic compaction, the oversize
	// guard and the circuit breaker are on whatever these say.
	Policy  micro.Policy
	Micro   micro.Config
	Compact compact.Config
	// KeepValue is the engine's knob between cost and recall
	// (engine.Config.KeepValue; 0: its default, 1).
	KeepValue float64
	// Counter counts tokens (tokens.NewEstimator() when nil).
	Counter conv.Counter
	// Carry are blocks placed at the start of the first user message of a
	// new session: the summary /clear --keep-summary carries over.
	Carry []conv.Block
	// Changes, when set, says which files the model read or wrote have
	// changed since (tools.Set is one); each new turn of the user carries
	// what it says as a reminder, so the model does not go on from stale
	// content it will not read again.
	Changes Changes
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
	eng     *engine.Engine
	root    *os.Root
	monitor *health.Monitor
	counter conv.Counter
	info    llm.ModelInfo
	carry   []conv.Block
	// compacting is the trigger of the compaction the engine announced
	// during the current Prepare.
	compacting compact.Trigger
	// stopShown is the stop of automatic compaction the user was told
	// about, until it is back on.
	stopShown *compact.StoppedError
	// kept is the engine's account as the transcript last recorded it.
	kept engine.Account

	mu    sync.Mutex // guards stats, decisions and the conversation for readers
	stats Stats
	// decisions are the engine's latest decisions, a run of the same one
	// counted once (engine.AddDecisions), at most maxDecisions.
	decisions []engine.Decided
}

// maxDecisions is how many of the engine's latest decisions /context
// shows.
const maxDecisions = 12

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
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.System == "" {
		cfg.System = DefaultSystem
	}
	if cfg.Micro.GuardTokens < 0 {
		cfg.Micro.GuardTokens = 0 // the guard is always on
	}
	// The engine's defaults, in its one place: window, output, pricing,
	// counter.
	ec := engine.Config{
		Model:     cfg.Model,
		Window:    cfg.Window,
		MaxOutput: cfg.MaxOutput,
		MaxTokens: cfg.MaxTokens,
		Pricing:   cfg.Pricing,
		Policy:    cfg.Policy,
		KeepValue: cfg.KeepValue,
		Counter:   cfg.Counter,
		Clock:     cfg.Clock,
		Keeper:    cfg.Store,
		Spiller:   cfg.Store,
		Micro:     cfg.Micro,
		Compact:   cfg.Compact,
		Logger:    cfg.Logger,
	}
	d, err := ec.Defaults()
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	cfg.Window, cfg.MaxOutput, cfg.MaxTokens = d.Window, d.MaxOutput, d.MaxTokens
	cfg.Pricing, cfg.Counter = d.Pricing, d.Counter
	// The engine gets the configuration as given, to derive the rest
	// itself (and again for a window a provider states: the max_tokens
	// requests ask, the oversize guard), with the one counter and prices.
	ec.Pricing, ec.Counter = d.Pricing, d.Counter
	info := llm.LookupModel(cfg.Model)

	a := &Agent{cfg: cfg, store: cfg.Store, tools: cfg.Tools, counter: cfg.Counter, info: info}
	a.carry = conv.CloneBlocks(cfg.Carry)

	root, err := os.OpenRoot(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace: %w", err)
	}
	a.root = root
	dir, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("agent: workspace: %w", err)
	}
	ec.Summarizer = cfg.Summarizer
	if ec.Summarizer == nil {
		ec.Summarizer = summarize.NewLLM(cfg.Provider, cfg.Model, summarize.LLMOptions{NoCacheReuse: !cfg.Pricing.Caches()})
	}
	ec.Workspace, ec.Dir, ec.Todos = root.FS().(engine.Workspace), dir, a.todos
	ec.OnCompact = func(t compact.Trigger) {
		a.compacting = t
		a.emit(Event{Kind: EventCompactStart, Trigger: t})
	}
	a.eng, err = engine.New(ec)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("agent: %w", err)
	}
	minCache := a.eng.Config().MinCacheTokens

	a.monitor = health.New(health.Config{
		TTL:            micro.DefaultCacheTTL,
		Automatic:      cfg.Pricing.Automatic,
		MinCacheTokens: minCache,
		Logger:         cfg.Logger,
	})

	if err := a.open(ctx); err != nil {
		root.Close()
		return nil, err
	}
	return a, nil
}

// Close releases the workspace the agent holds open. The transcript is the
// caller's to close.
func (a *Agent) Close() error { return a.root.Close() }

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
	a.eng.Expire() // a resumed session finds the provider's cache cold
	a.restoreAccount()
	a.restoreTodos()
	return a.answerDangling(ctx)
}

// restoreAccount gives the engine the account the transcript recorded
// last, so a resumed session stakes what it had saved and predicts from
// the requests it had made. A session recorded before accounts were, or
// whose account does not decode, starts again at nothing saved.
func (a *Agent) restoreAccount() {
	data := a.store.State()
	if data == nil {
		return
	}
	var acct engine.Account
	err := json.Unmarshal(data, &acct)
	if err == nil {
		err = a.eng.Resume(acct)
	}
	if err != nil {
		a.emit(Event{Kind: EventWarning, Text: fmt.Sprintf("the session's account of what it saved could not be restored (%v); it starts again at nothing saved", err), Err: err})
		return
	}
	a.kept = acct
}

// keepAccount records the engine's account in the transcript when an
// engine call changed it.
func (a *Agent) keepAccount(ctx context.Context) error {
	acct := a.eng.Account()
	if acct == a.kept {
		return nil
	}
	data, err := json.Marshal(acct)
	if err != nil {
		return fmt.Errorf("agent: recording the session's account: %w", err)
	}
	if err := a.store.SetState(context.WithoutCancel(ctx), data); err != nil {
		return fmt.Errorf("agent: recording the session's account: %w", err)
	}
	a.kept = acct
	return nil
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
	s.TokenRatio = a.eng.TokenRatio()
	return s
}

// CompactState reports the compactor's guards: whether automatic
// compaction is stopped, and why.
func (a *Agent) CompactState() compact.State { return a.eng.State() }

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
