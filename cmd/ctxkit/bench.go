package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/judge"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

func newBenchCmd() *cobra.Command {
	var (
		window     int
		priceName  string
		strategies string
		asJSON     bool
		htmlOut    string
		free       bool
		jf         judgeFlags
	)
	cmd := &cobra.Command{
		Use:   "bench [FILES or DIRS...]",
		Short: "Replay recorded sessions through every context strategy and compare cost and evidence recall",
		Long: `bench replays recorded agent sessions turn by turn through ctxkit's strategy
and models of its peers' (none, truncate, seed-micro, mask-10, anthropic-clear,
codex, gemini, ctxkit, reference, bound). For each it bills every request with a simulated
prompt cache and measures evidence recall: the share of the identifiers, paths,
numbers and error strings a turn uses that are still visible in what was sent.

With no files it replays the demo session embedded in ctxkit. Directories are
searched recursively for session files (any format ctxkit imports).

With --judge it also runs the consistency test (seed 002 §27.5) where a model
is reachable: probe questions generated from each session (recall, artifact,
continuation, decision) answered from the full context and from each
strategy's, and a judge model deciding whether the two answers agree. Without
a key (or --base-url) it says so on stderr and skips that section.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			table, ok := pricing.ByName(priceName)
			if !ok {
				return fmt.Errorf("unknown --pricing %q (known: %s)", priceName, pricing.Names())
			}
			if window <= 0 {
				return fmt.Errorf("--window must be positive, got %d", window)
			}
			if err := jf.validate(); err != nil {
				return err
			}
			factories, err := bench.Lookup(strategies)
			if err != nil {
				return err
			}
			sessions, err := loadSessions(cmd, args)
			if err != nil {
				return err
			}
			opts := bench.Options{
				Window: window, Pricing: table, Counter: tokens.NewEstimator(), Strategies: factories,
				Summarize: extractiveSummary, FreeSummaries: free,
			}
			start := time.Now()
			runs, err := bench.Replay(cmd.Context(), sessions, opts)
			if err != nil {
				return err
			}
			rep := bench.NewReport(runs, sessions, opts)
			rep.Date = time.Now().UTC().Format("2006-01-02")
			rep.Machine = fmt.Sprintf("%s/%s, %d CPU, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
			jrep, err := jf.run(cmd, sessions, opts)
			if err != nil {
				return err
			}
			if htmlOut != "" {
				var charts []bench.Chart
				if jrep != nil {
					charts = append(charts, jrep.Chart())
				}
				if err := writeHTMLReport(htmlOut, rep, charts...); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if jrep != nil {
					return enc.Encode(struct {
						*bench.Report
						Judge *judge.Report `json:"judge"`
					}{rep, jrep})
				}
				return enc.Encode(rep)
			}
			if err := rep.WriteTable(out); err != nil {
				return err
			}
			if jrep != nil {
				if err := jrep.WriteTable(out); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "Replayed in %s.\n", time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&window, "window", 200_000, "context window in tokens; requests larger than this count as over the window")
	f.StringVar(&priceName, "pricing", "anthropic", "pricing table: anthropic (5-minute cache), anthropic-1h, openai (automatic caching), openai-write (automatic caching with a 1.25× write premium) or nocache")
	f.StringVar(&strategies, "strategies", "all", "comma-separated strategies to run")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	f.BoolVar(&free, "free-summaries", false, "bill compactions at nothing (the figures before summaries were billed as model calls)")
	f.StringVar(&htmlOut, "html", "", "also write a self-contained HTML report to this file")
	jf.register(f)
	return cmd
}

// loadSessions imports every session named by args (files, or directories
// searched recursively), or the embedded demo session when there are none.
func loadSessions(cmd *cobra.Command, args []string) ([]bench.Session, error) {
	if len(args) == 0 {
		s, err := demoSession(cmd.Context())
		if err != nil {
			return nil, err
		}
		return []bench.Session{s}, nil
	}
	var paths []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			paths = append(paths, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(paths)
	var sessions []bench.Session
	var errs []error
	for _, p := range paths {
		s, err := importer.Load(cmd.Context(), p, importer.Options{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, w := range s.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "ctxkit bench: %s: %s\n", p, w)
		}
		sessions = append(sessions, bench.Session{Name: p, Conv: s.Conv, Family: s.Format})
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("no session could be imported: %w", errors.Join(errs...))
	}
	for _, err := range errs {
		fmt.Fprintf(cmd.ErrOrStderr(), "ctxkit bench: skipped: %v\n", err)
	}
	return sessions, nil
}

// extractiveSummary is the offline summarizer every strategy uses in the
// benchmark, ctxkit's own fallback summarizer.
func extractiveSummary(ctx context.Context, msgs []conv.Message) (string, error) {
	out, err := summarize.NewExtractive().Summarize(ctx, summarize.Input{Messages: msgs})
	if err != nil {
		return "", err
	}
	return out.Text, nil
}

// writeHTMLReport writes the self-contained HTML report to path.
func writeHTMLReport(path string, rep *bench.Report, extra ...bench.Chart) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteHTML(f, extra...); err != nil {
		f.Close()
		return fmt.Errorf("html report: %w", err)
	}
	return f.Close()
}
