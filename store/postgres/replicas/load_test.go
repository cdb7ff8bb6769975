package replicas

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// BenchmarkServeLoad is the bounded loopback load test: 64 concurrent
// agent sessions × 30 turns (each the scripted agent's growing history,
// cleared and compacted by the proxy on the way) against one replica on
// the embedded store, then two replicas on one PostgreSQL (fsync on)
// taking turns. The upstream is the in-process llmtest server. It reports
// requests per second, the latency the proxy adds (from the client's send
// to the upstream's receipt; compaction turns, which wait for a summary
// by design, counted apart), store time per request and errors.
//
//	go test -run '^$' -bench ServeLoad -benchtime 1x ./store/postgres/replicas/
func BenchmarkServeLoad(b *testing.B) {
	const sessions, turns = 64, 30
	ctx := context.Background()
	b.Run("sqlite-1replica", func(b *testing.B) {
		st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "serve.db"))
		if err != nil {
			b.Fatal(err)
		}
		ts := &timedStore{Store: st}
		up := newUpstream(b)
		serveLoad(b, up, ts, sessions, turns, serveOn(b, ts, up).URL)
	})
	b.Run("postgres-2replicas", func(b *testing.B) {
		dsn := pg.DurableDB(b)
		up := newUpstream(b)
		ts := &timedStore{}
		var urls []string
		for range 2 {
			st, err := postgres.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			r := &timedStore{Store: st, total: ts}
			urls = append(urls, serveOn(b, r, up).URL)
		}
		serveLoad(b, up, ts, sessions, turns, urls...)
	})
}

func serveLoad(b *testing.B, up *upstream, ts *timedStore, sessions, turns int, urls ...string) {
	ctx := context.Background()
	var (
		mu     sync.Mutex
		starts = map[string]time.Time{}
		errs   atomic.Int64
		n      atomic.Int64
	)
	b.ResetTimer()
	t0 := time.Now()
	for iter := range b.N {
		var wg sync.WaitGroup
		for s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := newAgent(fmt.Sprintf("load-%d-%d", iter, s))
				for k := range turns {
					a.turn(k)
					id := fmt.Sprintf("%d/%d/%d", iter, s, k)
					mu.Lock()
					starts[id] = time.Now()
					mu.Unlock()
					status, _, err := a.sendWith(ctx, urls[k%len(urls)], k%2 == 0, http.Header{"X-Load-Id": {id}})
					n.Add(1)
					if err != nil || status != 200 {
						if errs.Add(1) <= 3 {
							b.Logf("session %d turn %d: %d %v", s, k, status, err)
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	// A compaction turn is one whose forwarded request carries more
	// summaries than its session's previous one: it waited for the
	// summary request by design, so it is counted apart.
	type turnKey struct{ iter, sess, turn int }
	sums := map[turnKey]int{}
	for _, c := range up.Calls() {
		var k turnKey
		if _, err := fmt.Sscanf(c.Header.Get("X-Load-Id"), "%d/%d/%d", &k.iter, &k.sess, &k.turn); err == nil && !isSummary(c) {
			sums[k] = bytes.Count(c.Body, []byte("[Summary of turns"))
		}
	}
	var added []time.Duration
	compactions := 0
	for _, c := range up.Calls() {
		var k turnKey
		id := c.Header.Get("X-Load-Id")
		if _, err := fmt.Sscanf(id, "%d/%d/%d", &k.iter, &k.sess, &k.turn); err != nil || isSummary(c) {
			continue
		}
		if k.turn > 0 && sums[k] > sums[turnKey{k.iter, k.sess, k.turn - 1}] {
			compactions++
			continue
		}
		added = append(added, c.Time.Sub(starts[id]))
	}
	slices.Sort(added)
	ms := func(p float64) float64 {
		return float64(added[int(p*float64(len(added)-1))].Microseconds()) / 1000
	}
	req := float64(n.Load())
	b.ReportMetric(req/elapsed.Seconds(), "req/s")
	b.ReportMetric(ms(0.50), "added-p50-ms")
	b.ReportMetric(ms(0.99), "added-p99-ms")
	b.ReportMetric(float64(ts.nanos.Load())/req/1e6, "store-ms/req")
	b.ReportMetric(float64(compactions), "compactions")
	b.ReportMetric(float64(up.summaries()), "summary-calls")
	b.ReportMetric(float64(errs.Load()), "errors")
}

// timedStore adds up the time spent in the store (into total when set,
// so replicas can share one sum).
type timedStore struct {
	store.Store
	total *timedStore
	nanos atomic.Int64
}

func (s *timedStore) since(t time.Time) {
	d := time.Since(t).Nanoseconds()
	if s.total != nil {
		s.total.nanos.Add(d)
	} else {
		s.nanos.Add(d)
	}
}

func (s *timedStore) Decisions(ctx context.Context, id string) ([]store.Decision, int64, error) {
	defer s.since(time.Now())
	return s.Store.Decisions(ctx, id)
}

func (s *timedStore) Commit(ctx context.Context, info store.Session, want int64, ds []store.Decision) (int64, error) {
	defer s.since(time.Now())
	return s.Store.Commit(ctx, info, want, ds)
}

func (s *timedStore) PutSummary(ctx context.Context, x store.Summary) error {
	defer s.since(time.Now())
	return s.Store.PutSummary(ctx, x)
}

func (s *timedStore) Summary(ctx context.Context, key string) (store.Summary, error) {
	defer s.since(time.Now())
	return s.Store.Summary(ctx, key)
}

func (s *timedStore) PutOriginals(ctx context.Context, os []store.Original) error {
	defer s.since(time.Now())
	return s.Store.PutOriginals(ctx, os)
}

func (s *timedStore) AddUsage(ctx context.Context, u store.Usage) error {
	defer s.since(time.Now())
	return s.Store.AddUsage(ctx, u)
}
