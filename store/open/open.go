package open

import (
	"context"
	"strings"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// Kinds of store a --store value names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Kind says which implementation dsn names, and the path or connection
// string to give it.
func Kind(dsn string) (kind, arg string) {
	d := strings.TrimSpace(dsn)
	switch {
	case strings.HasPrefix(d, "postgres://"), strings.HasPrefix(d, "postgresql://"):
		return Postgres, d
	case strings.Contains(d, "dbname=") || strings.HasPrefix(d, "host=") || strings.HasPrefix(d, "user="):
		return Postgres, d
	case strings.HasPrefix(d, "sqlite:"):
		return SQLite, strings.TrimPrefix(d, "sqlite:")
	}
	return SQLite, dsn
}

// Store opens the store dsn names (see the package doc). For PostgreSQL
// it connects and migrates the schema; the returned store then also has a
// Ping(ctx) error method.
func Store(ctx context.Context, dsn string) (store.Store, error) {
	kind, arg := Kind(dsn)
	if kind == Postgres {
		return postgres.Open(ctx, arg)
	}
	if arg == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return nil, err
		}
		arg = p
	}
	return sqlite.Open(ctx, arg)
}
