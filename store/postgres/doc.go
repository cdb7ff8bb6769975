// Package postgres is the [store.Store] of ctxkit serve for more than one
// machine: any number of stateless replicas (and ctxkit mcp processes)
// share one PostgreSQL database through github.com/jackc/pgx/v5's pool.
//
// # Schema
//
// Migrations are SQL files embedded from migrations/ (NNNN_what.sql,
// versions without gaps). [Open] applies the missing ones in one
// transaction holding a PostgreSQL advisory lock, recording each in table
// ctxkit_schema, so replicas starting together migrate once and a failed
// migration changes nothing. Migrations only add (columns with defaults,
// tables, indexes): a replica on an older binary keeps working against a
// newer schema during a rolling upgrade.
//
// # One winner per decision
//
// [Store.Commit] is a single statement under READ COMMITTED: a conditional
// write of the session row (WHERE version = the version the caller read)
// feeding the INSERT of the decisions. Concurrent writers of one session
// queue on the row lock; the first commits, the others re-check the
// condition against its row and write nothing ([store.ErrConflict]). No
// retries, no lock held across round trips, nothing a killed replica can
// leave locked.
//
// Summaries and batches of originals are each one INSERT … ON CONFLICT DO
// NOTHING: stored whole or not at all, the first value of a content hash
// kept. Every method is one round trip.
package postgres
