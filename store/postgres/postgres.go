package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctxkit/ctxkit/store"
)

// Store is a store.Store in a PostgreSQL database shared by any number of
// ctxkit serve replicas and ctxkit mcp processes.
type Store struct {
	pool *pgxpool.Pool
	name string
}

var _ store.Store = (*Store)(nil)

// DefaultMaxConns is the connection pool size of a store whose DSN sets
// no pool_max_conns. Replicas × pool size must stay under the server's
// max_connections (100 by default).
const DefaultMaxConns = 16

// Open connects to the database at dsn (a postgres:// URL or a libpq
// keyword string), brings its schema up to date under an advisory lock and
// returns the store. The database must exist.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return open(ctx, dsn, 0)
}

func open(ctx context.Context, dsn string, schema int) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error quotes the string, password and all: say only why.
		why := errors.Unwrap(err)
		if why == nil {
			why = errors.New("cannot parse it")
		}
		return nil, fmt.Errorf("postgres store: the connection string is not valid (want postgres://user:password@host:port/db or host=… dbname=…): %w", why)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgxpool's default (the number of CPUs, at least 4) queues a
		// proxy's concurrent sessions at the pool: 64 sessions on two
		// replicas spent 3.5× the store time waiting for one (README).
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "ctxkit"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: %w", redact(cfg), err)
	}
	if _, err := migrate(ctx, pool, schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store %s: %w", redact(cfg), err)
	}
	return &Store{pool: pool, name: redact(cfg)}, nil
}

// String names the database (user@host:port/db), without its password.
func (s *Store) String() string { return "postgres://" + s.name }

// redact names the database without its password.
func redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping checks that the database answers (for /healthz).
func (s *Store) Ping(ctx context.Context) error {
	return s.pool.Ping(ctx)
}

const sessionCols = `id, provider, model, version, created, updated, requests, client_tokens, upstream_tokens,
	input, cache_read, cache_write, output, saved_usd, compactions, clears, fail_open`

func scanSession(row pgx.Row) (store.Session, error) {
	var x store.Session
	t := &x.Totals
	err := row.Scan(&x.ID, &x.Provider, &x.Model, &x.Version, &x.Created, &x.Updated, &t.Requests, &t.ClientTokens,
		&t.UpstreamTokens, &t.Input, &t.CacheRead, &t.CacheWrite, &t.Output, &t.SavedUSD, &t.Compactions, &t.Clears, &t.FailOpen)
	return x, err
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	x, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return x, fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	return x, err
}

