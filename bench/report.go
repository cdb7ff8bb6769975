package bench

import (
	"fmt"
	"io"
	"math"
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
	Name               string  `json:"name"`
	CostUSD            float64 `json:"cost_usd"`
	CostVsNone         float64 `json:"cost_vs_none"`
	CostVsBound        float64 `json:"cost_vs_bound"`
	InputTokens        int     `json:"input_tokens"`
	CacheWriteTokens   int     `json:"cache_write_tokens"`
	CacheReadTokens    int     `json:"cache_read_tokens"`
	OutputTokens       int     `json:"output_tokens"`
	EvidenceRecall     float64 `json:"evidence_recall"`
	EvidenceRecallV1   float64 `json:"evidence_recall_v1"`
	SummaryCostUSD     float64 `json:"summary_cost_usd"`
	Recalls            int     `json:"recalls"`
	TTLExpiries        int     `json:"ttl_expiries"`
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
	CostUSD          float64 `json:"cost_usd"`
	EvidenceRecall   float64 `json:"evidence_recall"`
	PeakContext      int     `json:"peak_context_tokens"`
	TurnsOverWindow  int     `json:"turns_over_window"`
	Compactions      int     `json:"compactions"`
	TTLExpiries      int     `json:"ttl_expiries,omitempty"`
	Recalls          int     `json:"recalls,omitempty"`
	ContextPerTurn   []int   `json:"context_per_turn"`
	CompactionsAt    []int   `json:"compaction_turns,omitempty"`
	InvalidRequests  int     `json:"invalid_requests,omitempty"`
	SummarizerCalls  int     `json:"summarizer_calls,omitempty"`
	TurnsWithEvidenc int     `json:"turns_with_evidence"`
}

// SessionReport is every strategy's run of one session.
type SessionReport struct {
	Session    string       `json:"session"`
	Turns      int          `json:"turns"`
	Strategies []SessionRun `json:"strategies"`
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
		sr := StrategyReport{Name: f.Name, WorstSessionRecall: 1}
		var cpu []time.Duration
		var recallSum, recallV1Sum float64
		termTurns, termTurnsV1 := 0, 0
		for _, run := range rs {
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
			termTurns += run.TermTurns
			recallV1Sum += run.RecallV1 * float64(run.TermTurnsV1)
			termTurnsV1 += run.TermTurnsV1
			sr.SummaryCostUSD += run.SummaryCost
			sr.Recalls += run.Recalls
			sr.TTLExpiries += run.TTLExpiries
			if run.TermTurns > 0 && run.Recall < sr.WorstSessionRecall {
				sr.WorstSessionRecall, sr.WorstSession = run.Recall, run.Session
			}
			for _, t := range run.Turns {
				cpu = append(cpu, t.CPU)
			}
		}
		sr.EvidenceRecall, sr.EvidenceRecallV1 = 1, 1
		if termTurns > 0 {
			sr.EvidenceRecall = recallSum / float64(termTurns)
		}
		if termTurnsV1 > 0 {
			sr.EvidenceRecallV1 = recallV1Sum / float64(termTurnsV1)
		}
		sr.OverheadMsP50 = float64(percentile(cpu, 50)) / 1e6
		sr.OverheadMsP99 = float64(percentile(cpu, 99)) / 1e6
		r.Strategies = append(r.Strategies, sr)
	}
	ratio := func(name string) float64 {
		for _, s := range r.Strategies {
			if s.Name == name {
				return s.CostUSD
			}
		}
		return 0
	}
	none, bound := ratio("none"), ratio("bound")
	for i := range r.Strategies {
		if none > 0 {
			r.Strategies[i].CostVsNone = round(r.Strategies[i].CostUSD / none)
		}
		if bound > 0 {
			r.Strategies[i].CostVsBound = round(r.Strategies[i].CostUSD / bound)
		}
	}
	for _, s := range sessions {
		if sentAt(s.Conv, len(s.Conv.Messages)-1).IsZero() {
			r.Untimed = append(r.Untimed, s.Name)
		}
		sr := SessionReport{Session: s.Name}
		for _, run := range runs {
			if run.Session != s.Name {
				continue
			}
			sr.Turns = len(run.Turns)
			one := SessionRun{
				Strategy: run.Strategy, CostUSD: run.Total.USD, EvidenceRecall: run.Recall, PeakContext: run.Peak,
				TurnsOverWindow: run.OverWindow, Compactions: run.Compactions, InvalidRequests: run.Invalid,
				SummarizerCalls: run.SummarizerCalls, TurnsWithEvidenc: run.TermTurns,
				TTLExpiries: run.TTLExpiries, Recalls: run.Recalls,
			}
			for i, t := range run.Turns {
				one.ContextPerTurn = append(one.ContextPerTurn, t.Prompt)
				if t.Compactions > 0 {
					one.CompactionsAt = append(one.CompactionsAt, i)
				}
			}
			sr.Strategies = append(sr.Strategies, one)
		}
		r.PerSession = append(r.PerSession, sr)
	}
	return r
}

func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// WriteTable prints the report as a table, one row per strategy.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d session(s), window %d tokens, pricing %s\n", r.Sessions, r.Window, r.Pricing)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcost $\tvs none\tvs bound\trecall\tworst\tpeak ctx\tover win\tcompact\toverhead p50/p99 ms\tinvalid\t")
	for _, s := range r.Strategies {
		fmt.Fprintf(tw, "%s\t%.4f\t%.3f×\t%.3f×\t%.3f\t%.3f\t%d\t%d\t%d\t%.3f / %.3f\t%d\t\n",
			s.Name, s.CostUSD, s.CostVsNone, s.CostVsBound, s.EvidenceRecall, s.WorstSessionRecall,
			s.PeakContextTokens, s.TurnsOverWindow, s.Compactions, s.OverheadMsP50, s.OverheadMsP99, s.InvalidRequests)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, strings.ToUpper(r.Note[:1])+r.Note[1:]+".")
	return err
}
