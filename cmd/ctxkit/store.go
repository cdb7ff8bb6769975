package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/outfile"
	servestore "github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// openStore opens the store a --store value names: empty for the default
// embedded file (~/.ctxkit/serve.db), "sqlite:PATH" or a file path for
// another one, a postgres:// URL for PostgreSQL (store/postgres).
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
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, "", fmt.Errorf("--store: %w", err)
		}
		return s, s.String(), nil
	default:
		path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")
		// A folder the user named is never created, as for -o.
		if err := outfile.Folder(path, outfile.Options{Flag: "--store"}); err != nil {
			return nil, "", err
		}
		s, err := sqlite.Open(ctx, path)
		return s, path, err
	}
}
