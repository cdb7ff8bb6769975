// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// and pg_ctl from Debian's postgresql package (/usr/lib/postgresql/N/bin,
// or on PATH) into a fresh temporary directory, listening only on a Unix
// socket inside it, and removes it all at the end.
//
// When the tests run as root, the cluster runs as the postgres user (the
// server refuses to run as root) and the directory is handed to it. Where
// PostgreSQL is not installed, [Shared.DB] skips the test and says so.
//
// One cluster serves a whole test package:
//
//	var pg pgtest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(pg.Main(m)) }
//
//	func TestX(t *testing.T) {
//		dsn := pg.DB(t) // a fresh, empty database
//		...
//	}
package pgtest
