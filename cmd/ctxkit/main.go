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

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
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
	}
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
