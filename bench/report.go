package bench

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

func requestConv(req *llm.Request) *conv.Conversation {
	return &conv.Conversation{System: req.System, Tools: req.Tools, Messages: req.Messages}
}

// StrategyReport is one strategy's figures over all sessions.
type StrategyReport struct {
	Name string `json:"name"`
	// KeepValue is the knob a ctxkit row ran at (engine.Config.KeepValue);
	// the rows that have one are ctxkit's cost–recall curve.
	KeepValue        float64 `json:"keep_value,omitempty"`
	Failed           int     `json:"failed_sessions,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	CostVsNone       float64 `json:"cost_vs_none"`
	CostVsBound      float64 `json:"cost_vs_bound"`
	InputTokens      int     `json:"input_tokens"`
	CacheWriteTokens int     `json:"cache_write_tokens"`
	CacheReadTokens  int     `json:"cache_read_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	EvidenceRecall   float64 `json:"evidence_recall"`
	// VisibleRecall is the share of evidence terms present in the
	// context as sent, with no recall round trip; EvidenceRecall counts
	// those a (billed) recall brings back too.
	VisibleRecall    float64 `json:"visible_recall"`
	EvidenceRecallV1 float64 `json:"evidence_recall_v1"`
	SummaryCostUSD   float64 `json:"summary_cost_usd"`
	Recalls          int     `json:"recalls"`
	// VisibleLost splits 1 − VisibleRecall by where the missing terms
	// are (Run.Lost).
	VisibleLost Lost `json:"visible_lost"`
	// RecalledAgain counts originals fetched by a recall after an earlier
	// recall had fetched them (Run.RecalledAgain).
	RecalledAgain int `json:"recalled_again"`
	// RecallCostUSD is what the recall round trips cost (Run.RecallCost).
	RecallCostUSD      float64 `json:"recall_cost_usd"`
	TTLExpiries        int     `json:"ttl_expiries"`
	CI95               CI95    `json:"ci95"`
	WorstSessionRecall float64 `json:"worst_session_recall"`
	WorstSession       string  `json:"worst_session"`
	PeakContextTokens  int     `json:"peak_context_tokens"`
	TurnsOverWindow    int     `json:"turns_over_window"`
	Compactions        int     `json:"compactions"`
	SummarizerCalls    int     `json:"summarizer_calls"`
	InvalidRequests    int     `json:"invalid_requests"`
	OverheadMsP50      float64 `json:"overhead_ms_p50"`
	OverheadMsP99      float64 `json:"overhead_ms_p99"`
}

