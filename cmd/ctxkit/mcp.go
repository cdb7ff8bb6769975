package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/mcp"
	"github.com/ctxkit/ctxkit/serve"
	servestore "github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/spf13/cobra"
)

// mcpKeyEnvs are where ctxkit mcp looks for the credential the agent
// sends through ctxkit serve, in order.
var mcpKeyEnvs = []string{"CTXKIT_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}

func newMCPCmd() *cobra.Command {
	var dsn, keyEnv, keysFile, tenant, session string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the recall tool over MCP stdio, reading ctxkit serve's store",
		Long: `ctxkit mcp serves the recall tool over the Model Context Protocol on stdin/stdout,
so an agent behind ctxkit serve can get back a tool result the proxy cleared:

  claude mcp add ctxkit -- ctxkit mcp

It recalls only what the proxy cleared for the same tenant: the one of the
key in $CTXKIT_KEY, $ANTHROPIC_API_KEY, $ANTHROPIC_AUTH_TOKEN or $OPENAI_API_KEY
(the first set; --key-env names another), which the agent also sends to
ctxkit serve — or, with --keys, the proxy key's tenant. --session limits it
to one session. Large originals come back in pages (offset, limit).

For Codex, add it under [mcp_servers.ctxkit] with command = "ctxkit", args = ["mcp"].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := storeExists(dsn); err != nil {
				return err
			}
			st, _, err := openStore(ctx, dsn)
			if err != nil {
				return err
			}
			defer st.Close()
			if tenant == "" {
				var keys *serve.Keys
				if keysFile != "" {
					if keys, err = serve.LoadKeys(keysFile); err != nil {
						return err
					}
				}
				cred, from := "", ""
				envs := mcpKeyEnvs
				if keyEnv != "" {
					envs = []string{keyEnv}
				}
				for _, e := range envs {
					if cred = os.Getenv(e); cred != "" {
						from = e
						break
					}
				}
				if cred == "" {
					return fmt.Errorf("no key to find the tenant by: set %s to the key your agent sends through ctxkit serve (or pass --tenant)", strings.Join(envs, " or "))
				}
				secret, err := st.Secret(ctx)
				if err != nil {
					return fmt.Errorf("reading the store's install secret: %w", err)
				}
				if tenant, err = serve.TenantOf(secret, keys, cred); err != nil {
					return fmt.Errorf("$%s: %w", from, err)
				}
			}
			scoped, err := servestore.Scope(st, tenant)
			if err != nil {
				return fmt.Errorf("--tenant: %w", err)
			}
			// The version ctxkit --version prints, not the module's "(devel)".
			// Requests a client wrote before closing its end are answered.
			return mcp.New(mcp.Scope{Store: scoped, Session: session}, version()).Run(ctx, mcp.Drained(os.Stdin, os.Stdout, 30*time.Second))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "store", "", "ctxkit serve's state store: a SQLite file path (default ~/.ctxkit/serve.db) or a postgres:// URL; it must exist")
	f.StringVar(&keyEnv, "key-env", "", "environment variable holding the key the agent sends through ctxkit serve (default: the first set of "+strings.Join(mcpKeyEnvs, ", ")+")")
	f.StringVar(&keysFile, "keys", "", "ctxkit serve's --keys file: the key is a proxy key, and the tenant is the one it names")
	f.StringVar(&tenant, "tenant", "", "the tenant id (32 hex digits) to recall for, instead of deriving it from a key")
	f.StringVar(&session, "session", "", "recall only originals of this session (the agent's session id)")
	return cmd
}

// storeExists checks that a --store naming a SQLite file names one that
// exists: ctxkit mcp reads what ctxkit serve wrote, and an empty store
// made at a mistyped path would answer every recall "not found".
func storeExists(dsn string) error {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return err
		}
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--store %s: no such store; ctxkit mcp reads the store ctxkit serve writes (start ctxkit serve with the same --store first)", path)
	} else if err != nil {
		return fmt.Errorf("--store %s: %w", path, err)
	}
	return nil
}
