// Command ctxkit is the context engine's command line: the coding agent,
// the replay benchmark, and tools to inspect, convert and compact recorded
// agent sessions.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/sandbox"
)

func main() {
	// The sandbox's helper mode: confine this process, then become the
	// command (package sandbox). It must run before anything else.
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := newRootCmd()
	// A failed write to standard output (a full disk, /dev/full, a closed
	// pipe) fails the command, whichever command it is.
	stdout := &checkedWriter{f: os.Stdout}
	root.SetOut(stdout)
	err := root.ExecuteContext(ctx)
	if err == nil && stdout.err != nil {
		err = fmt.Errorf("writing the output: %w", stdout.err)
	}
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintln(os.Stderr, "ctxkit:", err)
		os.Exit(1)
	}
}

// exitError ends the program with a status and no further message, for
// commands that have already said what went wrong.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ctxkit",
		Short:         "Context engineering for long-running coding agents",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
		Example: `  ctxkit bench                                  # compare context strategies on the demo session
  ctxkit inspect ~/.claude/projects/-home-me-repo/5c0375b4.jsonl
  ctxkit agent                                  # the coding agent, in the current folder`,
	}
	root.SetVersionTemplate("ctxkit {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		// Each subcommand lives in its own file: inspect.go, convert.go,
		// compact.go, recall.go, bench.go, agent.go.
		newInspectCmd(),
		newConvertCmd(),
		newRecallCmd(),
		newCompactCmd(),
		newAgentCmd(),
		newBenchCmd(),
		newServeCmd(),
		newMCPCmd(),
		newSessionsCmd(),
	)
	return root
}

// checkedWriter is standard output, remembering the first write error.
type checkedWriter struct {
	f   *os.File
	err error
}

func (w *checkedWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil && w.err == nil {
		w.err = errors.Unwrap(err)
		if w.err == nil {
			w.err = err
		}
	}
	return n, err
}

// File is the underlying file, for terminal detection.
func (w *checkedWriter) File() *os.File { return w.f }

// version is the module version ctxkit was built as (go install
// module@version), else the commit it was built from, else "devel".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

// versionOf is version for the build information bi. A build without
// version control information (-buildvcs=false, or outside a git checkout)
// says so, so that nobody looks for a commit that is not there.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v != "" && v != "(devel)" {
		return v + " (" + bi.GoVersion + ")"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel (" + bi.GoVersion + "; built without version control information, so no commit)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel " + rev + " (" + bi.GoVersion + ")"
}
