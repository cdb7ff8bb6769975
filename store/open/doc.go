// Package open maps the value of ctxkit serve's and ctxkit mcp's --store
// flag to a [store.Store]: empty for the embedded SQLite file in
// ~/.ctxkit/serve.db, a postgres:// (or postgresql://) URL or a libpq
// keyword string (host=… dbname=…) for PostgreSQL (package
// store/postgres), anything else for a SQLite file at that path (an
// optional sqlite: prefix is dropped).
package open
