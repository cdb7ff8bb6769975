package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/outfile"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/transcript"
	"github.com/ctxkit/ctxkit/wire"
)

// compactOptions are the flags of ctxkit compact.
type compactOptions struct {
	layers       []string
	policy       string
	keepValue    float64
	keep         int
	pricing      string
	clearAtLeast int
	// recordedModel is the model the recording names, set once it is
	// loaded.
	recordedModel string
	guardTokens   int
	session       string
	format        string
	asJSON        bool
	out           string
	force         bool
	model         string
	maxTokens     int

	// Rung 3 (the summary layer).
	window       int
	summarizer   string
	mode         string
	summaryModel string
	provider     string
	baseURL      string
}

func newCompactCmd() *cobra.Command {
	var o compactOptions
	cmd := &cobra.Command{
		Use:   "compact FILE",
		Short: "Replay a recorded session through the compaction layers and write the result",
		Long: `Compact imports a recorded agent session (any format ctxkit convert reads) and
replays it as a live agent would have lived it: before every request — every
assistant message of the recording — it runs the compaction layers on the
history so far, keeping each original in a transcript before changing
anything. It then writes the conversation as the engine would hold it for its
next request — after the recording ends, so with the prompt cache expired — as
an Anthropic Messages API request body, to -o or stdout.

Layers (--layers, in order):
  micro    per-tool compression of results whose round ended,
           placeholders for consumed results older than --keep, the
           oversize guard; when to clear is --policy's decision
           (eager, batched, cache-aware) with --pricing's prices
  summary  before a request that crosses the soft threshold, old
           turns become a structured summary (task, the user's words,
           progress and next action, decisions, the files changed, errors)
           in a --window token window; --summarizer extractive (offline,
           the default) or llm (a model through --provider, falling back
           to extractive); --mode region (largest region first) or round
           (oldest rounds first)

Cleared blocks keep their ids: "recall b17" in a placeholder names the block
whose original the transcript holds. With --session DIR the transcript is
written there, and ctxkit recall --session DIR b17 prints the original;
without it the originals are kept in memory for the run only.

--json prints a report instead of the conversation: tokens before and after,
blocks cleared, bytes spilled, compactions, the summarizer, what fell back
and why, the summaries left (turns covered, tokens), every decision the engine
took and why (a run of the same one counted once), whether the invariants held
after every step,
and the input cost of the replay (prompt cache simulated as the longest common
prefix with the previous request) against sending everything.`,
		Example: `  ctxkit compact session.jsonl --layers micro -o compacted.json
  ctxkit compact traj.json --policy eager --keep 5 --json
  ctxkit compact traj.json --pricing nocache --session ./sess --json
  ctxkit compact traj.json --layers micro,summary --window 32000 --json
  ctxkit compact session.jsonl --layers summary --summarizer llm --mode round -o out.json`,
		Args: oneFile("ctxkit compact FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkCompactFlags(cmd, args[0], o); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
			return runCompact(cmd.Context(), args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.layers, "layers", []string{"micro"}, "compaction layers to run, in order (micro, summary)")
	f.StringVar(&o.policy, "policy", "cache-aware", "when micro clears: eager, batched or cache-aware")
	keepValueVar(f, &o.keepValue)
	f.IntVar(&o.keep, "keep", micro.DefaultKeep, "most recent consumed tool results kept whole")
	f.StringVar(&o.pricing, "pricing", "anthropic", "prices for the cache-aware policy and the cost report: anthropic, openai or nocache")
	f.IntVar(&o.clearAtLeast, "clear-at-least", micro.DefaultClearAtLeast, "tokens a batch must free under --policy batched")
	f.IntVar(&o.guardTokens, "guard-tokens", micro.DefaultGuardTokens, "tool results above this many tokens are spilled to a file (-1: never)")
	f.StringVar(&o.session, "session", "", "write the transcript the recall ids resolve against to this new session folder")
	f.StringVar(&o.format, "format", "", "the recording's format when detection guesses wrong (see ctxkit convert)")
	f.BoolVar(&o.asJSON, "json", false, "print a JSON report instead of the conversation")
	f.StringVarP(&o.out, "output", "o", "", "write the conversation to this file (default stdout, or nowhere with --json)")
	f.BoolVar(&o.force, "force", false, "with -o: write in place onto a device, a FIFO or through a symbolic link instead of refusing")
	f.StringVar(&o.model, "model", "", "model to put in the request body (default: the recorded one)")
	f.IntVar(&o.maxTokens, "max-tokens", 8192, "max_tokens to put in the request body")
	windowVar(f, &o.window, 0, "the context window in tokens, for micro and the summary layer (default: the recorded model's, 128000 when unknown)")
	f.StringVar(&o.summarizer, "summarizer", "extractive", "summary layer: extractive (offline) or llm")
	f.StringVar(&o.mode, "mode", "round", "summary layer: round (one summary of everything before the recent tail) or region (largest region first, one summary each)")
	f.StringVar(&o.summaryModel, "summary-model", "claude-haiku-4-5", "summary layer with --summarizer llm: the model that writes summaries")
	f.StringVar(&o.provider, "provider", "anthropic", "summary layer with --summarizer llm: anthropic or openai (key from ANTHROPIC_API_KEY or OPENAI_API_KEY)")
	f.StringVar(&o.baseURL, "base-url", "", "summary layer with --summarizer llm: the provider's base URL (an OpenAI-compatible server, a proxy)")
	return cmd
}

// store is where the replay keeps originals: a transcript.Store with
// --session, a micro.MemoryKeeper without.
type store interface {
	engine.Keeper
	engine.Spiller
	Recall(id string) (conv.Block, error)
}

// engineConfig is the engine the flags ask for, keeping originals in st.
func engineConfig(o compactOptions, prices pricing.Table, counter conv.Counter, st store) (engine.Config, error) {
	cfg := engine.Config{Model: o.recordedModel, Window: o.window, Pricing: prices, Counter: counter, Keeper: st, KeepValue: o.keepValue}
	var micro_, summary bool
	for _, name := range o.layers {
		switch strings.TrimSpace(name) {
		case "micro":
			micro_ = true
		case "summary":
			summary = true
		default:
			return cfg, fmt.Errorf("unknown layer %q (available: micro, summary)", strings.TrimSpace(name))
		}
	}
	if !micro_ && !summary {
		return cfg, errors.New("--layers names no layer")
	}
	cfg.NoMicro, cfg.NoCompaction = !micro_, !summary
	switch o.policy {
	case "batched":
		cfg.Policy = micro.Batched{AtLeast: o.clearAtLeast}
	default:
		p, err := micro.ByName(o.policy, prices)
		if err != nil {
			return cfg, err
		}
		cfg.Policy = p
	}
	cfg.Micro.Keep = o.keep
	if o.keep == 0 {
		cfg.Micro.Keep = -1 // keep nothing whole; micro.Config's 0 means the default
	}
	cfg.Micro.GuardTokens = o.guardTokens
	mode, err := compact.ParseMode(o.mode)
	if err != nil {
		return cfg, fmt.Errorf("--mode: %w", err)
	}
	cfg.Compact.Mode = mode
	switch o.summarizer {
	case "", "extractive":
	case "llm":
		p, err := summaryProvider(o)
		if err != nil {
			return cfg, err
		}
		cfg.Summarizer = summarize.NewLLM(p, o.summaryModel, summarize.LLMOptions{})
	default:
		return cfg, fmt.Errorf("unknown summarizer %q (extractive or llm)", o.summarizer)
	}
	return cfg, nil
}

// compactReport is the --json output.
type compactReport struct {
	File    string   `json:"file"`
	Format  string   `json:"format"`
	Layers  []string `json:"layers"`
	Policy  string   `json:"policy"`
	Pricing string   `json:"pricing"`
	Keep    int      `json:"keep"`
	// KeepValue is the knob the engine ran at (--keep-value, or the
	// default).
	KeepValue float64 `json:"keep_value"`
	Session   string  `json:"session,omitempty"`

	Messages int `json:"messages"`
	Requests int `json:"requests"`

	TokensBefore     int `json:"tokens_before"`
	TokensAfter      int `json:"tokens_after"`
	BlocksCleared    int `json:"blocks_cleared"`
	BlocksCompressed int `json:"blocks_compressed"`
	BlocksSpilled    int `json:"blocks_spilled"`
	BytesSpilled     int `json:"bytes_spilled"`
	Edits            int `json:"edits"`

	// Rung 3: the summary layer's compactions, the summarizer, every step
	// down its fallback chain and why, the summaries left in the result,
	// and where it had to stop (overflow, breaker, thrashing).
	Window       int                `json:"window,omitempty"`
	HighWater    int                `json:"high_water,omitempty"`
	Mode         string             `json:"mode,omitempty"`
	Summarizer   string             `json:"summarizer,omitempty"`
	Compactions  int                `json:"compactions"`
	Fallbacks    []compact.Fallback `json:"fallbacks"`
	Summaries    []compactSummary   `json:"summaries"`
	Stopped      []string           `json:"stopped,omitempty"`
	SummaryUsage llm.Usage          `json:"summary_usage"`
	// Decisions are every decision the engine took and why, in order, a
	// run of the same one on successive requests counted once.
	Decisions []engine.Decided `json:"decisions"`

	InvariantsOK bool     `json:"invariants_ok"`
	Violations   []string `json:"violations,omitempty"`
	// RecallChecked counts the lowered blocks whose recall id was resolved
	// and found to give back the recorded original; RecallOK is false if
	// any did not.
	RecallChecked int  `json:"recall_checked"`
	RecallOK      bool `json:"recall_ok"`

	// The replay's requests: prompt tokens summed, the largest, and the
	// input cost with the prompt cache simulated, against sending every
	// request whole (the recording as it was).
	PromptTokens         int     `json:"prompt_tokens"`
	BaselinePromptTokens int     `json:"baseline_prompt_tokens"`
	PeakTokens           int     `json:"peak_tokens"`
	BaselinePeakTokens   int     `json:"baseline_peak_tokens"`
	InputCostUSD         float64 `json:"input_cost_usd"`
	BaselineInputCostUSD float64 `json:"baseline_input_cost_usd"`
	CostRatio            float64 `json:"cost_ratio"`

	lastStop error
}

func runCompact(ctx context.Context, path string, o compactOptions, stdout, stderr io.Writer) error {
	prices, ok := pricing.ByName(o.pricing)
	if !ok {
		return fmt.Errorf("compact: unknown pricing %q (anthropic, openai or nocache)", o.pricing)
	}
	counter := tokens.NewEstimator()
	if _, err := engineConfig(o, prices, counter, engine.NewMemoryKeeper()); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	sess, err := importer.Load(ctx, path, importer.Options{Format: o.format})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	o.recordedModel = sess.Model
	for _, w := range sess.Warnings {
		fmt.Fprintln(stderr, "ctxkit: warning:", w)
	}

	var st store
	if o.session != "" {
		ts, err := transcript.Create(o.session)
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		defer ts.Close()
		st = ts
	} else {
		st = engine.NewMemoryKeeper()
	}
	cfg, err := engineConfig(o, prices, counter, st)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	rep := &compactReport{File: path, Format: sess.Format, Layers: o.layers, Pricing: prices.Name, Keep: o.keep, KeepValue: eng.Config().KeepValue, Session: o.session}
	if !cfg.NoMicro {
		rep.Policy = o.policy
		rep.HighWater = eng.HighWater()
	}
	rep.Fallbacks, rep.Summaries, rep.Decisions = []compact.Fallback{}, []compactSummary{}, []engine.Decided{}
	out, err := replay(ctx, sess.Conv, eng, st, counter, prices, rep)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if !cfg.NoCompaction {
		c := eng.Config()
		rep.Window = c.Window
		rep.Mode = string(c.Compact.Mode)
		if rep.Mode == "" {
			rep.Mode = string(compact.ModeRound)
		}
		rep.Summarizer = eng.Summarizer()
		summaries(rep, out, counter)
		for _, s := range rep.Stopped {
			fmt.Fprintln(stderr, "ctxkit: compact: summary layer stopped", s)
		}
	}

	if o.out != "" || !o.asJSON {
		model := requestModel(stderr, "compact", o.model, sess.Model, "anthropic")
		data, err := wire.EncodeAnthropic(&llm.Request{Model: model, MaxTokens: o.maxTokens, System: out.System, Tools: out.Tools, Messages: out.Messages})
		if err != nil {
			return fmt.Errorf("compact: encode: %w", err)
		}
		data = append(data, '\n')
		if o.out != "" {
			if err := outfile.Write(o.out, data, outfile.Options{Inputs: []string{path}, Force: o.force, Flag: "-o"}); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
		} else if _, err := stdout.Write(data); err != nil {
			return err
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	if !rep.InvariantsOK || !rep.RecallOK {
		for _, v := range rep.Violations {
			fmt.Fprintln(stderr, "ctxkit: compact:", v)
		}
		fmt.Fprintln(stderr, "ctxkit: compact: the result breaks the invariants or loses an original; nothing was recorded wrongly, but report this")
		return exitError(1)
	}
	return nil
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if strings.TrimSpace(x) == v {
			return true
		}
	}
	return false
}

// replay feeds rec to a fresh conversation message by message as a live
// agent would have produced it: each message is recorded in st as first
// produced, and before every assistant message (a request) the engine
// runs on the history so far, in the agent's call order (engine.Replay).
// Each request is billed with the benchmark's prompt-cache simulator, and
// the usage it bills is what the engine observes, as an agent's provider
// reports it. Sending every request whole (the recording as it was) is
// billed the same way for the baseline. After the last message the engine
// runs once more, with the cache expired: the result is what it would hold
// for its next request. It fills rep and returns the final conversation.
func replay(ctx context.Context, rec *conv.Conversation, eng *engine.Engine, st store, counter conv.Counter, prices pricing.Table, rep *compactReport) (*conv.Conversation, error) {
	// Seq starts past the recording's ids, so blocks the engine makes (a
	// summary) never take an id a later recorded message carries.
	live := &conv.Conversation{System: conv.CloneBlocks(rec.System), Tools: append([]conv.Tool(nil), rec.Tools...), Seq: rec.Seq}
	live.Stamp(live.System)
	if ts, ok := st.(*transcript.Store); ok {
		if err := ts.SetHeader(ctx, live.System, live.Tools); err != nil {
			return nil, err
		}
	}
	// The baseline sends everything: the same assembly, nothing lowered.
	whole := &conv.Conversation{System: conv.CloneBlocks(rec.System), Tools: live.Tools, Seq: rec.Seq}
	whole.Stamp(whole.System)
	base, err := engine.New(engine.Config{Model: eng.Config().Model, Window: eng.Config().Window, Pricing: prices, Counter: counter,
		Keeper: engine.NewMemoryKeeper(), NoMicro: true, NoCompaction: true})
	if err != nil {
		return nil, err
	}
	minCache := eng.Config().MinCacheTokens
	cache, baseCache := bench.NewCache(prices, minCache), bench.NewCache(prices, minCache)
	run := engine.NewReplay(eng)
	rep.InvariantsOK, rep.RecallOK = true, true
	rep.Messages = len(rec.Messages)
	arrived := 0
	request := func(bill bool, out int) error {
		r, err := run.Step(ctx, live, arrived)
		arrived = 0
		rep.Edits += len(r.Edits)
		rep.BlocksSpilled += r.Micro.Spilled
		rep.BytesSpilled += r.Micro.BytesSpilled
		rep.Compactions += r.Compaction.Compactions
		rep.Fallbacks = append(rep.Fallbacks, r.Compaction.Fallbacks...)
		rep.Decisions = engine.AddDecisions(rep.Decisions, r.Decisions...)
		rep.SummaryUsage = rep.SummaryUsage.Add(r.Compaction.Usage)
		var stopped *compact.StoppedError
		for _, w := range r.Warnings {
			if errors.As(w, &stopped) {
				rep.stop(len(live.Messages), w, stopped.Reason)
			}
		}
		if !bill && errors.Is(err, assemble.ErrInvalid) && live.Messages[len(live.Messages)-1].Role == conv.RoleAssistant {
			// The recording ends with the model's answer: the state is
			// what the engine holds, but there is no request to build yet.
			err = nil
		}
		if errors.Is(err, compact.ErrOverflow) {
			// A live agent would tell the user and stop; the replay notes
			// it and goes on, so the report shows how far the session got.
			rep.stop(len(live.Messages), err, compact.ErrOverflow)
		} else if err != nil {
			return fmt.Errorf("before message %d: %w", len(live.Messages), err)
		} else if stopped == nil {
			rep.lastStop = nil
		}
		if vs := conv.Check(live); len(vs) > 0 {
			rep.InvariantsOK = false
			for _, v := range vs {
				if len(rep.Violations) < 20 {
					rep.Violations = append(rep.Violations, fmt.Sprintf("before message %d: %v", len(live.Messages), v))
				}
			}
		}
		if !bill || r.Request == nil {
			return nil
		}
		b := cache.Bill(bench.Segments(r.Request, counter), 0)
		run.Observe(b.Usage(out))
		rep.Requests++
		rep.PromptTokens += b.Prompt()
		rep.PeakTokens = max(rep.PeakTokens, b.Prompt())
		rep.InputCostUSD += b.USD
		br, err := base.Prepare(ctx, whole)
		if err != nil {
			return fmt.Errorf("before message %d: %w", len(live.Messages), err)
		}
		bb := baseCache.Bill(bench.Segments(br.Request, counter), 0)
		rep.BaselinePromptTokens += bb.Prompt()
		rep.BaselinePeakTokens = max(rep.BaselinePeakTokens, bb.Prompt())
		rep.BaselineInputCostUSD += bb.USD
		return nil
	}
	for i := range rec.Messages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if rec.Messages[i].Role == conv.RoleAssistant && i > 0 {
			if err := request(true, conv.MessageTokens(&rec.Messages[i], counter)); err != nil {
				return nil, err
			}
		}
		m := rec.Messages[i]
		m.Blocks = conv.CloneBlocks(m.Blocks)
		live.Append(m)
		if ts, ok := st.(*transcript.Store); ok {
			if err := ts.Append(ctx, live.Messages[len(live.Messages)-1]); err != nil {
				return nil, err
			}
		}
		if !joinEpoch(live) {
			arrived++
		}
		wm := rec.Messages[i]
		wm.Blocks = conv.CloneBlocks(wm.Blocks)
		whole.Append(wm)
		joinEpoch(whole)
	}
	// After the recording ends, the next request comes later: the prompt
	// cache has expired by then.
	eng.Expire()
	if err := request(false, 0); err != nil {
		return nil, err
	}
	rep.TokensBefore = whole.Tokens(counter).Total()
	rep.TokensAfter = live.Tokens(counter).Total()
	if rep.BaselineInputCostUSD > 0 {
		rep.CostRatio = rep.InputCostUSD / rep.BaselineInputCostUSD
	}
	return live, checkRecall(rec, live, st, rep)
}

// stop notes where the summary layer had to stop (overflow, breaker,
// thrashing), once per run of the same stop.
// joinEpoch merges the last message into the one before it when both are
// user messages: an agent that compacted on its own (Claude Code's
// compact_boundary, Codex's compacted item) can start the new epoch with
// its summary right after a tool result the model never answered. Replayed
// as one conversation, the summary joins that user turn, so roles keep
// alternating. It reports whether it merged.
func joinEpoch(c *conv.Conversation) bool {
	n := len(c.Messages)
	if n < 2 || c.Messages[n-1].Role != conv.RoleUser || c.Messages[n-2].Role != conv.RoleUser {
		return false
	}
	c.Messages[n-2].Blocks = append(c.Messages[n-2].Blocks, c.Messages[n-1].Blocks...)
	c.Messages = c.Messages[:n-1]
	return true
}

func (rep *compactReport) stop(before int, err, kind error) {
	if kind != rep.lastStop {
		rep.Stopped = append(rep.Stopped, fmt.Sprintf("before message %d: %v", before, err))
	}
	rep.lastStop = kind
}

// checkRecall resolves the recall id of every block below rung 0 and
// compares what comes back with the recording.
func checkRecall(rec, live *conv.Conversation, st store, rep *compactReport) error {
	orig := map[string]*conv.Block{}
	for i := range rec.Messages {
		for j := range rec.Messages[i].Blocks {
			orig[rec.Messages[i].Blocks[j].ID] = &rec.Messages[i].Blocks[j]
		}
	}
	for _, m := range live.Messages {
		for _, b := range m.Blocks {
			switch b.Meta.Rung {
			case conv.RungFull:
				continue
			case conv.RungCompressed, conv.RungPlaceholder:
				if b.Meta.Rung == conv.RungPlaceholder {
					rep.BlocksCleared++
				} else {
					rep.BlocksCompressed++
				}
			}
			want, ok := orig[b.ID]
			if !ok {
				continue // a block a layer made (a summary)
			}
			if want.Meta.Rung == b.Meta.Rung && want.Text == b.Text {
				continue // recorded so: the agent's own compaction summary
			}
			got, err := st.Recall(b.ID)
			rep.RecallChecked++
			if err != nil {
				rep.RecallOK = false
				rep.Violations = append(rep.Violations, fmt.Sprintf("recall %s: %v", b.ID, err))
				continue
			}
			if got.ResultText() != want.ResultText() || got.Text != want.Text || len(got.Content) != len(want.Content) {
				rep.RecallOK = false
				rep.Violations = append(rep.Violations, fmt.Sprintf("recall %s: not the recorded original", b.ID))
			}
		}
	}
	return nil
}
