package open

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKind(t *testing.T) {
	for _, tt := range []struct{ dsn, kind, arg string }{
		{"", SQLite, ""},
		{"/var/lib/ctxkit/serve.db", SQLite, "/var/lib/ctxkit/serve.db"},
		{"serve.db", SQLite, "serve.db"},
		{"sqlite:/tmp/x.db", SQLite, "/tmp/x.db"},
		{"postgres://ctxkit@db:5432/ctxkit", Postgres, "postgres://ctxkit@db:5432/ctxkit"},
		{"postgresql://ctxkit@/ctxkit?host=/run/postgresql", Postgres, "postgresql://ctxkit@/ctxkit?host=/run/postgresql"},
		{"host=/run/postgresql dbname=ctxkit", Postgres, "host=/run/postgresql dbname=ctxkit"},
	} {
		kind, arg := Kind(tt.dsn)
		if kind != tt.kind || arg != tt.arg {
			t.Errorf("Kind(%q) = %q, %q; want %q, %q", tt.dsn, kind, arg, tt.kind, tt.arg)
		}
	}
}

func TestStoreSQLite(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	s, err := Store(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(home, ".ctxkit", "serve.db")); err != nil {
		t.Fatalf("default store not in ~/.ctxkit: %v", err)
	}
	path := filepath.Join(t.TempDir(), "other.db")
	s, err = Store(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestStorePostgresUnreachable(t *testing.T) {
	// Routed to PostgreSQL: the error is the PostgreSQL store's, and the
	// password is not in it.
	_, err := Store(context.Background(), "postgres://u:secret@/db?host="+t.TempDir()+"&connect_timeout=1")
	if err == nil {
		t.Fatal("opened a database that is not there")
	}
	if !strings.Contains(err.Error(), "postgres store") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("error %q: want the postgres store's, without the password", err)
	}
}