// SessionRun is one strategy on one session, with the per-turn series the
// HTML report draws.
type SessionRun struct {
	Strategy         string  `json:"strategy"`
	Failed           string  `json:"failed,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
	EvidenceRecall   float64 `json:"evidence_recall"`
	VisibleRecall    float64 `json:"visible_recall"`
	PeakContext      int     `json:"peak_context_tokens"`
	TurnsOverWindow  int     `json:"turns_over_window"`
	Compactions      int     `json:"compactions"`
	TTLExpiries      int     `json:"ttl_expiries,omitempty"`
	Recalls          int     `json:"recalls,omitempty"`
	RecalledAgain    int     `json:"recalled_again,omitempty"`
	VisibleLost      Lost    `json:"visible_lost"`
	ContextPerTurn   []int   `json:"context_per_turn"`
	CompactionsAt    []int   `json:"compaction_turns,omitempty"`
	ExpiriesAt       []int   `json:"ttl_expiry_turns,omitempty"`
	InvalidRequests  int     `json:"invalid_requests,omitempty"`
	SummarizerCalls  int     `json:"summarizer_calls,omitempty"`
	TurnsWithEvidenc int     `json:"turns_with_evidence"`
}

// SessionReport is every strategy's run of one session.
type SessionReport struct {
	Session    string       `json:"session"`
	Family     string       `json:"family"`
	Turns      int          `json:"turns"`
	Strategies []SessionRun `json:"strategies"`
	Recorded   *Recorded    `json:"recorded,omitempty"`
}

// Report is the result of a benchmark run, in the shape `ctxkit bench
// --json` prints.
type Report struct {
	Date       string           `json:"date,omitempty"`
	Machine    string           `json:"machine,omitempty"`
	Window     int              `json:"window"`
	Pricing    string           `json:"pricing"`
	Sessions   int              `json:"sessions"`
	Note       string           `json:"note"`
	Strategies []StrategyReport `json:"strategies"`
	PerSession []SessionReport  `json:"per_session"`
	// Untimed names the sessions whose recording has no timestamps: no
	// cache entry could expire in them.
	Untimed []string `json:"sessions_without_timestamps"`
	// Families breaks the figures down by agent family and by session
	// length (short: none's peak under half the window), with intervals.
	Families []Group `json:"families"`
	// Flips are the ranking flips over all sessions (see Group.Flips).
	Flips []string `json:"ranking_flips,omitempty"`
	// Recorded compares, over the sessions that recorded the provider's
	// usage, what was billed with what the simulator bills for none.
	Recorded *Recorded `json:"recorded,omitempty"`
	// Bound says how the bound was found and how far it can be from the
	// optimum of its family of schedules.
	Bound *BoundNote `json:"bound,omitempty"`
	// Failures are the runs that failed, with the reason; they count in
	// no figure above.
	Failures []Failure `json:"failures,omitempty"`
}

// Failure is one strategy that could not replay one session.
type Failure struct {
	Strategy string `json:"strategy"`
	Session  string `json:"session"`
	Reason   string `json:"reason"`
}

// NewReport aggregates runs (as Replay returns them) into a report.
func NewReport(runs []Run, sessions []Session, opts Options) *Report {
	r := &Report{
		Window: opts.Window, Pricing: opts.Pricing.Name, Sessions: len(sessions),
		Note: "peer strategies use ctxkit's extractive summarizer in place of their LLM summary, so all strategies are compared on equal terms",
	}
	byStrategy := make(map[string][]Run)
	for _, run := range runs {
		byStrategy[run.Strategy] = append(byStrategy[run.Strategy], run)
	}
	for _, f := range opts.Strategies {
		rs := byStrategy[f.Name]
		sr := StrategyReport{Name: f.Name, KeepValue: keepValueOf(f.Name, opts), WorstSessionRecall: 1}
		var cpu []time.Duration
		var recallSum, visibleSum, recallV1Sum float64
		var lostSum Lost
		termTurns, termTurnsV1 := 0, 0
		for _, run := range rs {
			if run.Failed != "" {
				sr.Failed++
				r.Failures = append(r.Failures, Failure{Strategy: run.Strategy, Session: run.Session, Reason: run.Failed})
				continue
			}
			sr.CostUSD += run.Total.USD
			sr.InputTokens += run.Total.Input
			sr.CacheWriteTokens += run.Total.CacheWrite
			sr.CacheReadTokens += run.Total.CacheRead
			sr.OutputTokens += run.Total.Output
			sr.PeakContextTokens = max(sr.PeakContextTokens, run.Peak)
			sr.TurnsOverWindow += run.OverWindow
			sr.Compactions += run.Compactions
			sr.SummarizerCalls += run.SummarizerCalls
			sr.InvalidRequests += run.Invalid
			recallSum += run.Recall * float64(run.TermTurns)
			visibleSum += run.VisibleRecall * float64(run.TermTurns)
			lostSum = lostSum.add(run.Lost, float64(run.TermTurns))
			termTurns += run.TermTurns
			recallV1Sum += run.RecallV1 * float64(run.TermTurnsV1)
			termTurnsV1 += run.TermTurnsV1
			sr.SummaryCostUSD += run.SummaryCost
			sr.Recalls += run.Recalls
			sr.RecalledAgain += run.RecalledAgain
			sr.RecallCostUSD += run.RecallCost
			sr.TTLExpiries += run.TTLExpiries
			if run.TermTurns > 0 && run.Recall < sr.WorstSessionRecall {
				sr.WorstSessionRecall, sr.WorstSession = run.Recall, run.Session
			}
			for _, t := range run.Turns {
				cpu = append(cpu, t.CPU)
			}
		}
		sr.EvidenceRecall, sr.VisibleRecall, sr.EvidenceRecallV1 = 1, 1, 1
		if termTurns > 0 {
			sr.EvidenceRecall = recallSum / float64(termTurns)
			sr.VisibleRecall = visibleSum / float64(termTurns)
			sr.VisibleLost = Lost{}.add(lostSum, 1/float64(termTurns))
		}
		if termTurnsV1 > 0 {
			sr.EvidenceRecallV1 = recallV1Sum / float64(termTurnsV1)
		}
		sr.OverheadMsP50 = float64(percentile(cpu, 50)) / 1e6
		sr.OverheadMsP99 = float64(percentile(cpu, 99)) / 1e6
		r.Strategies = append(r.Strategies, sr)
	}
	// Cost ratios compare like with like: a strategy that failed on a
	// session is compared with none (and bound) on the sessions it
	// completed only, so one failure moves no other figure.
	completed := func(name string) map[string]float64 {
		usd := make(map[string]float64)
		for _, run := range byStrategy[name] {
			if run.Failed == "" {
				usd[run.Session] = run.Total.USD
			}
		}
		return usd
	}
	none, bound := completed("none"), completed("bound")
	ratio := func(runs []Run, base map[string]float64) float64 {
		var c, b float64
		for _, run := range runs {
			if u, ok := base[run.Session]; ok && run.Failed == "" {
				c, b = c+run.Total.USD, b+u
			}
		}
		if b == 0 {
			return 0
		}
		return round(c / b)
	}
	for i := range r.Strategies {
		rs := byStrategy[r.Strategies[i].Name]
		r.Strategies[i].CostVsNone = ratio(rs, none)
		r.Strategies[i].CostVsBound = ratio(rs, bound)
	}
	for _, s := range sessions {
		if sentAt(s.Conv, len(s.Conv.Messages)-1).IsZero() {
			r.Untimed = append(r.Untimed, s.Name)
		}
		sr := SessionReport{Session: s.Name, Family: familyOf(s)}
		for _, run := range runs {
			if run.Session != s.Name {
				continue
			}
			if run.Failed != "" {
				sr.Strategies = append(sr.Strategies, SessionRun{Strategy: run.Strategy, Failed: run.Failed})
				continue
			}
			sr.Turns = len(run.Turns)
			one := SessionRun{
				Strategy: run.Strategy, CostUSD: run.Total.USD, EvidenceRecall: run.Recall, VisibleRecall: run.VisibleRecall, PeakContext: run.Peak,
				TurnsOverWindow: run.OverWindow, Compactions: run.Compactions, InvalidRequests: run.Invalid,
				SummarizerCalls: run.SummarizerCalls, TurnsWithEvidenc: run.TermTurns,
				TTLExpiries: run.TTLExpiries, Recalls: run.Recalls, RecalledAgain: run.RecalledAgain, VisibleLost: run.Lost,
			}
			for i, t := range run.Turns {
				one.ContextPerTurn = append(one.ContextPerTurn, t.Prompt)
				if t.Compactions > 0 {
					one.CompactionsAt = append(one.CompactionsAt, i)
				}
				if t.Expired {
					one.ExpiriesAt = append(one.ExpiriesAt, i)
				}
			}
			sr.Strategies = append(sr.Strategies, one)
		}
		r.PerSession = append(r.PerSession, sr)
	}
	r.breakdown(runs, sessions, opts)
	r.recorded(runs, sessions)
	r.boundNote(runs, opts)
	return r
}

func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// WriteTable prints the report as a table, one row per strategy, then the
// breakdowns, the ranking flips, the bound's gap and the recorded usage.
func (r *Report) WriteTable(w io.Writer) error { return r.WriteTableWidth(w, true) }

// WriteTableWidth is WriteTable with every column when wide, else with the
// columns that fit 100 characters (cost and recall with their intervals,
// recall trips, peak context, requests over the window); the rest are in
// the wide table, the JSON and the HTML report.
func (r *Report) WriteTableWidth(w io.Writer, wide bool) error {
	fmt.Fprintf(w, "%d session(s), window %d tokens, pricing %s\n", r.Sessions, r.Window, r.Pricing)
	if !wide {
		if err := r.writeNarrow(w); err != nil {
			return err
		}
		return r.writeRest(w, false)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcost $\tvs none\t95% CI\tvs bound\trecall\t95% CI\tvisible\tnot visible\trecall v1\tworst\trecalls\tagain\trecall $\tsummary $\tpeak ctx\tover win\tcompact\tTTL exp\tp50/p99 ms\tinvalid\t")
	for _, s := range r.Strategies {
		if s.Failed > 0 {
			s.Name += fmt.Sprintf(" (FAILED on %d)", s.Failed)
		}
		f := r.figures(s)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%.3f / %.3f\t%d\t\n",
			s.Name, f.cost, f.vsNone, f.costCI, f.vsBound, f.recall, f.recallCI, f.visible, f.lost, f.recallV1, f.worst,
			s.Recalls, s.RecalledAgain, s.RecallCostUSD, s.SummaryCostUSD, s.PeakContextTokens, s.TurnsOverWindow, s.Compactions, s.TTLExpiries,
			s.OverheadMsP50, s.OverheadMsP99, s.InvalidRequests)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeRest(w, true)
}

// tableFigures are a strategy's figures as the table prints them, a dash
// where there is no figure: a strategy that failed on every session, a
// ratio to a strategy that was not run, an interval not computed.
type tableFigures struct {
	cost, vsNone, costCI, vsBound, recall, recallCI, visible, recallV1, worst string
	// lost is VisibleLost: cleared / compacted / gone.
	lost string
}

func (r *Report) figures(s StrategyReport) tableFigures {
	dash := func(ok bool, format string, v ...any) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf(format, v...)
	}
	ran := s.Failed < r.Sessions // completed at least one session
	hasCI := s.CI95 != (CI95{})
	return tableFigures{
		cost:     dash(ran, "%.2f", s.CostUSD),
		vsNone:   dash(ran && s.CostVsNone > 0, "%.3f×", s.CostVsNone),
		costCI:   dash(ran && hasCI, "%.3f–%.3f", s.CI95.CostVsNone.Low, s.CI95.CostVsNone.High),
		vsBound:  dash(ran && s.CostVsBound > 0, "%.3f×", s.CostVsBound),
		recall:   dash(ran, "%.3f", s.EvidenceRecall),
		recallCI: dash(ran && hasCI, "%.3f–%.3f", s.CI95.Recall.Low, s.CI95.Recall.High),
		visible:  dash(ran, "%.3f", s.VisibleRecall),
		lost:     dash(ran, "%.3f / %.3f / %.3f", s.VisibleLost.Cleared, s.VisibleLost.Compacted, s.VisibleLost.Gone),
		recallV1: dash(ran, "%.3f", s.EvidenceRecallV1),
		worst:    dash(ran, "%.3f", s.WorstSessionRecall),
	}
}

// writeNarrow prints the strategy table's columns that fit 100 characters.
func (r *Report) writeNarrow(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcost $\tvs none\t95% CI\trecall\tvisible\trecalls\tpeak ctx\tover win\t")
	for _, s := range r.Strategies {
		if s.Failed > 0 {
			s.Name += fmt.Sprintf(" (FAILED on %d)", s.Failed)
		}
		f := r.figures(s)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t\n",
			s.Name, f.cost, f.vsNone, f.costCI, f.recall, f.visible, s.Recalls, s.PeakContextTokens, s.TurnsOverWindow)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "(every column: --wide, --json or --html)")
	return err
}

