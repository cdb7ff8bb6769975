package serve

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// simOfTokens is a session whose request after n turns is about tokens
// tokens (4 bytes each).
func simOfTokens(tokens int) (sim, int) {
	s := sim{name: fmt.Sprintf("b%d", tokens), resultSize: 4000, say: 400}
	per := len(s.body(2)) - len(s.body(1))
	return s, tokens * 4 / per
}

// BenchmarkAddedLatency is the proxy's time for one request (parse, bring
// the conversation's engine up to it, decide, splice), upstream excluded,
// in the steady state of a long session: every request repeats the
// history and adds the next turn, as a client does. Every 20 requests the
// session starts again under a new id from the same history (untimed), so
// the history stays near its size. p50, p90 and p99 are reported per
// size; run it on a quiet machine.
func BenchmarkAddedLatency(b *testing.B) {
	for _, tokens := range []int{20_000, 100_000, 200_000} {
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			s, n := simOfTokens(tokens)
			p := newProxy(b, "http://127.0.0.1:1", Config{Window: tokens * 5 / 4})
			ctx := p.tenantContext(b) // as a request's, within the test key's tenant
			h := http.Header{}
			prepare := func(body []byte) *decided {
				d, err := p.srv.prepare(ctx, h, providerAnthropic, "messages", body, p.srv.cfg.Clock())
				if err != nil {
					b.Fatal(err)
				}
				return d
			}
			prep := func(body []byte) *decided {
				d := prepare(body)
				p.srv.settle(d, http.StatusOK) // after the upstream's status: not added latency
				return d
			}
			const run = 20
			bodies := make([][]byte, run)
			for k := range bodies {
				bodies[k] = s.body(n + k)
			}
			start := func(i int) {
				h.Set("X-Claude-Code-Session-Id", fmt.Sprintf("%s-%d", s.name, i))
				prep(s.body(n - 1))
			}
			start(0)
			var out *decided
			b.SetBytes(int64(len(bodies[0])))
			durs := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i > 0 && i%run == 0 {
					b.StopTimer()
					start(i)
					b.StartTimer()
				}
				t0 := time.Now()
				out = prepare(bodies[i%run])
				durs = append(durs, time.Since(t0))
				b.StopTimer()
				p.srv.settle(out, http.StatusOK)
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(durs)
			ms := func(q float64) float64 { return float64(durs[int(q*float64(len(durs)-1))].Microseconds()) / 1000 }
			b.ReportMetric(ms(0.5), "p50-ms")
			b.ReportMetric(ms(0.9), "p90-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
			b.ReportMetric(float64(out.out.len())/float64(len(out.out.body)), "sent/client")
		})
	}
}

// TestLoad is the bounded loopback load test: 32 concurrent sessions × 30
// turns through the proxy to the llmtest upstream. It runs when
// CTXKIT_LOAD=1 (the figures go to the README).
func TestLoad(t *testing.T) {
	if os.Getenv("CTXKIT_LOAD") != "1" {
		t.Skip("the load test runs with CTXKIT_LOAD=1")
	}
	const sessions, turns = 32, 30
	up := llmtest.NewServer(t, llmtest.Config{Window: 40_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 40_000})
	var mu sync.Mutex
	var added []time.Duration
	p.srv.onLatency = func(d time.Duration) {
		mu.Lock()
		added = append(added, d)
		mu.Unlock()
	}
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = sessions
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, sessions*turns)
	start := time.Now()
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sim{name: fmt.Sprintf("load%02d", i), resultSize: 3000, say: 300}
			for n := 1; n <= turns && ctx.Err() == nil; n++ {
				resp, data := p.post(t, "/v1/messages", s.name, s.body(n))
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("%s turn %d: %d %s", s.name, n, resp.StatusCode, data)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	nerr := 0
	for err := range errs {
		nerr++
		t.Error(err)
	}
	slices.Sort(added)
	pct := func(q float64) time.Duration { return added[int(q*float64(len(added)-1))] }
	t.Logf("load: %d sessions × %d turns = %d requests in %v on %d CPUs: %.0f req/s; added latency p50 %v p90 %v p99 %v max %v; %d errors",
		sessions, turns, len(added), elapsed.Round(time.Millisecond), runtime.NumCPU(), float64(len(added))/elapsed.Seconds(),
		pct(0.5), pct(0.9), pct(0.99), added[len(added)-1], nerr)
}
