package main

import (
	"bytes"
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
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/judge"
	"github.com/ctxkit/ctxkit/outfile"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/secret"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

func newBenchCmd() *cobra.Command {
	var (
		window     int
		priceName  string
		strategies string
		asJSON     bool
		wide       bool
		htmlOut    string
		free       bool
		force      bool
		keepValue  float64
		frontier   []float64
		jf         judgeFlags
		mine       mineFlags
		pf         proxyFlags
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
searched recursively for session files (any format ctxkit imports). With
--mine it replays the sessions recorded on this machine (see ctxkit sessions;
--agent and --since select them), with progress on standard error; nothing
leaves the machine, and the report names sessions without their content
unless --html is asked for.

With --judge it also runs a consistency test where a model
is reachable: probe questions generated from each session (recall, artifact,
continuation, decision) answered from the full context and from each
strategy's, and a judge model deciding whether the two answers agree. Without
a key (or --base-url) it says so on stderr and skips that section.`,
		Example: `  ctxkit bench
  ctxkit bench ~/.claude/projects/-home-me-repo --window 64000 --pricing anthropic
  ctxkit bench sessions/ --strategies none,ctxkit,gemini --json > report.json
  ctxkit bench sessions/ --html report.html`,
		RunE: func(cmd *cobra.Command, args []string) error {
			table, ok := pricing.ByName(priceName)
			if !ok {
				return fmt.Errorf("unknown --pricing %q (known: %s)", priceName, pricing.Names())
			}
			dest := outfile.Options{Inputs: args, Force: force, Flag: "--html"}
			if htmlOut != "" {
				if err := outfile.Check(htmlOut, dest); err != nil {
					return err
				}
			}
			if err := jf.validate(); err != nil {
				return err
			}
			for _, v := range frontier {
				if err := engine.CheckKeepValue(v); err != nil {
					return fmt.Errorf("--frontier: %w", err)
				}
			}
			factories, stopProxy, err := pf.factories(cmd, strategies)
			if err != nil {
				return err
			}
			defer stopProxy()
			for _, v := range frontier {
				factories = append(factories, bench.CtxkitAt(v))
			}
			var sessions []bench.Session
			if mine.on {
				sessions, err = mine.load(cmd, args, jf.on)
			} else {
				sessions, err = loadSessions(cmd, args)
			}
			if err != nil {
				return err
			}
			opts := bench.Options{
				Window: window, Pricing: table, Counter: tokens.NewEstimator(), Strategies: factories,
				Summarize: extractiveSummary, FreeSummaries: free, KeepValue: keepValue,
			}
			start := time.Now()
			// Progress for any run of the user's sessions (the demo is quick).
			runs, err := replaySessions(cmd, sessions, opts, mine.on || len(args) > 0)
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
				dest.Inputs = benchInputs(sessions)
				if err := writeHTMLReport(htmlOut, dest, rep, charts...); err != nil {
					return err
				}
			}
			// The report is written whole, with any key value that a
			// recording holds redacted.
			var out bytes.Buffer
			if asJSON {
				enc := json.NewEncoder(&out)
				enc.SetIndent("", "  ")
				var v any = rep
				if jrep != nil {
					v = struct {
						*bench.Report
						Judge *judge.Report `json:"judge"`
					}{rep, jrep}
				}
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				if err := rep.WriteTableWidth(&out, wide); err != nil {
					return err
				}
				if mine.on {
					mine.summary(&out, rep, table)
				}
				if jrep != nil {
					if err := jrep.WriteTable(&out); err != nil {
						return err
					}
				}
				fmt.Fprintf(&out, "Replayed in %s.\n", time.Since(start).Round(time.Millisecond))
			}
			if _, err := cmd.OutOrStdout().Write(secret.FromEnv(os.Environ()).Bytes(out.Bytes())); err != nil {
				return err
			}
			if len(rep.Failures) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "ctxkit bench: %d of %d runs failed (listed in the report); their figures are left out\n", len(rep.Failures), len(sessions)*len(factories))
				return exitError(1)
			}
			return nil
		},
	}
	f := cmd.Flags()
	windowVar(f, &window, engine.DefaultWindow, "context window in tokens (the engine's default for an unknown model); requests larger than this count as over the window")
	f.StringVar(&priceName, "pricing", "anthropic", "pricing table: anthropic (5-minute cache), anthropic-1h, openai (automatic caching), openai-write (automatic caching with a 1.25× write premium), gemini (implicit caching) or nocache")
	f.StringVar(&strategies, "strategies", "all", "comma-separated strategies to run")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	f.BoolVar(&wide, "wide", false, "print every column of the table (about 220 characters wide); by default it fits 100")
	f.BoolVar(&free, "free-summaries", false, "bill compactions at nothing (the figures before summaries were billed as model calls)")
	keepValueVar(f, &keepValue)
	f.Float64SliceVar(&frontier, "frontier", nil, "also replay ctxkit at these keep values (comma-separated) and draw its cost–recall curve in the report, e.g. 0.5,2,4")
	f.StringVar(&htmlOut, "html", "", "also write a self-contained HTML report to this file")
	f.BoolVar(&force, "force", false, "with --html: write in place onto a device, a FIFO or through a symbolic link instead of refusing")
	jf.register(f)
	mine.register(f, true)
	pf.register(f)
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
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s: %w", a, pe.Err)
			}
			return nil, err
		}
		if !st.IsDir() {
			if ids := importer.DatabaseSessions(cmd.Context(), a); len(ids) > 0 {
				paths = append(paths, ids...) // every session of an opencode database
				continue
			}
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
	if len(paths) == 0 {
		return nil, fmt.Errorf("no session files in %s: bench replays recordings of Claude Code, Codex, mini-SWE-agent, SWE-agent, OpenHands or provider request bodies", strings.Join(args, ", "))
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
		ss := benchSessions(p, s.Conv)
		for i := range ss {
			ss[i].Family = s.Format
		}
		sessions = append(sessions, ss...)
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("none of the %d files could be imported as a session: %w", len(paths), errors.Join(errs...))
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

// writeHTMLReport writes the self-contained HTML report to path, with any
// key value a recording holds redacted.
func writeHTMLReport(path string, dest outfile.Options, rep *bench.Report, extra ...bench.Chart) error {
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf, extra...); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return outfile.Write(path, secret.FromEnv(os.Environ()).Bytes(buf.Bytes()), dest)
}

// benchInputs are the files the sessions were read from: what an output
// must not overwrite.
func benchInputs(sessions []bench.Session) []string {
	out := make([]string, 0, 2*len(sessions))
	for _, s := range sessions {
		// A session's name may carry its epoch or its id in a database
		// (" (epoch 1 of 2)", "#ses_1"): the file is what must be kept.
		name, _, _ := strings.Cut(s.Name, " (epoch ")
		file, _, _ := strings.Cut(name, "#")
		out = append(out, s.Name, name, file)
	}
	return out
}