// writeRest prints what follows the strategy table: failures, ranking
// flips, the breakdowns (as cost / recall when not wide), the bound's gap
// and the recorded usage.
func (r *Report) writeRest(w io.Writer, wide bool) error {
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAILED: %s on %s: %s (its row leaves that session out)\n", f.Strategy, f.Session, f.Reason)
	}
	for _, f := range r.Flips {
		fmt.Fprintf(w, "Ranking within the interval: %s.\n", f)
	}
	if len(r.Families) > 0 {
		what := "cost vs none [95% CI] / recall"
		if !wide {
			what = "cost vs none / recall"
		}
		fmt.Fprintf(w, "\nBy agent family and by session length (short: none's peak under half the window): %s\n", what)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "strategy")
		for _, g := range r.Families {
			fmt.Fprintf(tw, "\t%s (%d)", g.Label(), g.Sessions)
		}
		fmt.Fprintln(tw, "\t")
		for i, row := range r.Families[0].Rows {
			fmt.Fprint(tw, row.Name)
			for _, g := range r.Families {
				c := g.Rows[i]
				if !wide {
					fmt.Fprintf(tw, "\t%.2f / %.2f", c.CostVsNone, c.Recall)
					continue
				}
				fmt.Fprintf(tw, "\t%.2f [%.2f–%.2f] / %.2f", c.CostVsNone, c.CI95.CostVsNone.Low, c.CI95.CostVsNone.High, c.Recall)
			}
			fmt.Fprintln(tw, "\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, g := range r.Families {
			for _, f := range g.Flips {
				fmt.Fprintf(w, "%s: %s.\n", g.Label(), f)
			}
		}
	}
	if b := r.Bound; b != nil {
		fmt.Fprintf(w, "\nbound: $%.2f, %.1f%% above the floor $%.2f no schedule can beat (%s).\n", b.CostUSD, b.GapPct, b.FloorUSD, b.Method)
	}
	if f := r.Frontier(); len(f) > 1 {
		fmt.Fprintf(w, "\nctxkit's frontier: keep value, cost vs none, evidence recall / visible recall\n")
		for _, s := range f {
			fmt.Fprintf(w, "  %-6g %.3f×  %.3f / %.3f\n", s.KeepValue, s.CostVsNone, s.EvidenceRecall, s.VisibleRecall)
		}
		fmt.Fprintf(w, "Run at one with --keep-value V on ctxkit agent, serve or compact.\n")
	}
	if rc := r.Recorded; rc != nil {
		switch {
		case !wide:
			fmt.Fprintf(w, "\nRecorded vs simulated usage for none, %d session(s), %d responses: prompt %+.1f%%, cache read share %.3f recorded / %.3f simulated (per session with --wide).\n",
				rc.Sessions, rc.Responses, rc.ErrorPct.Prompt, rc.ErrorPct.ReadShareRecorded, rc.ErrorPct.ReadShareSimulated)
		default:
			fmt.Fprintf(w, "\nRecorded vs simulated usage for none, %d session(s), %d responses (before any recorded compaction):\n", rc.Sessions, rc.Responses)
			if err := writeRecorded(w, r.PerSession, rc); err != nil {
				return err
			}
		}
	}
	if len(r.Untimed) > 0 {
		fmt.Fprintf(w, "\n%d session(s) have no timestamps, so no cache entry expired in them: %s.\n", len(r.Untimed), strings.Join(baseNames(r.Untimed), ", "))
	}
	_, err := fmt.Fprintln(w, strings.ToUpper(r.Note[:1])+r.Note[1:]+".")
	return err
}

