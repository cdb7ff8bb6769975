package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// Interval is a 95% bootstrap interval.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// CI95 holds a strategy's intervals over sessions.
type CI95 struct {
	CostVsNone Interval `json:"cost_vs_none"`
	Recall     Interval `json:"evidence_recall"`
}

// GroupRow is one strategy's figures over a group of sessions.
type GroupRow struct {
	Name       string  `json:"name"`
	CostVsNone float64 `json:"cost_vs_none"`
	Recall     float64 `json:"evidence_recall"`
	CI95       CI95    `json:"ci95"`
}

// Group is the strategies' figures over the sessions of one agent family
// or one length class.
type Group struct {
	Kind     string     `json:"kind"` // "family" or "length"
	Name     string     `json:"name"`
	Sessions int        `json:"sessions"`
	Rows     []GroupRow `json:"strategies"`
	// Flips names the pairs of strategies, adjacent in cost, whose order
	// changes in more than 5% of the bootstrap resamples.
	Flips []string `json:"ranking_flips,omitempty"`
}

// bootstrapResamples is how many resamples the intervals use; the seed is
// fixed so a report is reproducible.
const bootstrapResamples = 1000

// sessionFig is one strategy on one session, as the bootstrap needs it.
type sessionFig struct {
	cost, none float64
	recall     float64
	turns      int // turns with evidence (the recall weight)
}

// group computes the rows of the strategies over the sessions in idx:
// cost vs none as a ratio of sums, recall weighted by turns with
// evidence, each with a percentile interval from resampling sessions.
func group(kind, name string, names []string, figs map[string][]sessionFig, idx []int) Group {
	g := Group{Kind: kind, Name: name, Sessions: len(idx)}
	rng := rand.New(rand.NewPCG(1, uint64(len(idx))))
	stat := func(s string, sample []int) (cost, recall float64) {
		var c, n, r, w float64
		for _, i := range sample {
			f := figs[s][i]
			c += f.cost
			n += f.none
			r += f.recall * float64(f.turns)
			w += float64(f.turns)
		}
		cost, recall = 0, 1
		if n > 0 {
			cost = c / n
		}
		if w > 0 {
			recall = r / w
		}
		return cost, recall
	}
	costs := make(map[string][]float64)
	recalls := make(map[string][]float64)
	sample := make([]int, len(idx))
	for range bootstrapResamples {
		for i := range sample {
			sample[i] = idx[rng.IntN(len(idx))]
		}
		for _, s := range names {
			c, r := stat(s, sample)
			costs[s] = append(costs[s], c)
			recalls[s] = append(recalls[s], r)
		}
	}
	for _, s := range names {
		c, r := stat(s, idx)
		g.Rows = append(g.Rows, GroupRow{Name: s, CostVsNone: round(c), Recall: round(r),
			CI95: CI95{CostVsNone: percentiles(costs[s]), Recall: percentiles(recalls[s])}})
	}
	// Ranking flips between strategies adjacent in cost.
	order := slices.Clone(g.Rows)
	sort.SliceStable(order, func(i, j int) bool { return order[i].CostVsNone < order[j].CostVsNone })
	for i := 0; i+1 < len(order); i++ {
		a, b := order[i].Name, order[i+1].Name
		flips := 0
		for k := range costs[a] {
			if costs[a][k] > costs[b][k] {
				flips++
			}
		}
		if share := float64(flips) / float64(len(costs[a])); share > 0.05 {
			g.Flips = append(g.Flips, fmt.Sprintf("%s < %s in cost, but not in %.0f%% of resamples", a, b, 100*share))
		}
	}
	return g
}

func percentiles(xs []float64) Interval {
	if len(xs) == 0 {
		return Interval{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	lo := s[int(0.025*float64(len(s)-1))]
	hi := s[int(0.975*float64(len(s)-1)+0.5)]
	return Interval{Low: round(lo), High: round(hi)}
}

// Label is the group's short name: the family, or "short"/"long".
func (g Group) Label() string {
	if g.Kind == "length" {
		if strings.HasPrefix(g.Name, "short") {
			return "short"
		}
		return "long"
	}
	return g.Name
}
