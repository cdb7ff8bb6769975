// Package store holds what ctxkit serve and ctxkit mcp keep between
// requests: sessions, the decisions made for each (keyed by the content
// hashes they apply to), summaries, the originals of cleared blocks (for
// recall) and upstream usage.
//
// [Store] is the interface; package store/sqlite is the embedded
// single-file implementation (the default, ~/.ctxkit/serve.db) and a
// PostgreSQL one can be added against the same conformance suite,
// package store/storetest.
//
// # Decisions win exactly once
//
// A session has a version. [Store.Commit] appends decisions only if the
// session is still at the version the caller read (compare-and-set), and
// returns [ErrConflict] otherwise; the caller then reloads the decisions
// that won and applies those. So two processes deciding for one session at
// once never give it two different rewrites of the same history.
//
// Summaries and originals are content-addressed and written whole or not at
// all: putting the same key twice keeps the first value.
package store