// writeRecorded prints the recorded-vs-simulated table.
func writeRecorded(w io.Writer, per []SessionReport, total *Recorded) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "session\tresponses\tinput rec/sim\tcache read rec/sim\tcache write rec/sim\tprompt error\tread error\twrite error\tread share rec/sim\t")
	row := func(name string, rc *Recorded) {
		fmt.Fprintf(tw, "%s\t%d\t%d / %d\t%d / %d\t%d / %d\t%+.1f%%\t%+.1f%%\t%+.1f%%\t%.3f / %.3f\t\n", name, rc.Responses,
			rc.Recorded.Input, rc.Simulated.Input, rc.Recorded.CacheRead, rc.Simulated.CacheRead,
			rc.Recorded.CacheWrite, rc.Simulated.CacheWrite, rc.ErrorPct.Prompt, rc.ErrorPct.CacheRead, rc.ErrorPct.CacheWrite,
			rc.ErrorPct.ReadShareRecorded, rc.ErrorPct.ReadShareSimulated)
	}
	for _, s := range per {
		if s.Recorded != nil {
			row(filepath.Base(s.Session), s.Recorded)
		}
	}
	for _, f := range RecordedByFamily(per) {
		row("total "+f.Family, &f)
	}
	row("total", total)
	return tw.Flush()
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// Frontier returns ctxkit's rows at their keep values (KeepValue set),
// cheapest first: the cost–recall curve the knob moves the default along.
func (r *Report) Frontier() []StrategyReport {
	var out []StrategyReport
	for _, s := range r.Strategies {
		if s.KeepValue != 0 && s.Failed == 0 {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b StrategyReport) int { return cmp.Compare(a.KeepValue, b.KeepValue) })
	return out
}
