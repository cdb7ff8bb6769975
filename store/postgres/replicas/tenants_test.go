package replicas

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// TestTenantsApartAcrossReplicas plays rows 1 and 2 of issue 21 on
// PostgreSQL through two replicas: B, with another key, the same session
// id and the same messages, goes first and makes the proxy clear and
// summarize; A's requests then go upstream exactly as they do on a
// database B never touched (B's decisions and summaries reach none of
// them), and B's never carry A's summary.
func TestTenantsApartAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	const turns = 20
	secretSummaries := func(u *upstream) {
		u.Handle(func(c *llmtest.Call) llmtest.Reply {
			if isSummary(c) {
				if bytes.Contains(c.Body, []byte("SECRET-A")) {
					return llmtest.Text(fmt.Sprintf("SECRET-A: Alice's agent read %d messages.", len(c.Messages)))
				}
				return llmtest.Text(fmt.Sprintf("Someone's agent read %d messages.", len(c.Messages)))
			}
			return llmtest.Text("ok")
		})
	}
	alice := func() *agent {
		a := newAgent("shared")
		a.key, a.system = "sk-ant-alice", "You are Alice's private assistant. SECRET-A"
		return a
	}
	bob := func() *agent {
		b := newAgent("shared")
		b.key, b.system = "sk-ant-bogus-bob", "You are Bob's assistant."
		return b
	}
	run := func(ag *agent, rs []*replica, up *upstream) [][]byte {
		var out [][]byte
		for k := range turns {
			ag.turn(k)
			n := len(up.forwarded())
			if status, body, err := ag.send(ctx, rs[k%2].URL, false); err != nil || status != 200 {
				t.Fatalf("turn %d: %d %v %.300s", k, status, err, body)
			}
			out = append(out, up.forwarded()[n])
		}
		return out
	}

	// A alone.
	up0 := newUpstream(t)
	secretSummaries(up0)
	dsn0 := pg.DB(t)
	want := run(alice(), []*replica{startReplica(t, dsn0, up0), startReplica(t, dsn0, up0)}, up0)
	if up0.summaries() == 0 {
		t.Fatal("A alone was never summarized: the test tests nothing")
	}

	// B first, then A, on one database through two replicas.
	up := newUpstream(t)
	secretSummaries(up)
	dsn := pg.DB(t)
	rs := []*replica{startReplica(t, dsn, up), startReplica(t, dsn, up)}
	bobs := run(bob(), rs, up)
	if up.summaries() == 0 {
		t.Fatal("B was never summarized: the test tests nothing")
	}
	got := run(alice(), []*replica{rs[1], rs[0]}, up)
	for k := range turns {
		if !bytes.Equal(got[k], want[k]) {
			t.Fatalf("A's turn %d went upstream differently after B's requests (%d bytes, alone %d): B's state reached A", k, len(got[k]), len(want[k]))
		}
	}
	// B again, after A's summaries exist.
	b := bob()
	for k := range turns {
		b.turn(k)
	}
	n := len(up.forwarded())
	if status, body, err := b.send(ctx, rs[0].URL, false); err != nil || status != 200 {
		t.Fatalf("B again: %d %v %.300s", status, err, body)
	}
	for _, body := range append(bobs, up.forwarded()[n:]...) {
		if bytes.Contains(body, []byte("SECRET-A")) {
			t.Fatal("B's request went upstream carrying A's summary")
		}
	}
}
