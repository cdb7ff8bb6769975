package llmtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// blocks returns n positions of 100 tokens each, keyed by index.
func blocks(n int) []position {
	ps := make([]position, n)
	for i := range ps {
		ps[i] = position{key: []byte(fmt.Sprintf("block %d", i)), tokens: 100, ttl: 5 * time.Minute}
	}
	return ps
}

func anchored(ps []position, at ...int) []position {
	out := append([]position(nil), ps...)
	for _, i := range at {
		out[i].breakpoint = true
	}
	return out
}

type usage struct{ read, w5, w1, input int }

func TestExplicitCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	type step struct {
		at    time.Duration // since t0
		model string
		ps    []position
		min   int
		want  usage
	}
	ttl1h := func(ps []position, i int) []position { ps[i].ttl = time.Hour; return ps }
	cases := []struct {
		name  string
		steps []step
	}{
		{"write then read", []step{
			{0, "m", anchored(blocks(10), 7), 0, usage{0, 800, 0, 200}},
			{time.Second, "m", anchored(blocks(10), 7), 0, usage{800, 0, 0, 200}},
		}},
		{"growing conversation", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{time.Second, "m", anchored(blocks(15), 14), 0, usage{1000, 500, 0, 0}},
		}},
		{"lookback of 20 hits", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{time.Second, "m", anchored(blocks(29), 28), 0, usage{1000, 1900, 0, 0}},
		}},
		{"21 blocks later misses", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{time.Second, "m", anchored(blocks(30), 29), 0, usage{0, 3000, 0, 0}},
		}},
		{"a second anchor bridges the gap", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{time.Second, "m", anchored(blocks(30), 15, 29), 0, usage{1000, 2000, 0, 0}},
		}},
		{"below the minimum nothing is cached", []step{
			{0, "m", anchored(blocks(10), 3), 1000, usage{0, 0, 0, 1000}},
			{time.Second, "m", anchored(blocks(10), 3), 1000, usage{0, 0, 0, 1000}},
		}},
		{"only anchors past the minimum count", []step{
			{0, "m", anchored(blocks(20), 3, 15), 1000, usage{0, 1600, 0, 400}},
		}},
		{"expired after five minutes", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{6 * time.Minute, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
		}},
		{"a hit refreshes the entry", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{4 * time.Minute, "m", anchored(blocks(10), 9), 0, usage{1000, 0, 0, 0}},
			{8 * time.Minute, "m", anchored(blocks(10), 9), 0, usage{1000, 0, 0, 0}},
		}},
		{"one hour entries outlive five minutes", []step{
			{0, "m", ttl1h(anchored(blocks(10), 4, 9), 4), 0, usage{0, 500, 500, 0}},
			{30 * time.Minute, "m", anchored(blocks(10), 4, 9), 0, usage{500, 500, 0, 0}},
		}},
		{"another model misses", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{time.Second, "other", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
		}},
		{"a changed early block invalidates the rest", []step{
			{0, "m", anchored(blocks(10), 9), 0, usage{0, 1000, 0, 0}},
			{time.Second, "m", func() []position {
				ps := anchored(blocks(10), 9)
				ps[2].key = []byte("edited")
				return ps
			}(), 0, usage{0, 1000, 0, 0}},
		}},
		{"no anchor, no cache", []step{
			{0, "m", blocks(10), 0, usage{0, 0, 0, 1000}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newPrefixCache()
			for i, s := range tc.steps {
				var got usage
				got.read, got.w5, got.w1, got.input = c.explicitUsage(t0.Add(s.at), s.model, s.ps, s.min)
				if got != s.want {
					t.Errorf("step %d: got %+v, want %+v", i, got, s.want)
				}
				if sum := got.read + got.w5 + got.w1 + got.input; sum != 100*len(s.ps) {
					t.Errorf("step %d: parts sum to %d, the prompt is %d", i, sum, 100*len(s.ps))
				}
			}
		})
	}
}

func TestAutomaticCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := newPrefixCache()
	if got := c.automaticUsage(t0, "m", blocks(20), 1024, 128); got != 0 {
		t.Errorf("first request cached %d", got)
	}
	if got := c.automaticUsage(t0.Add(time.Second), "m", blocks(25), 1024, 128); got != 1920 {
		t.Errorf("grown request cached %d, want 2000 rounded down to 1920", got)
	}
	if got := c.automaticUsage(t0.Add(2*time.Second), "m", blocks(5), 1024, 128); got != 0 {
		t.Errorf("a 500-token prefix cached %d; the minimum is 1024", got)
	}
	if got := c.automaticUsage(t0.Add(time.Hour), "m", blocks(25), 1024, 128); got != 0 {
		t.Errorf("an hour later still cached %d", got)
	}
}

// TestCacheBytes checks what counts as the same prefix on the wire: moved
// cache_control and other string escapes do not change the content, key
// order in a tool input does.
func TestCacheBytes(t *testing.T) {
	srv := NewServer(t, Config{MinCacheable: 1})
	long := strings.Repeat("x", 400)
	body := func(input, anchorOn string) string {
		cc := func(where string) string {
			if where == anchorOn {
				return `,"cache_control":{"type":"ephemeral"}`
			}
			return ""
		}
		return anthBody(`[{"role":"user","content":[{"type":"text","text":"` + long + `"` + cc("user") + `}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":` + input + cc("call") + `}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a\u003cb"` + cc("result") + `}]}]`)
	}
	send := func(b string) *Call {
		t.Helper()
		if status, data := post(t, srv, Anthropic, b, false); status != http.StatusOK {
			t.Fatalf("%d %s", status, data)
		}
		return srv.Last()
	}
	first := send(body(`{"path":"a.go","limit":5}`, "result"))
	if first.Usage.CacheWrite == 0 || first.Usage.CacheRead != 0 {
		t.Fatalf("first usage %+v", first.Usage)
	}
	same := send(strings.Replace(body(`{"path":"a.go","limit":5}`, "result"), `a\u003cb`, `a<b`, 1))
	if same.Usage.CacheRead != first.Usage.CacheWrite {
		t.Errorf("the same content spelled differently read %d, want %d", same.Usage.CacheRead, first.Usage.CacheWrite)
	}
	reordered := send(body(`{"limit":5,"path":"a.go"}`, "result"))
	if reordered.Usage.CacheRead != 0 {
		t.Errorf("reordered tool input keys still read %d from the cache", reordered.Usage.CacheRead)
	}
	// Entries exist only where an earlier request had its anchor: moved
	// back by one block, the anchor finds nothing to read and writes anew.
	moved := send(body(`{"path":"a.go","limit":5}`, "call"))
	if moved.Usage.CacheRead != 0 || moved.Usage.CacheWrite == 0 {
		t.Errorf("an anchor moved back one block: usage %+v, want a fresh write", moved.Usage)
	}
	back := send(body(`{"path":"a.go","limit":5}`, "result"))
	if back.Usage.CacheRead != first.Usage.CacheWrite {
		t.Errorf("the anchor back in place read %d, want %d", back.Usage.CacheRead, first.Usage.CacheWrite)
	}
}
