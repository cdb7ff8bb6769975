package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "serve.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestReopenKeepsDecisions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "serve.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, store.Session{ID: "s"}, 0, []store.Decision{{Kind: store.KindClear, Hashes: []string{"h"}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("store file mode %v, want 0600", fi.Mode().Perm())
	}
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, v, err := s.Decisions(ctx, "s")
	if err != nil || v != 1 || len(ds) != 1 {
		t.Fatalf("after reopen: %+v v%d %v", ds, v, err)
	}
}

func TestTwoHandlesOneFile(t *testing.T) {
	// ctxkit serve and ctxkit mcp open the same file.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serve.db")
	a, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.PutOriginals(ctx, []store.Original{{Hash: "h", Content: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if o, err := b.Original(ctx, "h"); err != nil || string(o.Content) != "x" {
		t.Fatalf("other handle: %+v %v", o, err)
	}
	if _, err := a.Commit(ctx, store.Session{ID: "s"}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx, store.Session{ID: "s"}, 0, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second handle's stale commit = %v, want ErrConflict", err)
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.db")
	if err := os.WriteFile(path, []byte("this is not sqlite, just some text that is long enough to be a header............"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(context.Background(), path); err == nil {
		t.Fatal("opening a text file as a store succeeded")
	}
}
