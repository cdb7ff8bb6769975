package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/outfile"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/transcript"
	"github.com/ctxkit/ctxkit/wire"
)

// compactOptions are the flags of ctxkit compact.
type compactOptions struct {
	layers       []string
	policy       string
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
and why, the summaries left (turns covered, tokens), whether the invariants
held after every step,
and the input cost of the replay (prompt cache simulated as the longest common
prefix with the previous request) against sending everything.`,
		Example: `  ctxkit compact session.jsonl --layers micro -o compacted.json
  ctxkit compact traj.json --policy eager --keep 5 --json
  ctxkit compact traj.json --pricing nocache --session ./sess --json
  ctxkit compact traj.json --layers micro,summary --window 32000 --json
  ctxkit compact session.jsonl --layers summary --summarizer llm --mode round -o out.json`,
		Args: cobra.ExactArgs(1),
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
	f.IntVar(&o.window, "window", 0, "summary layer: the context window in tokens (default: the recorded model's, 200000 when unknown)")
	f.StringVar(&o.summarizer, "summarizer", "extractive", "summary layer: extractive (offline) or llm")
	f.StringVar(&o.mode, "mode", "region", "summary layer: region (largest region first) or round (oldest rounds first)")
	f.StringVar(&o.summaryModel, "summary-model", "claude-haiku-4-5", "summary layer with --summarizer llm: the model that writes summaries")
	f.StringVar(&o.provider, "provider", "anthropic", "summary layer with --summarizer llm: anthropic or openai (key from ANTHROPIC_API_KEY or OPENAI_API_KEY)")
	f.StringVar(&o.baseURL, "base-url", "", "summary layer with --summarizer llm: the provider's base URL (an OpenAI-compatible server, a proxy)")
	return cmd
}

// store is where the replay keeps originals: a transcript.Store with
// --session, a micro.MemoryKeeper without.
type store interface {
	micro.Keeper
	micro.Spiller
	Recall(id string) (conv.Block, error)
}

// layer is one compaction layer, run before every request of the replay.
// A layer is added by giving it a case in newLayer.
type layer interface {
	Name() string
	Step(ctx context.Context, c *conv.Conversation, st store) (layerResult, error)
}

// layerResult is what a layer did in one step.
type layerResult struct {
	Edits                 []conv.Edit
	Cleared, Compressed   int
	Spilled, BytesSpilled int
	Summarized            int // messages folded into summaries (rung 3)
	Freed                 int
	Deferred              int
}

// microLayer is rungs 1 and 2.
type microLayer struct{ m *micro.Compactor }

func (l microLayer) Name() string { return "micro" }

// Expire tells the layer the prompt cache has gone cold.
func (l microLayer) Expire() { l.m.Expire() }

func (l microLayer) Step(ctx context.Context, c *conv.Conversation, st store) (layerResult, error) {
	r, err := l.m.Step(ctx, c, st)
	return layerResult{Edits: r.Edits, Cleared: r.Cleared, Compressed: r.Compressed, Spilled: r.Spilled,
		BytesSpilled: r.BytesSpilled, Freed: r.Freed, Deferred: r.Deferred}, err
}

// newLayer builds the layer called name.
func newLayer(name string, o compactOptions, prices pricing.Table, counter conv.Counter) (layer, error) {
	switch name {
	case "micro":
		var p micro.Policy
		switch o.policy {
		case "batched":
			p = micro.Batched{AtLeast: o.clearAtLeast}
		default:
			var err error
			if p, err = micro.ByName(o.policy, prices); err != nil {
				return nil, err
			}
		}
		keep := o.keep
		if keep == 0 {
			keep = -1 // keep nothing whole; micro.Config's 0 means the default
		}
		return microLayer{micro.New(micro.Config{Keep: keep, Policy: p, Counter: counter, GuardTokens: o.guardTokens})}, nil
	case "summary":
		return newSummaryLayer(o, counter, o.recordedModel)
	}
	return nil, fmt.Errorf("unknown layer %q (available: micro, summary)", name)
}

// compactReport is the --json output.
type compactReport struct {
	File    string   `json:"file"`
	Format  string   `json:"format"`
	Layers  []string `json:"layers"`
	Policy  string   `json:"policy"`
	Pricing string   `json:"pricing"`
	Keep    int      `json:"keep"`
	Session string   `json:"session,omitempty"`

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
	Mode         string             `json:"mode,omitempty"`
	Summarizer   string             `json:"summarizer,omitempty"`
	Compactions  int                `json:"compactions"`
	Fallbacks    []compact.Fallback `json:"fallbacks"`
	Summaries    []compactSummary   `json:"summaries"`
	Stopped      []string           `json:"stopped,omitempty"`
	SummaryUsage llm.Usage          `json:"summary_usage"`

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
}

func runCompact(ctx context.Context, path string, o compactOptions, stdout, stderr io.Writer) error {
	prices, ok := pricing.ByName(o.pricing)
	if !ok {
		return fmt.Errorf("compact: unknown pricing %q (anthropic, openai or nocache)", o.pricing)
	}
	counter := tokens.NewEstimator()
	sess, err := importer.Load(ctx, path, importer.Options{Format: o.format})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	o.recordedModel = sess.Model
	var layers []layer
	for _, name := range o.layers {
		l, err := newLayer(strings.TrimSpace(name), o, prices, counter)
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		layers = append(layers, l)
	}
	if len(layers) == 0 {
		return errors.New("compact: --layers names no layer")
	}
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
		st = micro.NewMemoryKeeper()
	}
	rep := &compactReport{File: path, Format: sess.Format, Layers: o.layers, Pricing: prices.Name, Keep: o.keep, Session: o.session}
	if slicesContains(o.layers, "micro") {
		rep.Policy = o.policy
	}
	rep.Fallbacks, rep.Summaries = []compact.Fallback{}, []compactSummary{}
	out, err := replay(ctx, sess.Conv, layers, st, counter, prices, rep)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	for _, l := range layers {
		if sl, ok := l.(*summaryLayer); ok {
			sl.report(rep, out, counter)
			for _, s := range sl.stops {
				fmt.Fprintln(stderr, "ctxkit: compact: summary layer stopped", s)
			}
		}
	}

	if o.out != "" || !o.asJSON {
		model := cmp.Or(o.model, sess.Model)
		if model == "" {
			model = defaultAnthropicModel
			fmt.Fprintf(stderr, "ctxkit: compact: the recording names no model; the request body names %s (--model sets another)\n", model)
		}
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
// produced, and before every assistant message (a request) the layers
// run on the history so far. After the last message they run once more:
// the result is what the engine would hold for its next request. It fills
// rep and returns the final conversation.
func replay(ctx context.Context, rec *conv.Conversation, layers []layer, st store, counter conv.Counter, prices pricing.Table, rep *compactReport) (*conv.Conversation, error) {
	// Seq starts past the recording's ids, so blocks a layer makes (a
	// summary) never take an id a later recorded message carries.
	live := &conv.Conversation{System: cloneBlocks(rec.System), Tools: append([]conv.Tool(nil), rec.Tools...), Seq: rec.Seq}
	live.Stamp(live.System)
	if ts, ok := st.(*transcript.Store); ok {
		if err := ts.SetHeader(ctx, live.System, live.Tools); err != nil {
			return nil, err
		}
	}
	rep.InvariantsOK, rep.RecallOK = true, true
	rep.Messages = len(rec.Messages)
	fixed := 0
	for i := range live.System {
		fixed += conv.BlockTokens(&live.System[i], counter)
	}
	for i := range live.Tools {
		fixed += conv.ToolTokens(&live.Tools[i], counter)
	}
	var prevTotal, basePrev, baseTotal int // prompts of the previous request, compacted and recorded
	request := func(bill bool) error {
		var edits []conv.Edit
		for _, l := range layers {
			if e, ok := l.(interface{ Expire() }); ok && !bill {
				// After the recording ends, the next request comes later:
				// the prompt cache has expired by then.
				e.Expire()
			}
			r, err := l.Step(ctx, live, st)
			if err != nil {
				return fmt.Errorf("%s layer, before message %d: %w", l.Name(), len(live.Messages), err)
			}
			edits = append(edits, r.Edits...)
			rep.Edits += len(r.Edits)
			rep.BlocksSpilled += r.Spilled
			rep.BytesSpilled += r.BytesSpilled
		}
		if vs := conv.Check(live); len(vs) > 0 {
			rep.InvariantsOK = false
			for _, v := range vs {
				if len(rep.Violations) < 20 {
					rep.Violations = append(rep.Violations, fmt.Sprintf("before message %d: %v", len(live.Messages), v))
				}
			}
		}
		if !bill {
			return nil
		}
		// Bill the request: the prefix up to the first block the layers
		// changed was sent before and is read from the cache.
		total := fixed + messageTokens(live.Messages, counter)
		cached := prevTotal
		if p, ok := firstChange(live, edits); ok {
			cached = min(cached, fixed+prefixTokens(live, p, counter))
		}
		rep.Requests++
		rep.PromptTokens += total
		rep.PeakTokens = max(rep.PeakTokens, total)
		rep.InputCostUSD += inputCost(prices, cached, total-cached)
		rep.BaselinePromptTokens += baseTotal
		rep.BaselinePeakTokens = max(rep.BaselinePeakTokens, baseTotal)
		rep.BaselineInputCostUSD += inputCost(prices, basePrev, baseTotal-basePrev)
		prevTotal, basePrev = total, baseTotal
		return nil
	}
	baseTotal = fixed
	for i := range rec.Messages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if rec.Messages[i].Role == conv.RoleAssistant && i > 0 {
			if err := request(true); err != nil {
				return nil, err
			}
		}
		m := rec.Messages[i]
		m.Blocks = cloneBlocks(m.Blocks)
		live.Append(m)
		if ts, ok := st.(*transcript.Store); ok {
			if err := ts.Append(ctx, live.Messages[len(live.Messages)-1]); err != nil {
				return nil, err
			}
		}
		baseTotal += conv.MessageTokens(&rec.Messages[i], counter)
	}
	if err := request(false); err != nil {
		return nil, err
	}
	rep.TokensBefore = fixed + messageTokens(rec.Messages, counter)
	rep.TokensAfter = fixed + messageTokens(live.Messages, counter)
	if rep.BaselineInputCostUSD > 0 {
		rep.CostRatio = rep.InputCostUSD / rep.BaselineInputCostUSD
	}
	return live, checkRecall(rec, live, st, rep)
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

func messageTokens(ms []conv.Message, counter conv.Counter) int {
	n := 0
	for i := range ms {
		n += conv.MessageTokens(&ms[i], counter)
	}
	return n
}

// position is a block's place: message and block index.
type position struct{ msg, blk int }

// firstChange is the earliest place an edit of this step changed.
func firstChange(c *conv.Conversation, edits []conv.Edit) (position, bool) {
	best, found := position{}, false
	consider := func(p position) {
		if !found || p.msg < best.msg || p.msg == best.msg && p.blk < best.blk {
			best, found = p, true
		}
	}
	for _, e := range edits {
		switch e.Kind {
		case conv.EditRung:
			for _, b := range e.Blocks {
				if i, j := c.Find(b.ID); i >= 0 {
					consider(position{i, j})
				}
			}
		case conv.EditReplace:
			consider(position{e.From, 0})
		}
	}
	return best, found
}

// prefixTokens counts the messages before p and the blocks before it in
// its message.
func prefixTokens(c *conv.Conversation, p position, counter conv.Counter) int {
	n := messageTokens(c.Messages[:min(p.msg, len(c.Messages))], counter)
	if p.msg < len(c.Messages) {
		for j := 0; j < p.blk; j++ {
			n += conv.BlockTokens(&c.Messages[p.msg].Blocks[j], counter)
		}
	}
	return n
}

// inputCost bills a prompt of cached tokens read from the cache and
// written tokens sent after them (written to the cache, or plain input
// without one).
func inputCost(t pricing.Table, cached, written int) float64 {
	if !t.Caches() {
		return t.Cost(cached+written, 0, 0, 0)
	}
	return t.Cost(0, written, cached, 0)
}

func cloneBlocks(bs []conv.Block) []conv.Block {
	if bs == nil {
		return nil
	}
	out := make([]conv.Block, len(bs))
	for i := range bs {
		out[i] = bs[i].Clone()
	}
	return out
}
