package main

import (
	"context"
	"fmt"
	"strings"

	servestore "github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// openStore opens the store a --store value names: empty for the default
// embedded file (~/.ctxkit/serve.db), "sqlite:PATH" or a file path for
// another one.
func openStore(ctx context.Context, dsn string) (servestore.Store, string, error) {
	switch {
	case dsn == "":
		path, err := sqlite.DefaultPath()
		if err != nil {
			return nil, "", err
		}
		s, err := sqlite.Open(ctx, path)
		return s, path, err
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return nil, "", fmt.Errorf("--store %s: PostgreSQL is not built into this ctxkit yet; use a file path or leave --store out for ~/.ctxkit/serve.db", "postgres://…")
	default:
		path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")
		s, err := sqlite.Open(ctx, path)
		return s, path, err
	}
}
