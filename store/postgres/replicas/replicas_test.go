package replicas

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/store/sqlite"
)

const turns = 20

// run plays the agent's session through the replicas, turn k going to
// replicas[k%len], and returns the upstream's forwarded bodies.
func run(t *testing.T, up *upstream, replicas ...string) [][]byte {
	t.Helper()
	ctx := context.Background()
	a := newAgent("alternating")
	for k := range turns {
		a.turn(k)
		status, body, err := a.send(ctx, replicas[k%len(replicas)], k%3 == 0)
		if err != nil || status != 200 {
			t.Fatalf("turn %d: %d %v %.300s", k, status, err, body)
		}
	}
	return up.forwarded()
}

// TestAlternatingReplicasSameBytes: one session's requests alternating
// between two replicas on PostgreSQL reach the upstream byte for byte as
// they do through one replica on the embedded store, and the proxy did
// clear and compact on the way.
func TestAlternatingReplicasSameBytes(t *testing.T) {
	upOne := newUpstream(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	one := serveOn(t, st, upOne)
	want := run(t, upOne, one.URL)

	dsn := pg.DB(t)
	upTwo := newUpstream(t)
	a, b := startReplica(t, dsn, upTwo), startReplica(t, dsn, upTwo)
	got := run(t, upTwo, a.URL, b.URL)

	if len(got) != len(want) {
		t.Fatalf("%d forwarded requests through two replicas, %d through one", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("request %d differs between two replicas and one:\n two: %.400s\n one: %.400s", i, got[i], want[i])
		}
	}
	cleared, summarized := false, false
	for _, b := range got {
		cleared = cleared || countPlaceholders(b) > 0
		summarized = summarized || hasSummary(b)
	}
	if !cleared || !summarized {
		t.Fatalf("the proxy did not both clear and compact (cleared %v, summarized %v): the test tests nothing", cleared, summarized)
	}
	if upOne.summaries() != upTwo.summaries() {
		t.Errorf("summary requests: %d through two replicas, %d through one", upTwo.summaries(), upOne.summaries())
	}
	t.Logf("%d requests, %d summary requests", len(got), upTwo.summaries())
}

// TestConcurrentFirstDecisionOneWinner: many clients send the request
// that first crosses the clearing threshold, at once, half to each
// replica. One commit wins; every request goes upstream with the same
// rewrite.
func TestConcurrentFirstDecisionOneWinner(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DB(t)
	up := newUpstream(t)
	rs := []*replica{startReplica(t, dsn, up), startReplica(t, dsn, up)}
	p := profileOf(t, "race", 20)
	a := newAgent("race")
	for k := range p.firstClear + 1 { // the request that first clears
		a.turn(k)
	}
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, body, err := a.send(ctx, rs[i%2].URL, false)
			if err == nil && status != 200 {
				err = fmt.Errorf("status %d: %.300s", status, body)
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	bodies := up.forwarded()
	if len(bodies) != n {
		t.Fatalf("%d forwarded requests, want %d", len(bodies), n)
	}
	for i, b := range bodies {
		if !bytes.Equal(b, bodies[0]) {
			t.Fatalf("request %d went upstream differently from request 0: two rewrites of one history", i)
		}
	}
	if countPlaceholders(bodies[0]) == 0 {
		t.Fatal("nothing was cleared: the race decided nothing")
	}
	ds, version, err := tenantView(t, rs[0].store, agentKey).Decisions(ctx, "cc:race")
	if err != nil {
		t.Fatal(err)
	}
	// One winning set of rewrites, which may hold several decisions (a
	// compaction clears along with its summary), each stored once; what
	// was observed of the responses (store.KindObserved) may follow in
	// commits of its own.
	rw := rewrites(ds)
	seen := map[string]bool{}
	for _, d := range rw {
		k := d.Kind + "\x00" + d.Key + "\x00" + strings.Join(d.Hashes, ",")
		if seen[k] {
			t.Fatalf("session at version %d holds a decision twice after the race: two winning commits", version)
		}
		seen[k] = true
	}
	if version == 0 || len(rw) == 0 {
		t.Fatalf("session at version %d with %d decisions after the race, want one winning commit", version, len(rw))
	}
}

// TestDatabaseDownFailsOpen stops PostgreSQL mid-session: the replicas
// forward the client's requests unchanged, count it, and say degraded on
// /healthz; once it is back they apply the session's decisions again by
// themselves.
func TestDatabaseDownFailsOpen(t *testing.T) {
	ctx := context.Background()
	c := pg.Cluster(t)
	dsn := pg.DB(t)
	up := newUpstream(t)
	rs := []*replica{startReplica(t, dsn, up), startReplica(t, dsn, up)}
	a := newAgent("outage")
	k := 0
	step := func(wantRewrite bool) {
		t.Helper()
		a.turn(k)
		r := rs[k%2]
		client := a.body(false)
		status, body, err := a.send(ctx, r.URL, false)
		if err != nil || status != 200 {
			t.Fatalf("turn %d: %d %v %.300s", k, status, err, body)
		}
		fw := up.forwarded()
		sent := fw[len(fw)-1]
		if rewritten := !bytes.Equal(sent, client); rewritten != wantRewrite {
			t.Fatalf("turn %d: rewritten %v, want %v", k, rewritten, wantRewrite)
		}
		k++
	}
	p := profileOf(t, "outage", 20)
	for k < p.firstClear+2 {
		step(k >= p.firstClear)
	}
	for _, r := range rs {
		if status, body := get(t, r.URL+"/healthz"); status != 200 || !strings.Contains(body, `"ok"`) {
			t.Fatalf("healthz before the outage: %d %s", status, body)
		}
	}
	restart := c.Outage(t)
	for range 3 {
		step(false) // fail open: the client's bytes, unchanged
	}
	for _, r := range rs {
		status, body := get(t, r.URL+"/healthz")
		if !strings.Contains(body, "degraded") {
			t.Fatalf("healthz with the database down: %d %s; want degraded", status, body)
		}
		if n := metric(t, r.URL, "ctxkit_serve_fail_open_total"); n < 1 {
			t.Errorf("replica %s counted %v fail-opens, want at least 1", r.URL, n)
		}
	}
	restart()
	for range 3 {
		step(true)
	}
	for _, r := range rs {
		if status, body := get(t, r.URL+"/healthz"); status != 200 || !strings.Contains(body, `"ok"`) {
			t.Fatalf("healthz after the database came back: %d %s", status, body)
		}
	}
	ds, _, err := tenantView(t, rs[0].store, agentKey).Decisions(ctx, "cc:outage")
	if err != nil || len(ds) == 0 {
		t.Fatalf("decisions after the outage: %v %v", ds, err)
	}
}
