package main

import (
	"github.com/ctxkit/ctxkit/mcp"
	"github.com/spf13/cobra"
	"os"
	"time"
)

func newMCPCmd() *cobra.Command {
	var dsn string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the recall tool over MCP stdio, reading ctxkit serve's store",
		Long: `ctxkit mcp serves the recall tool over the Model Context Protocol on stdin/stdout,
so an agent behind ctxkit serve can get back a tool result the proxy cleared:

  claude mcp add ctxkit -- ctxkit mcp

For Codex, add it under [mcp_servers.ctxkit] with command = "ctxkit", args = ["mcp"].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, err := openStore(cmd.Context(), dsn)
			if err != nil {
				return err
			}
			defer st.Close()
			// The version ctxkit --version prints, not the module's "(devel)".
			// Requests a client wrote before closing its end are answered.
			return mcp.New(st, version()).Run(cmd.Context(), mcp.Drained(os.Stdin, os.Stdout, 30*time.Second))
		},
	}
	cmd.Flags().StringVar(&dsn, "store", "", "state store: a SQLite file path (default ~/.ctxkit/serve.db) or a postgres:// URL")
	return cmd
}
