package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres/pgtest"
	"github.com/ctxkit/ctxkit/store/storetest"
)

var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Main(m)) }

func openT(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openT(t, pg.DB(t)) })
}

func TestMigrations(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 2 {
		t.Fatalf("%d migrations embedded", len(ms))
	}
}

// TestMigrateOldSchemaForward builds a version-1 database with data in
// it, as a replica of an older ctxkit left it, then opens it with this
// one: the schema moves to the newest version and nothing is lost.
func TestMigrateOldSchemaForward(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DB(t)
	old, err := open(ctx, dsn, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Commit(ctx, store.Session{ID: "s", Provider: "anthropic", Model: "m"}, 0,
		[]store.Decision{{Kind: store.KindClear, Hashes: []string{"a", "b"}, Data: []byte("[cleared]")}}); err != nil {
		t.Fatal(err)
	}
	if err := old.PutOriginals(ctx, []store.Original{{Hash: "a", Session: "s", Tool: "Read", Content: []byte("body")}}); err != nil {
		t.Fatal(err)
	}
	// Version 1's usage rows had no ladder counters.
	if _, err := old.pool.Exec(ctx, `INSERT INTO usage (session, provider, model, at, client_tokens, upstream_tokens,
		input, cache_read, cache_write, output, saved_usd) VALUES ('s', 'anthropic', 'm', now(), 100, 60, 1, 2, 3, 4, 0.5)`); err != nil {
		t.Fatal(err)
	}
	if err := old.AddUsage(ctx, store.Usage{Session: "s"}); err == nil {
		t.Fatal("version 1 schema accepted a version 2 usage row; the migration test tests nothing")
	}
	old.Close()

	s := openT(t, dsn)
	defer s.Close()
	var version, rows int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version), COUNT(*) FROM ctxkit_schema`).Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations()
	if version != len(ms) || rows != len(ms) {
		t.Fatalf("schema at version %d with %d migration rows, want %d", version, rows, len(ms))
	}
	ds, v, err := s.Decisions(ctx, "s")
	if err != nil || v != 1 || len(ds) != 1 || string(ds[0].Data) != "[cleared]" {
		t.Fatalf("decisions after migration: %+v v%d %v", ds, v, err)
	}
	if o, err := s.Original(ctx, "a"); err != nil || string(o.Content) != "body" {
		t.Fatalf("original after migration: %+v %v", o, err)
	}
	if err := s.AddUsage(ctx, store.Usage{Session: "s", Clears: 2}); err != nil {
		t.Fatalf("usage after migration: %v", err)
	}
	var oldClears, newClears int64
	if err := s.pool.QueryRow(ctx, `SELECT MIN(clears), MAX(clears) FROM usage WHERE session = 's'`).Scan(&oldClears, &newClears); err != nil {
		t.Fatal(err)
	}
	if oldClears != 0 || newClears != 2 {
		t.Fatalf("usage clears after migration: old row %d, new row %d; want 0, 2", oldClears, newClears)
	}
	// Opening again changes nothing.
	again := openT(t, dsn)
	again.Close()
}

// TestReplicasMigrateOnce starts several replicas on an empty database
// at once: the advisory lock lets one migrate, the others find it done.
func TestReplicasMigrateOnce(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DB(t)
	const n = 6
	errs := make(chan error, n)
	stores := make(chan *Store, n)
	for range n {
		go func() {
			s, err := Open(ctx, dsn)
			errs <- err
			stores <- s
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("replica start: %v", err)
		}
		if s := <-stores; s != nil {
			defer s.Close()
		}
	}
	s := openT(t, dsn)
	defer s.Close()
	var rows, distinct int
	if err := s.pool.QueryRow(ctx, `SELECT COUNT(*), COUNT(DISTINCT version) FROM ctxkit_schema`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != distinct {
		t.Fatalf("%d migration rows for %d versions: a migration ran twice", rows, distinct)
	}
}

func TestBadDSN(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"postgres://[::1", "host=/nonexistent/socket/dir dbname=x connect_timeout=1"} {
		s, err := Open(ctx, dsn)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", dsn)
			continue
		}
		t.Logf("Open(%q): %v", dsn, err)
	}
}

// TestTwoReplicasOneWinner races first decisions for one session from
// many goroutines over two stores (two pools, as two replicas have).
func TestTwoReplicasOneWinner(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DB(t)
	replicas := []*Store{openT(t, dsn), openT(t, dsn)}
	defer replicas[0].Close()
	defer replicas[1].Close()
	for round := range 5 {
		session := fmt.Sprintf("race-%d", round)
		const n = 32
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				me := fmt.Sprintf("r%d-g%d", i%2, i)
				// Each writer reads, decides, then commits at the version it read.
				_, v, err := replicas[i%2].Decisions(ctx, session)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = replicas[i%2].Commit(ctx, store.Session{ID: session}, v, []store.Decision{{Kind: store.KindClear, Hashes: []string{me}}})
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, me)
					mu.Unlock()
				case !errors.Is(err, store.ErrConflict):
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		// Every winner committed at a distinct version: together they form
		// one history, and every reader sees that same history.
		ds0, v0, err0 := replicas[0].Decisions(ctx, session)
		ds1, v1, err1 := replicas[1].Decisions(ctx, session)
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		if v0 != v1 || fmt.Sprint(ds0) != fmt.Sprint(ds1) {
			t.Fatalf("replicas disagree: v%d %v vs v%d %v", v0, ds0, v1, ds1)
		}
		if int(v0) != len(winners) || len(ds0) != len(winners) {
			t.Fatalf("round %d: version %d, %d decisions, %d winners %v", round, v0, len(ds0), len(winners), winners)
		}
		for i, d := range ds0 {
			if d.Seq != int64(i+1) {
				t.Fatalf("decision %d has seq %d", i, d.Seq)
			}
		}
	}
}

// TestDatabaseRestart stops the database under an open store: calls fail
// (quickly, with an error) while it is down and work again once it is
// back, on the same store, without reopening.
func TestDatabaseRestart(t *testing.T) {
	ctx := context.Background()
	c := pg.Cluster(t)
	s := openT(t, pg.DB(t))
	defer s.Close()
	if _, err := s.Commit(ctx, store.Session{ID: "s"}, 0, []store.Decision{{Kind: store.KindClear, Hashes: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	restart := c.Outage(t)
	down, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := s.Decisions(down, "s"); err == nil {
		t.Fatal("Decisions succeeded with the database stopped")
	}
	if err := s.Ping(down); err == nil {
		t.Fatal("Ping succeeded with the database stopped")
	}
	if _, err := s.Commit(down, store.Session{ID: "s"}, 1, nil); err == nil || errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit with the database stopped = %v, want a connection error", err)
	}
	restart()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after restart: %v", err)
	}
	ds, v, err := s.Decisions(ctx, "s")
	if err != nil || v != 1 || len(ds) != 1 {
		t.Fatalf("after restart: %+v v%d %v", ds, v, err)
	}
	if _, err := s.Commit(ctx, store.Session{ID: "s"}, 1, nil); err != nil {
		t.Fatalf("Commit after restart: %v", err)
	}
}

func TestPoolSize(t *testing.T) {
	dsn := pg.DB(t)
	for _, tt := range []struct {
		dsn  string
		want int32
	}{{dsn, DefaultMaxConns}, {dsn + "&pool_max_conns=3", 3}} {
		s := openT(t, tt.dsn)
		if got := s.pool.Config().MaxConns; got != tt.want {
			t.Errorf("pool size for %q = %d, want %d", tt.dsn, got, tt.want)
		}
		s.Close()
	}
}
