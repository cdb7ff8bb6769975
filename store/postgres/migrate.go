package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key every replica takes before
// migrating ("ctxkit" in ASCII), so only one applies each migration.
const migrationLock int64 = 0x637478_6b6974

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Files are
// named NNNN_what.sql; versions start at 1 and have no gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: name must start with a version number and an underscore", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d (versions must be 1, 2, 3… without gaps)", m.name, i+1)
		}
	}
	return out, nil
}

// migrate brings the schema to version upTo (0: the newest) in one
// transaction holding the migration advisory lock, so replicas starting
// together apply each migration once and a failed migration leaves the
// schema as it was. It returns the schema version after the run. A schema
// newer than this binary knows is left alone: migrations only add, so an
// older replica keeps working during a rolling upgrade.
func migrate(ctx context.Context, pool *pgxpool.Pool, upTo int) (int, error) {
	ms, err := migrations()
	if err != nil {
		return 0, err
	}
	if upTo == 0 || upTo > len(ms) {
		upTo = len(ms)
	}
	var version int
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS ctxkit_schema (
			version integer PRIMARY KEY,
			name    text NOT NULL,
			applied timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("creating the schema version table: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM ctxkit_schema`).Scan(&version); err != nil {
			return fmt.Errorf("reading the schema version: %w", err)
		}
		for _, m := range ms[:upTo] {
			if m.version <= version {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO ctxkit_schema (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("recording migration %s: %w", m.name, err)
			}
			version = m.version
		}
		return nil
	})
	return version, err
}
