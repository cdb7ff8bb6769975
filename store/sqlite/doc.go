// Package sqlite is the embedded single-file [store.Store] of ctxkit serve,
// on the pure-Go SQLite of modernc.org/sqlite (no cgo, nothing else to
// install). The database is opened in WAL mode with a busy timeout, so
// ctxkit serve and ctxkit mcp can use the same file at once; Commit's
// compare-and-set runs in an immediate transaction.
package sqlite
