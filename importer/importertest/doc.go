// Package importertest builds agent session stores for tests: an opencode
// SQLite database from a readable JSON description, laid out like the one
// opencode writes (packages/opencode/src/session/session.sql.ts).
package importertest