// Sessions implements store.Store.
func (s *Store) Sessions(ctx context.Context, limit int) ([]store.Session, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sessionCols+` FROM sessions ORDER BY updated DESC, id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Session, error) { return scanSession(r) })
}

// Decisions implements store.Store. One statement reads the version and
// the decisions, so they come from one snapshot.
func (s *Store) Decisions(ctx context.Context, session string) ([]store.Decision, int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.version, d.seq, d.kind, d.hashes, d.key, d.data, d.at
		FROM sessions s LEFT JOIN decisions d ON d.session = s.id
		WHERE s.id = $1 ORDER BY d.seq`, session)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var (
		out     []store.Decision
		version int64
	)
	for rows.Next() {
		var (
			seq    *int64
			kind   *string
			hashes []byte
			key    *string
			data   []byte
			at     *time.Time
		)
		if err := rows.Scan(&version, &seq, &kind, &hashes, &key, &data, &at); err != nil {
			return nil, 0, err
		}
		if seq == nil {
			continue // a session without decisions
		}
		d := store.Decision{Seq: *seq, Kind: *kind, Key: *key, Data: data, At: *at}
		if err := json.Unmarshal(hashes, &d.Hashes); err != nil {
			return nil, 0, fmt.Errorf("decision %d of session %q: bad hash list: %w", d.Seq, session, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, version, nil
}

// Commit implements store.Store.
//
// The compare-and-set is one statement in PostgreSQL's default READ
// COMMITTED isolation: a conditional write of the session row (WHERE
// version = want) whose RETURNING feeds the decisions' INSERT in a
// data-modifying CTE. A second writer of the same session blocks on the
// first one's row lock, then re-evaluates its WHERE against the committed
// row, finds the version moved and writes nothing: exactly one winner, no
// serialization failures to retry (as SERIALIZABLE would give), and no
// lock held across round trips (as SELECT … FOR UPDATE in an explicit
// transaction would, until the server notices a killed replica's
// connection is gone). Appending decisions is one round trip.
func (s *Store) Commit(ctx context.Context, info store.Session, want int64, ds []store.Decision) (int64, error) {
	n := len(ds)
	kinds := make([]string, n)
	hashes := make([]string, n)
	keys := make([]string, n)
	datas := make([][]byte, n)
	ats := make([]time.Time, n)
	for i, d := range ds {
		h := d.Hashes
		if h == nil {
			h = []string{}
		}
		b, err := json.Marshal(h)
		if err != nil {
			return 0, err
		}
		kinds[i], hashes[i], keys[i], datas[i], ats[i] = d.Kind, string(b), d.Key, d.Data, stamp(d.At)
	}
	// $1 id, $2 provider, $3 model, $4 want, $5 n, $6… the decisions.
	var write string
	if want == 0 {
		// The session may not exist yet, or exist with usage only.
		write = `INSERT INTO sessions AS s (id, provider, model, version, ndecisions, created, updated)
			VALUES ($1, $2, $3, 1, $5, now(), now())
			ON CONFLICT (id) DO UPDATE SET version = s.version + 1, ndecisions = s.ndecisions + $5, updated = now(),
				provider = CASE WHEN $2 = '' THEN s.provider ELSE $2 END,
				model = CASE WHEN $3 = '' THEN s.model ELSE $3 END
			WHERE s.version = $4
			RETURNING s.version, s.ndecisions`
	} else {
		write = `UPDATE sessions AS s SET version = s.version + 1, ndecisions = s.ndecisions + $5, updated = now(),
				provider = CASE WHEN $2 = '' THEN s.provider ELSE $2 END,
				model = CASE WHEN $3 = '' THEN s.model ELSE $3 END
			WHERE s.id = $1 AND s.version = $4
			RETURNING s.version, s.ndecisions`
	}
	q := `WITH w AS (` + write + `),
		ins AS (INSERT INTO decisions (session, seq, kind, hashes, key, data, at)
			SELECT $1, w.ndecisions - $5 + d.ord, d.kind, d.hashes::jsonb, d.key, d.data, d.at
			FROM w, unnest($6::text[], $7::text[], $8::text[], $9::bytea[], $10::timestamptz[])
				WITH ORDINALITY AS d(kind, hashes, key, data, at, ord))
		SELECT version FROM w`
	var version int64
	err := s.pool.QueryRow(ctx, q, info.ID, info.Provider, info.Model, want, int64(n), kinds, hashes, keys, datas, ats).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("session %q at version %d: %w", info.ID, want, store.ErrConflict)
	}
	if err != nil {
		return 0, err
	}
	return version, nil
}

func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// PutSummary implements store.Store. One statement: the summary is stored
// whole or not at all, and the first writer of a key wins.
func (s *Store) PutSummary(ctx context.Context, x store.Summary) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO summaries (key, session, model, text, method, at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (key) DO NOTHING`, x.Key, x.Session, x.Model, x.Text, x.Method, stamp(x.At))
	return err
}

// Summary implements store.Store.
func (s *Store) Summary(ctx context.Context, key string) (store.Summary, error) {
	var x store.Summary
	err := s.pool.QueryRow(ctx, `SELECT key, session, model, text, method, at FROM summaries WHERE key = $1`, key).
		Scan(&x.Key, &x.Session, &x.Model, &x.Text, &x.Method, &x.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return x, fmt.Errorf("summary %q: %w", key, store.ErrNotFound)
	}
	return x, err
}

// PutOriginals implements store.Store. One statement: the batch is stored
// whole or not at all, and each hash keeps its first content.
func (s *Store) PutOriginals(ctx context.Context, os []store.Original) error {
	if len(os) == 0 {
		return nil
	}
	n := len(os)
	hashes, sessions, tools, labels := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	contents, ats := make([][]byte, n), make([]time.Time, n)
	for i, o := range os {
		c := o.Content
		if c == nil {
			c = []byte{}
		}
		hashes[i], sessions[i], tools[i], labels[i], contents[i], ats[i] = o.Hash, o.Session, o.Tool, o.Label, c, stamp(o.At)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO originals (hash, session, tool, label, content, at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::timestamptz[])
		ON CONFLICT (hash) DO NOTHING`, hashes, sessions, tools, labels, contents, ats)
	return err
}

