package replicas

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/jackc/pgx/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// kill9 kills a ctxkit serve process with SIGKILL and reaps it.
func kill9(t *testing.T, p *process) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

// TestKilledMidStream kills the replica streaming the answer to the
// request that first clears, and retries on the other: the retry goes
// upstream byte for byte as the killed replica sent it (its decision was
// durable before it forwarded), nothing is decided twice, and the session
// continues.
func TestKilledMidStream(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DB(t)
	up := newUpstream(t)
	a, b := startProcess(t, dsn, up), startProcess(t, dsn, up)
	p := profileOf(t, "killed", 20)
	ag := newAgent("killed")
	for k := range p.firstClear {
		ag.turn(k)
		if status, body, err := ag.send(ctx, []string{a.URL, b.URL}[k%2], true); err != nil || status != 200 {
			t.Fatalf("turn %d: %d %v %.300s", k, status, err, body)
		}
	}
	ag.turn(p.firstClear) // crosses the clearing threshold
	up.stallNext(func(c *llmtest.Call) bool { return c.Stream && !isSummary(c) })
	req, err := ag.request(ctx, a.URL, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "event:") {
		t.Fatalf("stream's first line %q, %v", first, err)
	}
	up.waitStalled(t)
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tv := tenantView(t, st, agentKey)
	ds0, version, err := tv.Decisions(ctx, "cc:killed")
	if err != nil || version == 0 {
		t.Fatalf("the killed replica's decision is not stored: v%d %v", version, err)
	}

	kill9(t, a) // mid-stream
	if rest, err := io.ReadAll(br); err == nil {
		t.Fatalf("the stream of a killed replica ended cleanly (%v %d %v): %q", resp.TransferEncoding, resp.ContentLength, resp.Header, rest)
	}
	status, body, err := ag.send(ctx, b.URL, true) // the client's retry
	if err != nil || status != 200 || !bytes.Contains(body, []byte("message_stop")) {
		t.Fatalf("retry on the other replica: %d %v %.300s", status, err, body)
	}
	fw := up.forwarded()
	killed, retried := fw[len(fw)-2], fw[len(fw)-1]
	if !bytes.Equal(killed, retried) {
		t.Fatal("the retry went upstream differently from the killed replica's request")
	}
	if countPlaceholders(retried) == 0 {
		t.Fatal("the request was not rewritten: the test tests nothing")
	}
	// The retry may store what was observed of earlier responses
	// (store.KindObserved), but no rewrite of its own.
	if ds, _, _ := tv.Decisions(ctx, "cc:killed"); len(rewrites(ds)) != len(rewrites(ds0)) {
		t.Fatalf("the retry decided again: %d decisions → %d", len(rewrites(ds0)), len(rewrites(ds)))
	}
	for k := p.firstClear + 1; k < p.firstClear+4; k++ {
		ag.turn(k)
		if status, body, err := ag.send(ctx, b.URL, k%2 == 0); err != nil || status != 200 {
			t.Fatalf("turn %d after the kill: %d %v %.300s", k, status, err, body)
		}
	}
}

// TestKilledMidSummary kills the replica while it waits for the summary
// of the session's first compaction: nothing of that compaction is
// stored, the retry on the other replica compacts whole, and the request
// goes upstream as it does through one replica that never died.
func TestKilledMidSummary(t *testing.T) {
	ctx := context.Background()
	// The reference: one replica on the embedded store that never dies.
	p := profileOf(t, "midsummary", 20)
	compactTurn := p.firstCompact
	want := p.forwarded[compactTurn]

	dsn := pg.DB(t)
	up := newUpstream(t)
	a, b := startProcess(t, dsn, up), startProcess(t, dsn, up)
	ag := newAgent("midsummary")
	for k := range compactTurn {
		ag.turn(k)
		if status, body, err := ag.send(ctx, []string{a.URL, b.URL}[k%2], false); err != nil || status != 200 {
			t.Fatalf("turn %d: %d %v %.300s", k, status, err, body)
		}
	}
	ag.turn(compactTurn)
	up.stallNext(isSummary)
	done := make(chan error, 1)
	go func() {
		_, _, err := ag.send(ctx, a.URL, false)
		done <- err
	}()
	up.waitStalled(t) // the summary request is in flight
	kill9(t, a)
	if err := <-done; err == nil {
		t.Fatal("the killed replica answered")
	}
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := countSummaries(t, dsn, "cc:"+ag.session); n != 0 {
		t.Fatalf("%d summaries stored by a replica killed before its summary came back", n)
	}
	status, body, err := ag.send(ctx, b.URL, false)
	if err != nil || status != 200 {
		t.Fatalf("retry: %d %v %.300s", status, err, body)
	}
	fw := up.forwarded()
	if got := fw[len(fw)-1]; !bytes.Equal(got, want) {
		t.Fatalf("the retry's request differs from one replica's:\n got: %.300s\nwant: %.300s", got, want)
	}
	if n := countSummaries(t, dsn, tenantID(t, st, agentKey)+"/cc:"+ag.session); n != 1 {
		t.Fatalf("%d summaries after the retry, want 1", n)
	}
	tv := tenantView(t, st, agentKey)
	ds, _, err := tv.Decisions(ctx, "cc:"+ag.session)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Kind == store.KindSummary {
			if s, err := tv.Summary(ctx, d.Key); err != nil || !strings.Contains(s.Text, "The agent read") {
				t.Fatalf("summary %s of a decision: %+v %v", d.Key, s, err)
			}
		}
	}
}

// countSummaries counts the summaries stored for a session, in the table
// itself (the Store interface looks summaries up only by key).
func countSummaries(t *testing.T, dsn, session string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM summaries WHERE session = $1`, session).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var recallID = regexp.MustCompile(`call recall with id \\"([0-9a-f]+)\\"`)

// TestRecallThroughMCP: a block one replica cleared comes back whole
// through ctxkit mcp reading the same database.
func TestRecallThroughMCP(t *testing.T) {
	ctx := context.Background()
	dsn := pg.DB(t)
	up := newUpstream(t)
	a, b := startReplica(t, dsn, up), startReplica(t, dsn, up)
	ag := newAgent("recall")
	p := profileOf(t, "recall", 20)
	for k := range p.firstClear + 1 {
		ag.turn(k)
		if status, body, err := ag.send(ctx, []string{a.URL, b.URL}[k%2], false); err != nil || status != 200 {
			t.Fatalf("turn %d: %d %v %.300s", k, status, err, body)
		}
	}
	fw := up.forwarded()
	m := recallID.FindSubmatch(fw[p.firstClear])
	if m == nil {
		t.Fatalf("no placeholder with a recall id in turn %d's request: %.300s", p.firstClear, fw[p.firstClear])
	}
	cmd := exec.Command(ctxkitBinary(t), "mcp", "--store", dsn)
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "CTXKIT_KEY="+agentKey)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "recall", Arguments: map[string]any{"id": string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	whole := false
	for k := range p.firstClear {
		whole = whole || strings.Contains(text, fileBody(k))
	}
	if res.IsError || !whole {
		t.Fatalf("recall(%s) = error %v, %.300s; want a cleared file's whole content", m[1], res.IsError, text)
	}
}
