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
//
// # Tenants and retention
//
// [Scope] is one tenant's view of a store: every session id, summary key
// and original hash goes in under the tenant's prefix, so tenants never
// share a row, whatever collides. [Tenant] derives a tenant id from the
// install's secret ([Store.Secret], made once per store) and a
// credential; the credential is never stored. [Store.Prune] deletes what
// retention no longer keeps and [Store.Size] says how large the store is.
package store
