package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/store"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id TEXT PRIMARY KEY,
	provider TEXT NOT NULL DEFAULT '',
	model TEXT NOT NULL DEFAULT '',
	version INTEGER NOT NULL DEFAULT 0,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	requests INTEGER NOT NULL DEFAULT 0,
	client_tokens INTEGER NOT NULL DEFAULT 0,
	upstream_tokens INTEGER NOT NULL DEFAULT 0,
	input INTEGER NOT NULL DEFAULT 0,
	cache_read INTEGER NOT NULL DEFAULT 0,
	cache_write INTEGER NOT NULL DEFAULT 0,
	output INTEGER NOT NULL DEFAULT 0,
	saved_usd REAL NOT NULL DEFAULT 0,
	compactions INTEGER NOT NULL DEFAULT 0,
	clears INTEGER NOT NULL DEFAULT 0,
	fail_open INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated);
CREATE TABLE IF NOT EXISTS decisions (
	session TEXT NOT NULL,
	seq INTEGER NOT NULL,
	kind TEXT NOT NULL,
	hashes TEXT NOT NULL,
	key TEXT NOT NULL DEFAULT '',
	data BLOB,
	at INTEGER NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE TABLE IF NOT EXISTS summaries (
	key TEXT PRIMARY KEY,
	session TEXT NOT NULL,
	model TEXT NOT NULL,
	text TEXT NOT NULL,
	method TEXT NOT NULL,
	at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS originals (
	hash TEXT PRIMARY KEY,
	session TEXT NOT NULL,
	tool TEXT NOT NULL,
	label TEXT NOT NULL,
	content BLOB NOT NULL,
	at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	session TEXT NOT NULL,
	provider TEXT NOT NULL,
	model TEXT NOT NULL,
	at INTEGER NOT NULL,
	client_tokens INTEGER NOT NULL,
	upstream_tokens INTEGER NOT NULL,
	input INTEGER NOT NULL,
	cache_read INTEGER NOT NULL,
	cache_write INTEGER NOT NULL,
	output INTEGER NOT NULL,
	saved_usd REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS install (
	name TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS summaries_at ON summaries(at);
CREATE INDEX IF NOT EXISTS originals_at ON originals(at);
CREATE INDEX IF NOT EXISTS usage_at ON usage(at);
`

// Store is a store.Store in one SQLite file.
type Store struct {
	db *sql.DB
	// wmu serialises this process's writers: SQLite has one writer at a
	// time, and a writer that finds the file locked waits in the busy
	// handler's sleeps, which under load costs far more than queueing
	// here. Readers do not take it (WAL lets them read while one writes).
	wmu sync.Mutex
}

var _ store.Store = (*Store)(nil)

// DefaultPath is ~/.ctxkit/serve.db.
func DefaultPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for the default store: %w", err)
	}
	return filepath.Join(home, ".ctxkit", "serve.db"), nil
}

// Open opens (creating if needed) the database file at path, with its
// directory (mode 0700).
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite store: empty path")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("creating the store's directory: %w", err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the store %s: %w", path, err)
		}
		f.Close()
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening the store %s: %w", path, err)
	}
	if path == ":memory:" {
		db.SetMaxOpenConns(1)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s is not a ctxkit serve database or is unreadable: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func unix(t time.Time) int64 {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UnixNano()
}

const sessionCols = `id, provider, model, version, created, updated, requests, client_tokens, upstream_tokens,
	input, cache_read, cache_write, output, saved_usd, compactions, clears, fail_open`

func scanSession(sc interface{ Scan(...any) error }) (store.Session, error) {
	var x store.Session
	var c, u int64
	t := &x.Totals
	err := sc.Scan(&x.ID, &x.Provider, &x.Model, &x.Version, &c, &u, &t.Requests, &t.ClientTokens, &t.UpstreamTokens,
		&t.Input, &t.CacheRead, &t.CacheWrite, &t.Output, &t.SavedUSD, &t.Compactions, &t.Clears, &t.FailOpen)
	x.Created, x.Updated = time.Unix(0, c), time.Unix(0, u)
	return x, err
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	x, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return x, fmt.Errorf("session %q: %w", id, store.ErrNotFound)
	}
	return x, err
}

// Sessions implements store.Store.
func (s *Store) Sessions(ctx context.Context, limit int) ([]store.Session, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+sessionCols+` FROM sessions ORDER BY updated DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		x, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// Decisions implements store.Store. One statement reads the version and
// the decisions together, so they are one consistent snapshot.
func (s *Store) Decisions(ctx context.Context, session string) ([]store.Decision, int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT s.version, d.seq, d.kind, d.hashes, d.key, d.data, d.at
		FROM sessions s LEFT JOIN decisions d ON d.session = s.id WHERE s.id = ? ORDER BY d.seq`, session)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []store.Decision
	var version int64
	for rows.Next() {
		var seq, at sql.NullInt64
		var kind, hashes, key sql.NullString
		var data []byte
		if err := rows.Scan(&version, &seq, &kind, &hashes, &key, &data, &at); err != nil {
			return nil, 0, err
		}
		if !seq.Valid {
			continue // a session without decisions
		}
		d := store.Decision{Seq: seq.Int64, Kind: kind.String, Key: key.String, Data: data, At: time.Unix(0, at.Int64)}
		if err := json.Unmarshal([]byte(hashes.String), &d.Hashes); err != nil {
			return nil, 0, fmt.Errorf("decision %d of session %q: bad hash list: %w", d.Seq, session, err)
		}
		out = append(out, d)
	}
	return out, version, rows.Err()
}

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, info store.Session, want int64, ds []store.Decision) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	now := time.Now().UnixNano()
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO sessions (id, provider, model, created, updated) VALUES (?, ?, ?, ?, ?)`,
		info.ID, info.Provider, info.Model, now, now); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET version = version + 1, updated = ?,
		provider = CASE WHEN ? = '' THEN provider ELSE ? END, model = CASE WHEN ? = '' THEN model ELSE ? END
		WHERE id = ? AND version = ?`, now, info.Provider, info.Provider, info.Model, info.Model, info.ID, want)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return 0, fmt.Errorf("session %q at version %d: %w", info.ID, want, store.ErrConflict)
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM decisions WHERE session = ?`, info.ID).Scan(&seq); err != nil {
		return 0, err
	}
	for _, d := range ds {
		seq++
		hashes, err := json.Marshal(d.Hashes)
		if err != nil {
			return 0, err
		}
		if d.Hashes == nil {
			hashes = []byte("[]")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO decisions (session, seq, kind, hashes, key, data, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			info.ID, seq, d.Kind, string(hashes), d.Key, d.Data, unix(d.At)); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return want + 1, nil
}

// PutSummary implements store.Store.
func (s *Store) PutSummary(ctx context.Context, x store.Summary) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO summaries (key, session, model, text, method, at) VALUES (?, ?, ?, ?, ?, ?)`,
		x.Key, x.Session, x.Model, x.Text, x.Method, unix(x.At))
	return err
}

// Summary implements store.Store.
func (s *Store) Summary(ctx context.Context, key string) (store.Summary, error) {
	var x store.Summary
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT key, session, model, text, method, at FROM summaries WHERE key = ?`, key).
		Scan(&x.Key, &x.Session, &x.Model, &x.Text, &x.Method, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return x, fmt.Errorf("summary %q: %w", key, store.ErrNotFound)
	}
	x.At = time.Unix(0, at)
	return x, err
}

// PutOriginals implements store.Store.
func (s *Store) PutOriginals(ctx context.Context, os []store.Original) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if len(os) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, o := range os {
		content := o.Content
		if content == nil {
			content = []byte{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO originals (hash, session, tool, label, content, at) VALUES (?, ?, ?, ?, ?, ?)`,
			o.Hash, o.Session, o.Tool, o.Label, content, unix(o.At)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Original implements store.Store.
func (s *Store) Original(ctx context.Context, hash string) (store.Original, error) {
	var o store.Original
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT hash, session, tool, label, content, at FROM originals WHERE hash = ?`, hash).
		Scan(&o.Hash, &o.Session, &o.Tool, &o.Label, &o.Content, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("original %q: %w", hash, store.ErrNotFound)
	}
	o.At = time.Unix(0, at)
	return o, err
}

// AddUsage implements store.Store.
func (s *Store) AddUsage(ctx context.Context, u store.Usage) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	at := unix(u.At)
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO sessions (id, provider, model, created, updated) VALUES (?, ?, ?, ?, ?)`,
		u.Session, u.Provider, u.Model, at, at); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET updated = MAX(updated, ?), requests = requests + 1,
		client_tokens = client_tokens + ?, upstream_tokens = upstream_tokens + ?, input = input + ?,
		cache_read = cache_read + ?, cache_write = cache_write + ?, output = output + ?, saved_usd = saved_usd + ?,
		compactions = compactions + ?, clears = clears + ?, fail_open = fail_open + ?,
		provider = CASE WHEN ? = '' THEN provider ELSE ? END, model = CASE WHEN ? = '' THEN model ELSE ? END
		WHERE id = ?`, at, u.ClientTokens, u.UpstreamTokens, u.Input, u.CacheRead, u.CacheWrite, u.Output, u.SavedUSD,
		u.Compactions, u.Clears, u.FailOpen, u.Provider, u.Provider, u.Model, u.Model, u.Session); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO usage (session, provider, model, at, client_tokens, upstream_tokens,
		input, cache_read, cache_write, output, saved_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.Session, u.Provider, u.Model, at, u.ClientTokens, u.UpstreamTokens, u.Input, u.CacheRead, u.CacheWrite,
		u.Output, u.SavedUSD); err != nil {
		return err
	}
	return tx.Commit()
}

// Secret implements store.Store.
func (s *Store) Secret(ctx context.Context) ([]byte, error) {
	var v []byte
	err := s.db.QueryRowContext(ctx, `SELECT value FROM install WHERE name = 'secret'`).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("reading the install secret: %w", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	fresh := make([]byte, 32)
	rand.Read(fresh)
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO install (name, value) VALUES ('secret', ?)`, fresh); err != nil {
		return nil, fmt.Errorf("storing the install secret: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM install WHERE name = 'secret'`).Scan(&v); err != nil {
		return nil, fmt.Errorf("reading the install secret: %w", err)
	}
	return v, nil
}

// Prune implements store.Store, in one transaction.
func (s *Store) Prune(ctx context.Context, before time.Time) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	t := before.UnixNano()
	var n int64
	for _, q := range []string{
		`DELETE FROM decisions WHERE session IN (SELECT id FROM sessions WHERE updated < ?)`,
		`DELETE FROM sessions WHERE updated < ?`,
		`DELETE FROM usage WHERE at < ?`,
		`DELETE FROM summaries WHERE at < ? AND session NOT IN (SELECT id FROM sessions)`,
		`DELETE FROM originals WHERE at < ? AND session NOT IN (SELECT id FROM sessions)`,
	} {
		res, err := tx.ExecContext(ctx, q, t)
		if err != nil {
			return 0, fmt.Errorf("pruning: %w", err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, tx.Commit()
}

// Size implements store.Store: the database's pages (the WAL not counted).
func (s *Store) Size(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n)
	return n, err
}
