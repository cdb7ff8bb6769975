package store

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Sentinel errors. Implementations wrap them with %w.
var (
	// ErrNotFound: no session, summary or original under that key.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: Commit's expected version is not the session's
	// version any more; another writer decided first.
	ErrConflict = errors.New("store: session changed since it was read (another decision won)")
)

// Store keeps ctxkit serve's state. Every method is safe for concurrent use
// by many goroutines and, for shared implementations, many processes.
type Store interface {
	// Session returns the session with its totals, or ErrNotFound.
	Session(ctx context.Context, id string) (Session, error)
	// Sessions lists up to limit sessions, most recently updated first.
	Sessions(ctx context.Context, limit int) ([]Session, error)
	// Decisions returns a session's decisions in the order they were
	// committed, and the session's version (0 and no decisions when the
	// session does not exist yet).
	Decisions(ctx context.Context, session string) ([]Decision, int64, error)
	// Commit appends ds to the session's decisions if its version is
	// still want (0: the session must not have decisions yet; it is
	// created if missing) and returns the new version. Otherwise nothing
	// is written and the error wraps ErrConflict. Info updates the
	// session's descriptive fields (Provider, Model) when not empty.
	Commit(ctx context.Context, info Session, want int64, ds []Decision) (int64, error)
	// PutSummary stores a summary under its key; an existing key keeps
	// its first value.
	PutSummary(ctx context.Context, s Summary) error
	// Summary returns the summary stored under key, or ErrNotFound.
	Summary(ctx context.Context, key string) (Summary, error)
	// PutOriginals stores originals of cleared blocks by hash; existing
	// hashes keep their first value.
	PutOriginals(ctx context.Context, os []Original) error
	// Original returns the original stored under hash, or ErrNotFound.
	Original(ctx context.Context, hash string) (Original, error)
	// AddUsage records one proxied request's usage and adds it to its
	// session's totals (creating the session if missing).
	AddUsage(ctx context.Context, u Usage) error
	// Secret returns the install's secret: 32 random bytes made the first
	// time any process asks, then the same for every process sharing the
	// store. Tenants are derived from it (an HMAC of the credential), so a
	// store's tenant ids mean nothing without it.
	Secret(ctx context.Context) ([]byte, error)
	// Prune deletes what is older than before: sessions last updated
	// before it (with their decisions), usage rows recorded before it, and
	// summaries and originals written before it whose session is gone.
	// It returns the number of rows deleted.
	Prune(ctx context.Context, before time.Time) (int64, error)
	// Size is the bytes the store occupies (the database file, or the
	// tables' total size in PostgreSQL).
	Size(ctx context.Context) (int64, error)
	// Close releases the store.
	Close() error
}

// Session is one client conversation as the proxy sees it.
type Session struct {
	ID       string
	Provider string // "anthropic" or "openai"
	Model    string
	Version  int64 // number of successful Commits
	Created  time.Time
	Updated  time.Time
	Totals   Totals
}

// Totals add up a session's Usage records.
type Totals struct {
	Requests       int64
	ClientTokens   int64 // estimated input tokens the client sent
	UpstreamTokens int64 // estimated input tokens sent upstream
	Input          int64 // upstream usage: uncached input tokens
	CacheRead      int64
	CacheWrite     int64
	Output         int64
	SavedUSD       float64 // estimated dollars saved at the configured prices
	Compactions    int64
	Clears         int64 // blocks cleared
	FailOpen       int64
}

// Kinds of decisions.
const (
	KindClear   = "clear"   // replace the content of the blocks in Hashes with Data
	KindSummary = "summary" // replace the messages in Hashes (a run, in order) with the summary under Key
	// KindShrink replaces the values (a text, a string content, a tool
	// call's input) named by the hashes of their bytes in Hashes with the
	// JSON values in Data, a JSON array: head and tail cuts that make a
	// request fit the window.
	KindShrink = "shrink"
	// KindCompact records turns the engine replaced (a compaction's
	// summary message, a drop marker): Hashes are the ids of the blocks of
	// the message that took their place, Data the engine's reason.
	KindCompact = "compact"
	// KindObserved records what the provider reported for the response
	// to one request, and when the request was sent: Key names the
	// request (its message count and the hash of its last message, in
	// Hashes), Data is the JSON of the report. The engine decides from it
	// (the proxy's mirror replays it at that request).
	KindObserved = "observed"
	// KindRefused records the sizes an upstream stated in refusing one
	// request for its size, which the proxy then sent again as the engine
	// decided at them: Key and Hashes name the request as KindObserved's
	// do, Data is the JSON of the llm.Limit (zero when the refusal stated
	// none). The proxy's mirror replays it at that request
	// (engine.Engine.Retry).
	KindRefused = "refused"
)

// Decision is one rewrite applied to a session's requests. It names the
// content it applies to by hash, not by position, so it applies to every
// later request that still carries that content.
type Decision struct {
	Seq    int64    // position in the session (1-based), set by the store
	Kind   string   // KindClear, KindSummary, KindShrink, KindCompact, KindObserved or KindRefused
	Hashes []string // content hashes the decision applies to
	Key    string   // summary key (KindSummary)
	Data   []byte   // kind-specific payload (e.g. the placeholder text)
	At     time.Time
}

// Summary is the text that replaces a span of messages.
type Summary struct {
	Key     string // hash of the span it covers
	Session string
	Model   string
	Text    string
	Method  string // "model", "extractive", "truncation"
	At      time.Time
}

// Original is the content of a cleared block, kept for recall.
type Original struct {
	Hash    string // what it is stored under: OriginalKey(Session, its recall id), or, before, the recall id alone
	Session string
	Tool    string // tool name, if a tool result
	Label   string // e.g. the command or path
	Content []byte
	At      time.Time
}

// Usage is one proxied request.
type Usage struct {
	Session        string
	Provider       string
	Model          string
	At             time.Time
	ClientTokens   int64
	UpstreamTokens int64
	Input          int64
	CacheRead      int64
	CacheWrite     int64
	Output         int64
	SavedUSD       float64
	Compactions    int64
	Clears         int64
	FailOpen       int64
}

// OriginalKey is what the original a session's recall id names is stored
// under: recall ids are short, unique within their session only.
func OriginalKey(session, id string) string { return session + "/" + id }

// CollisionKey is the n-th key of the originals that key names (n ≥ 1):
// key itself, then key#2, key#3, …. A recall id is unique within one
// conversation; two conversations of one session (an agent and its
// sub-agent) can hand out the same short id for different contents.
// ctxkit serve stores such an original under the first free CollisionKey,
// and ctxkit mcp returns every original an id names, so none is lost and
// none is given for another.
func CollisionKey(key string, n int) string {
	if n <= 1 {
		return key
	}
	return key + "#" + strconv.Itoa(n)
}