// Original implements store.Store.
func (s *Store) Original(ctx context.Context, hash string) (store.Original, error) {
	var o store.Original
	err := s.pool.QueryRow(ctx, `SELECT hash, session, tool, label, content, at FROM originals WHERE hash = $1`, hash).
		Scan(&o.Hash, &o.Session, &o.Tool, &o.Label, &o.Content, &o.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, fmt.Errorf("original %q: %w", hash, store.ErrNotFound)
	}
	return o, err
}

// AddUsage implements store.Store: one statement adds the usage row and
// the session's totals. Usage is statistics, so its commit does not wait
// for the WAL flush (synchronous_commit off for this transaction only): a
// database crash may lose the last fraction of a second of usage, never a
// decision, summary or original; a request saves an fsync.
func (s *Store) AddUsage(ctx context.Context, u store.Usage) error {
	_, err := s.pool.Exec(ctx, `WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
		t AS (
			INSERT INTO sessions AS s (id, provider, model, created, updated, requests, client_tokens, upstream_tokens,
				input, cache_read, cache_write, output, saved_usd, compactions, clears, fail_open)
			VALUES ($1, $2, $3, $4, $4, 1, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (id) DO UPDATE SET updated = GREATEST(s.updated, $4), requests = s.requests + 1,
				client_tokens = s.client_tokens + $5, upstream_tokens = s.upstream_tokens + $6, input = s.input + $7,
				cache_read = s.cache_read + $8, cache_write = s.cache_write + $9, output = s.output + $10,
				saved_usd = s.saved_usd + $11, compactions = s.compactions + $12, clears = s.clears + $13,
				fail_open = s.fail_open + $14,
				provider = CASE WHEN $2 = '' THEN s.provider ELSE $2 END,
				model = CASE WHEN $3 = '' THEN s.model ELSE $3 END)
		INSERT INTO usage (session, provider, model, at, client_tokens, upstream_tokens, input, cache_read, cache_write,
			output, saved_usd, compactions, clears, fail_open)
		SELECT $1, $2, $3, $4, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint,
			$11::double precision, $12::bigint, $13::bigint, $14::bigint FROM async`,
		u.Session, u.Provider, u.Model, stamp(u.At), u.ClientTokens, u.UpstreamTokens, u.Input, u.CacheRead, u.CacheWrite,
		u.Output, u.SavedUSD, u.Compactions, u.Clears, u.FailOpen)
	return err
}

// Secret implements store.Store. The first replica to ask makes it; the
// others read the same.
func (s *Store) Secret(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	rand.Read(fresh)
	var v []byte
	var err error
	for range 3 { // a concurrent first writer's row may commit after this statement's snapshot
		err = s.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO install (name, value) VALUES ('secret', $1)
			ON CONFLICT (name) DO NOTHING RETURNING value)
		SELECT value FROM ins UNION ALL SELECT value FROM install WHERE name = 'secret' LIMIT 1`, fresh).Scan(&v)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the install secret: %w", err)
	}
	return v, nil
}

// Prune implements store.Store, in one transaction.
func (s *Store) Prune(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM sessions WHERE updated < $1`, // decisions cascade
			`DELETE FROM usage WHERE at < $1`,
			`DELETE FROM summaries x WHERE at < $1 AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = x.session)`,
			`DELETE FROM originals x WHERE at < $1 AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = x.session)`,
		} {
			tag, err := tx.Exec(ctx, q, before)
			if err != nil {
				return fmt.Errorf("pruning: %w", err)
			}
			n += tag.RowsAffected()
		}
		return nil
	})
	return n, err
}

// Size implements store.Store: the total size of ctxkit's tables, indexes
// and TOAST data (not the whole database, which may hold others').
func (s *Store) Size(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
		AND c.relname IN ('sessions', 'decisions', 'summaries', 'originals', 'usage', 'install', 'ctxkit_schema')`).Scan(&n)
	return n, err
}
