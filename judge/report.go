package judge

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ctxkit/ctxkit/bench"
)

// WriteTable prints the report as the "judge: agreement per strategy"
// section of the bench table.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "\njudge: agreement per strategy (answers %s, judge %s; %d probe(s) over %d session(s); reference %q, the full context)\n",
		r.Model, r.JudgeModel, r.Probes, r.Sessions, r.Reference)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "strategy\tagreement\t")
	for _, k := range Kinds() {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw, "judged\tidentical\terrors\t")
	for _, s := range r.Strategies {
		fmt.Fprintf(tw, "%s\t%s\t", s.Name, share(s.Agreement))
		for _, k := range Kinds() {
			v, ok := s.ByKind[k]
			if !ok {
				fmt.Fprint(tw, "–\t")
				continue
			}
			fmt.Fprintf(tw, "%.3f\t", v)
		}
		fmt.Fprintf(tw, "%d/%d\t%d\t%d\t\n", s.Judged, s.Probes, s.Identical, s.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "Agreement: the share of probes whose answer from the strategy's context the judge found consistent with the answer from the full context (%d model call(s)); identical contexts count as agreeing without a call.\n", r.Calls)
	return err
}

func share(a *float64) string {
	if a == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f", *a)
}

// Chart is the agreement per strategy as a bar chart for the HTML report.
// Strategies with nothing judged show no bar.
func (r *Report) Chart() bench.Chart {
	c := bench.Chart{
		Title:  "Judge: answers agreeing with the full context",
		YLabel: "agreement",
		Note: fmt.Sprintf("The same %d probe question(s) (recall, artifact, continuation, decision) answered by %s from each strategy's context and from the full context; %s judged whether the two answers agree.",
			r.Probes, r.Model, r.JudgeModel),
	}
	for _, s := range r.Strategies {
		v := 0.0
		if s.Agreement != nil {
			v = *s.Agreement
		}
		c.Names = append(c.Names, s.Name)
		c.Values = append(c.Values, v)
	}
	return c
}
