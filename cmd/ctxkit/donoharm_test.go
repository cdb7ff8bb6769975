package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestDoNoHarmCorpus is issue 22's "do no harm" on the shared corpus, as a
// user runs it (`ctxkit bench FILES --window W [--pricing nocache]
// --strategies none,ctxkit --json`): at 64k and 200k, with Anthropic's
// prices and without a cache, every session whose context stays under half
// the window costs no more with ctxkit than sending everything. Only the
// recordings small enough to hold such a session are replayed.
func TestDoNoHarmCorpus(t *testing.T) {
	files := corpus.Files(t)
	ctx := context.Background()
	counter := tokens.NewEstimator()
	size := make(map[string]int, len(files)) // the smallest epoch of each recording
	for _, p := range files {
		s, err := importer.Load(ctx, p, importer.Options{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		size[p] = -1
		for _, b := range benchSessions(p, s.Conv) {
			if n := b.Conv.Tokens(counter).Total(); size[p] < 0 || n < size[p] {
				size[p] = n
			}
		}
	}
	for _, window := range []int{64_000, 200_000} {
		var short []string
		for _, p := range files {
			if size[p] < window/2 {
				short = append(short, p)
			}
		}
		for _, prices := range []string{"anthropic", "nocache"} {
			t.Run(fmt.Sprintf("%dk-%s", window/1000, prices), func(t *testing.T) {
				t.Parallel()
				args := append(slices.Clone(short), "--window", fmt.Sprint(window), "--pricing", prices, "--strategies", "none,ctxkit", "--json")
				out, errOut, err := runBench(t, args...)
				if err != nil {
					t.Fatalf("%v\n%s", err, errOut)
				}
				var rep struct {
					PerSession []struct {
						Session    string `json:"session"`
						Strategies []struct {
							Strategy string  `json:"strategy"`
							Cost     float64 `json:"cost_usd"`
							Peak     int     `json:"peak_context_tokens"`
						} `json:"strategies"`
					} `json:"per_session"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatal(err)
				}
				checked := 0
				for _, s := range rep.PerSession {
					by := map[string]float64{}
					peak := 0
					for _, x := range s.Strategies {
						by[x.Strategy] = x.Cost
						if x.Strategy == "none" {
							peak = x.Peak
						}
					}
					if peak >= window/2 {
						continue
					}
					checked++
					if by["ctxkit"] > by["none"]*(1+1e-9) {
						t.Errorf("%s (peak %d): ctxkit costs %.4f× sending everything", s.Session, peak, by["ctxkit"]/by["none"])
					}
				}
				if checked == 0 {
					t.Fatal("no session under half the window was checked")
				}
				t.Logf("%d sessions under half the window checked", checked)
			})
		}
	}
}
