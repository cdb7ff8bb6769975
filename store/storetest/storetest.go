package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// Run runs the conformance suite. open returns a fresh, empty store; Run
// closes it.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"EmptySession", testEmpty},
		{"CommitAndReload", testCommit},
		{"CommitConflict", testConflict},
		{"ConcurrentCommitsOneWinner", testConcurrent},
		{"Summaries", testSummaries},
		{"Originals", testOriginals},
		{"Usage", testUsage},
		{"Sessions", testSessions},
		{"Canceled", testCanceled},
		{"Secret", testSecret},
		{"Prune", testPrune},
		{"TenantsApart", testTenants},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			tt.fn(t, s)
		})
	}
}

func testEmpty(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Session(missing) = %v, want ErrNotFound", err)
	}
	ds, v, err := s.Decisions(ctx, "nope")
	if err != nil || v != 0 || len(ds) != 0 {
		t.Fatalf("Decisions(missing) = %v, %d, %v; want none, 0, nil", ds, v, err)
	}
	if _, err := s.Summary(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Summary(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.Original(ctx, "h"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Original(missing) = %v, want ErrNotFound", err)
	}
}

func testCommit(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Unix(1700000000, 0)
	first := []store.Decision{
		{Kind: store.KindClear, Hashes: []string{"a", "b"}, Data: []byte("[cleared]"), At: at},
		{Kind: store.KindSummary, Hashes: []string{"m1", "m2", "m3"}, Key: "sum1", At: at},
	}
	v, err := s.Commit(ctx, store.Session{ID: "s1", Provider: "anthropic", Model: "m"}, 0, first)
	if err != nil || v != 1 {
		t.Fatalf("Commit = %d, %v; want 1, nil", v, err)
	}
	v, err = s.Commit(ctx, store.Session{ID: "s1"}, 1, []store.Decision{{Kind: store.KindClear, Hashes: []string{"c"}, Data: []byte{}, At: at}})
	if err != nil || v != 2 {
		t.Fatalf("second Commit = %d, %v; want 2, nil", v, err)
	}
	ds, v, err := s.Decisions(ctx, "s1")
	if err != nil || v != 2 {
		t.Fatalf("Decisions = %d, %v; want version 2", v, err)
	}
	if len(ds) != 3 {
		t.Fatalf("got %d decisions, want 3", len(ds))
	}
	for i, d := range ds {
		if d.Seq != int64(i+1) {
			t.Errorf("decision %d: Seq %d, want %d", i, d.Seq, i+1)
		}
		if !d.At.Equal(at) {
			t.Errorf("decision %d: At %v, want %v", i, d.At, at)
		}
	}
	if ds[0].Kind != store.KindClear || fmt.Sprint(ds[0].Hashes) != "[a b]" || string(ds[0].Data) != "[cleared]" {
		t.Errorf("decision 1 = %+v", ds[0])
	}
	if ds[1].Kind != store.KindSummary || ds[1].Key != "sum1" || fmt.Sprint(ds[1].Hashes) != "[m1 m2 m3]" {
		t.Errorf("decision 2 = %+v", ds[1])
	}
	if fmt.Sprint(ds[2].Hashes) != "[c]" {
		t.Errorf("decision 3 = %+v", ds[2])
	}
	sess, err := s.Session(ctx, "s1")
	if err != nil || sess.Provider != "anthropic" || sess.Model != "m" || sess.Version != 2 {
		t.Fatalf("Session = %+v, %v", sess, err)
	}
	// An empty commit still bumps the version (a "checked, nothing to do" mark).
	if v, err := s.Commit(ctx, store.Session{ID: "s1"}, 2, nil); err != nil || v != 3 {
		t.Fatalf("empty Commit = %d, %v; want 3", v, err)
	}
}

func testConflict(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.Commit(ctx, store.Session{ID: "s"}, 0, []store.Decision{{Kind: store.KindClear, Hashes: []string{"x"}}}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Commit(ctx, store.Session{ID: "s"}, 0, []store.Decision{{Kind: store.KindClear, Hashes: []string{"y"}}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale Commit = %v, want ErrConflict", err)
	}
	_, err = s.Commit(ctx, store.Session{ID: "s"}, 5, nil)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("future-version Commit = %v, want ErrConflict", err)
	}
	ds, v, err := s.Decisions(ctx, "s")
	if err != nil || v != 1 || len(ds) != 1 || ds[0].Hashes[0] != "x" {
		t.Fatalf("after conflicts: %+v v%d %v; want only the first decision", ds, v, err)
	}
}

func testConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	wins := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Commit(ctx, store.Session{ID: "race"}, 0, []store.Decision{{Kind: store.KindClear, Hashes: []string{fmt.Sprint(i)}}})
			switch {
			case err == nil:
				wins <- i
			case errors.Is(err, store.ErrConflict):
			default:
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(wins)
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Commit: %v", err)
	}
	var winners []int
	for w := range wins {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d winners %v, want exactly 1", len(winners), winners)
	}
	ds, v, err := s.Decisions(ctx, "race")
	if err != nil || v != 1 || len(ds) != 1 || ds[0].Hashes[0] != fmt.Sprint(winners[0]) {
		t.Fatalf("stored %+v v%d %v; want the winner's decision only", ds, v, err)
	}
}

func testSummaries(t *testing.T, s store.Store) {
	ctx := context.Background()
	sum := store.Summary{Key: "k1", Session: "s", Model: "m", Text: "did things", Method: "model", At: time.Unix(5, 0)}
	if err := s.PutSummary(ctx, sum); err != nil {
		t.Fatal(err)
	}
	again := sum
	again.Text = "other"
	if err := s.PutSummary(ctx, again); err != nil {
		t.Fatal(err)
	}
	got, err := s.Summary(ctx, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "did things" || got.Method != "model" || got.Model != "m" || got.Session != "s" || !got.At.Equal(sum.At) {
		t.Fatalf("Summary = %+v, want the first value %+v", got, sum)
	}
}

func testOriginals(t *testing.T, s store.Store) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("line of output\n"), 10000)
	err := s.PutOriginals(ctx, []store.Original{
		{Hash: "h1", Session: "s", Tool: "Bash", Label: "go test", Content: big},
		{Hash: "h2", Session: "s", Tool: "Read", Label: "a.go", Content: []byte{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutOriginals(ctx, []store.Original{{Hash: "h1", Content: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	o, err := s.Original(ctx, "h1")
	if err != nil || !bytes.Equal(o.Content, big) || o.Tool != "Bash" || o.Label != "go test" {
		t.Fatalf("Original(h1) = %q…, %v", o.Tool, err)
	}
	o, err = s.Original(ctx, "h2")
	if err != nil || len(o.Content) != 0 {
		t.Fatalf("Original(h2) = %+v, %v", o, err)
	}
	if err := s.PutOriginals(ctx, nil); err != nil {
		t.Fatalf("PutOriginals(nil) = %v", err)
	}
}

func testUsage(t *testing.T, s store.Store) {
	ctx := context.Background()
	for range 3 {
		err := s.AddUsage(ctx, store.Usage{Session: "u", Provider: "anthropic", Model: "m", ClientTokens: 100, UpstreamTokens: 60,
			Input: 10, CacheRead: 40, CacheWrite: 10, Output: 5, SavedUSD: 0.5, Clears: 2, Compactions: 1, FailOpen: 1})
		if err != nil {
			t.Fatal(err)
		}
	}
	sess, err := s.Session(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Totals{Requests: 3, ClientTokens: 300, UpstreamTokens: 180, Input: 30, CacheRead: 120, CacheWrite: 30, Output: 15,
		SavedUSD: 1.5, Compactions: 3, Clears: 6, FailOpen: 3}
	if sess.Totals != want {
		t.Fatalf("Totals = %+v, want %+v", sess.Totals, want)
	}
	if sess.Version != 0 {
		t.Fatalf("usage changed the decision version to %d", sess.Version)
	}
	// Usage must not disturb the decision CAS.
	if _, err := s.Commit(ctx, store.Session{ID: "u"}, 0, nil); err != nil {
		t.Fatalf("Commit after usage: %v", err)
	}
}

func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	for i, id := range []string{"old", "mid", "new"} {
		if err := s.AddUsage(ctx, store.Usage{Session: id, At: time.Unix(int64(1000+i), 0)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Sessions(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "new" || got[1].ID != "mid" {
		t.Fatalf("Sessions(2) = %v, want new, mid", ids(got))
	}
}

func ids(ss []store.Session) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func testCanceled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Commit(ctx, store.Session{ID: "c"}, 0, nil); err == nil {
		t.Fatal("Commit with a canceled context succeeded")
	}
	if _, v, err := s.Decisions(context.Background(), "c"); err != nil || v != 0 {
		t.Fatalf("canceled Commit left version %d (%v)", v, err)
	}
}

func testSecret(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, err := s.Secret(ctx)
	if err != nil || len(a) != 32 {
		t.Fatalf("Secret = %x, %v; want 32 bytes", a, err)
	}
	b, err := s.Secret(ctx)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("second Secret = %x, %v; want the first, %x", b, err, a)
	}
}

func testPrune(t *testing.T, s store.Store) {
	ctx := context.Background()
	old, cut := time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
	// "gone": a session last active before the cut, with a decision, a
	// summary, an original and usage. "live": active since, with old rows
	// its decisions still need.
	if _, err := s.Commit(ctx, store.Session{ID: "gone"}, 0, []store.Decision{{Kind: store.KindSummary, Key: "kg", At: old}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gone", "live"} {
		if err := s.PutSummary(ctx, store.Summary{Key: "k" + id[:1], Session: id, Text: "t", At: old}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutOriginals(ctx, []store.Original{{Hash: "h" + id[:1], Session: id, Content: []byte("x"), At: old}}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddUsage(ctx, store.Usage{Session: id, At: old}); err != nil {
			t.Fatal(err)
		}
	}
	// The session's updated time is the commit's (now) in some stores:
	// prune at a cut after it for "gone", and make "live" newer still.
	time.Sleep(10 * time.Millisecond)
	cut = time.Now()
	time.Sleep(10 * time.Millisecond)
	if err := s.AddUsage(ctx, store.Usage{Session: "live"}); err != nil {
		t.Fatal(err)
	}
	_ = old
	n, err := s.Prune(ctx, cut)
	if err != nil || n == 0 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if _, err := s.Session(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session gone after Prune: %v, want ErrNotFound", err)
	}
	if ds, v, _ := s.Decisions(ctx, "gone"); len(ds) != 0 || v != 0 {
		t.Errorf("pruned session keeps %d decisions at version %d", len(ds), v)
	}
	if _, err := s.Summary(ctx, "kg"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pruned session's summary: %v, want ErrNotFound", err)
	}
	if _, err := s.Original(ctx, "hg"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pruned session's original: %v, want ErrNotFound", err)
	}
	if _, err := s.Summary(ctx, "kl"); err != nil {
		t.Errorf("a live session's summary was pruned: %v", err)
	}
	if _, err := s.Original(ctx, "hl"); err != nil {
		t.Errorf("a live session's original was pruned: %v", err)
	}
	if x, err := s.Session(ctx, "live"); err != nil || x.Totals.Requests != 2 {
		t.Errorf("live session after Prune: %+v, %v", x, err)
	}
	if n, err := s.Size(ctx); err != nil || n <= 0 {
		t.Errorf("Size = %d, %v", n, err)
	}
}

func testTenants(t *testing.T, s store.Store) {
	ctx := context.Background()
	secret, err := s.Secret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := store.Tenant(secret, "key", "sk-a"), store.Tenant(secret, "key", "sk-b")
	if ta == tb || strings.Contains(ta, "sk-a") {
		t.Fatalf("tenants %q and %q", ta, tb)
	}
	a, err := store.Scope(s, ta)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := store.Scope(s, tb)
	// The same session id, summary key and original hash in both.
	if _, err := a.Commit(ctx, store.Session{ID: "same"}, 0, []store.Decision{{Kind: store.KindSummary, Key: "k"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutSummary(ctx, store.Summary{Key: "k", Session: "same", Text: "A's secret"}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutOriginals(ctx, []store.Original{{Hash: "h", Session: "same", Content: []byte("A's output")}}); err != nil {
		t.Fatal(err)
	}
	if ds, v, err := b.Decisions(ctx, "same"); err != nil || v != 0 || len(ds) != 0 {
		t.Fatalf("B sees A's session: %v %d %v", ds, v, err)
	}
	if _, err := b.Summary(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("B reads A's summary: %v", err)
	}
	if _, err := b.Original(ctx, "h"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("B reads A's original: %v", err)
	}
	if err := b.PutSummary(ctx, store.Summary{Key: "k", Session: "same", Text: "B's"}); err != nil {
		t.Fatal(err)
	}
	if x, err := a.Summary(ctx, "k"); err != nil || x.Text != "A's secret" || x.Key != "k" || x.Session != "same" {
		t.Fatalf("A's summary after B wrote the same key: %+v, %v", x, err)
	}
	if x, err := b.Summary(ctx, "k"); err != nil || x.Text != "B's" {
		t.Fatalf("B's summary: %+v, %v", x, err)
	}
	ds, v, err := a.Decisions(ctx, "same")
	if err != nil || v != 1 || len(ds) != 1 || ds[0].Key != "k" {
		t.Fatalf("A's decisions: %+v %d %v", ds, v, err)
	}
	if o, err := a.Original(ctx, "h"); err != nil || o.Hash != "h" || o.Session != "same" {
		t.Fatalf("A's original: %+v, %v", o, err)
	}
	if _, err := store.Scope(s, "sk-a"); !errors.Is(err, store.ErrNoTenant) {
		t.Fatalf("Scope with a non-tenant id: %v", err)
	}
}
