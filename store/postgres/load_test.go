package postgres

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// BenchmarkLoad runs the store traffic of 64 concurrent proxied sessions
// × 30 turns, each turn on the replica after the previous one's (two
// replicas: two pools on one PostgreSQL; one replica: the embedded SQLite
// file). A turn is what the proxy asks of its store for one request: read
// the session's decisions and add its usage; every 6th turn also store
// two cleared originals (16 kB each) and commit a clear decision; turn 20
// stores a summary and commits it. It reports turns per second, store
// time per turn (p50, p99) and errors.
//
//	go test -run '^$' -bench Load -benchtime 1x ./store/postgres/
func BenchmarkLoad(b *testing.B) {
	const sessions, turns = 64, 30
	ctx := context.Background()
	b.Run("sqlite-1replica", func(b *testing.B) {
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "serve.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		runLoad(b, []store.Store{s}, sessions, turns)
	})
	b.Run("postgres-2replicas", func(b *testing.B) {
		dsn := pg.DurableDB(b)
		var rs []store.Store
		for range 2 {
			s, err := Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rs = append(rs, s)
		}
		runLoad(b, rs, sessions, turns)
	})
}

func runLoad(b *testing.B, replicas []store.Store, sessions, turns int) {
	ctx := context.Background()
	body := bytes.Repeat([]byte("output line of a tool result\n"), 16<<10/29)
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs int
	)
	b.ResetTimer()
	start := time.Now()
	for iter := range b.N {
		var wg sync.WaitGroup
		for sess := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("load-%d-%d-%d", b.N, iter, sess)
				for turn := range turns {
					s := replicas[turn%len(replicas)]
					t0 := time.Now()
					err := loadTurn(ctx, s, id, turn, body)
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					if err != nil {
						errs++
						if errs < 5 {
							b.Logf("session %s turn %d: %v", id, turn, err)
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(errs), "errors")
}

func loadTurn(ctx context.Context, s store.Store, id string, turn int, body []byte) error {
	_, v, err := s.Decisions(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case turn%6 == 5:
		h1, h2 := fmt.Sprintf("%s/%d/a", id, turn), fmt.Sprintf("%s/%d/b", id, turn)
		if err := s.PutOriginals(ctx, []store.Original{
			{Hash: h1, Session: id, Tool: "Read", Label: "a.go", Content: body},
			{Hash: h2, Session: id, Tool: "Bash", Label: "go test", Content: body},
		}); err != nil {
			return err
		}
		if _, err := s.Commit(ctx, store.Session{ID: id, Provider: "anthropic", Model: "m"}, v,
			[]store.Decision{{Kind: store.KindClear, Hashes: []string{h1, h2}, Data: []byte("[cleared]")}}); err != nil {
			return err
		}
	case turn == 20:
		key := id + "/summary"
		if err := s.PutSummary(ctx, store.Summary{Key: key, Session: id, Model: "m", Text: string(body[:4000]), Method: "model"}); err != nil {
			return err
		}
		if _, err := s.Commit(ctx, store.Session{ID: id}, v,
			[]store.Decision{{Kind: store.KindSummary, Hashes: []string{"m1", "m2", "m3"}, Key: key}}); err != nil {
			return err
		}
	}
	return s.AddUsage(ctx, store.Usage{Session: id, Provider: "anthropic", Model: "m", ClientTokens: 50000,
		UpstreamTokens: 30000, Input: 100, CacheRead: 29000, CacheWrite: 900, Output: 300})
}

// BenchmarkTurn is one proxied request's store traffic (see BenchmarkLoad)
// with nothing else running: the store time a request adds when the
// database is idle.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	body := bytes.Repeat([]byte("output line of a tool result\n"), 16<<10/29)
	bench := func(b *testing.B, s store.Store) {
		for i := 0; b.Loop(); i++ {
			if err := loadTurn(ctx, s, fmt.Sprintf("turn-%d", i/30), i%30, body); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "serve.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		bench(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		s, err := Open(ctx, pg.DurableDB(b))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		bench(b, s)
	})
}
