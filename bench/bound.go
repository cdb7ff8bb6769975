package bench

import (
	"context"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Bound is the future-knowing lower bound, the strategy "bound". Each tool
// result stays whole for the turn after it arrives; from a batch on, it is
// reduced to exactly the evidence terms later turns use (as whole tokens,
// one per line), so its evidence recall is 1 by construction. Everything
// else (user and assistant messages, tool calls) is sent as recorded, with
// the common anchors.
//
// When to reduce is found by search: a schedule is the set of turns at
// which every result that has had its turn is reduced (a batch rewrites
// the cache from the first newly reduced result on, so fewer, larger
// batches trade rewrites against the tokens they free). The search bills
// each candidate schedule exactly as the replay does — never, every turn,
// every k turns for k in 2…32, and whenever the reducible tokens reach a
// threshold from 500 to 64,000 — and keeps the cheapest, which is then
// improved by dropping single batch points while that pays. It is a
// bounded search, not an exhaustive one: the optimum over all 2^turns
// schedules may be lower. BoundFloor says by how much at most: it prices
// every turn as if all of the reduced prompt were read from the cache and
// only what arrived since the last turn were written, which no schedule
// can beat; the gap between the two is reported.
//
// "never" is a candidate and sends exactly what none sends, so bound is
// never more expensive than none; it reduces only tool results, so a
// strategy that drops assistant or user messages is outside what it
// bounds.
type bound struct {
	base
	reduced map[string]string // tool result id → its reduced text
	step    int               // index of the next assistant turn
	batches map[int]bool      // turns (assistant step indexes) with a batch
	arrived map[string]int    // tool result id → step it arrived before
}

func newBound(e Env) Strategy {
	b := boundFor(e, nil)
	b.batches = b.search()
	return b
}

// boundFor returns a bound stepper following schedule batches.
func boundFor(e Env, batches map[int]bool) *bound {
	b := &bound{base: newBase(e), batches: batches, reduced: make(map[string]string), arrived: make(map[string]int)}
	rec, ev := e.Recording, e.Evidence
	step := 0
	for _, m := range rec.Messages {
		if m.Role == conv.RoleAssistant {
			step++
			continue
		}
		for _, bl := range m.Blocks {
			if bl.Type == conv.TypeToolResult {
				b.arrived[bl.ID] = step
			}
		}
	}
	if ev == nil {
		return b
	}
	// A term a turn uses is kept in every result that held it and
	// arrived before that turn.
	keep := make(map[string][]string)
	step = 0
	for k, m := range rec.Messages {
		if m.Role != conv.RoleAssistant {
			continue
		}
		for _, t := range ev.Terms[k] {
			for _, id := range ev.where[t] {
				if s, ok := b.arrived[id]; ok && s <= step {
					keep[id] = append(keep[id], t)
				}
			}
		}
		step++
	}
	for id := range b.arrived {
		ts := keep[id]
		slices.Sort(ts)
		ts = slices.Compact(ts)
		text := strings.Join(ts, "\n")
		if text == "" {
			text = "-"
		}
		b.reduced[id] = text
	}
	return b
}

func (b *bound) Step(_ context.Context, arrived []conv.Message) (*llm.Request, StepInfo, error) {
	b.append(arrived)
	var info StepInfo
	if b.batches[b.step] {
		for i := range b.c.Messages {
			for j := range b.c.Messages[i].Blocks {
				bl := &b.c.Messages[i].Blocks[j]
				if s, ok := b.arrived[bl.ID]; ok && s < b.step && bl.Meta.Rung < conv.RungPlaceholder {
					placeholder(bl, b.reduced[bl.ID])
					info.Edits++
				}
			}
		}
	}
	b.step++
	return b.request(), info, nil
}

// gain is the tokens reducing result id frees.
func (b *bound) gain(id string) int {
	i, j := b.env.Recording.Find(id)
	if i < 0 {
		return 0
	}
	bl := &b.env.Recording.Messages[i].Blocks[j]
	return conv.BlockTokens(bl, b.env.Counter) - b.env.Counter.Count(b.reduced[id])
}

// search returns the cheapest schedule among the candidates.
func (b *bound) search() map[int]bool {
	steps := 0
	for _, m := range b.env.Recording.Messages {
		if m.Role == conv.RoleAssistant {
			steps++
		}
	}
	var cands []map[int]bool
	periodic := func(k int) map[int]bool {
		s := make(map[int]bool)
		for i := 1; i < steps; i += k {
			s[i] = true
		}
		return s
	}
	cands = append(cands, map[int]bool{})
	for _, k := range []int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32} {
		if k < steps {
			cands = append(cands, periodic(k))
		}
	}
	// Threshold schedules: batch once the results waiting would free at
	// least x tokens.
	byStep := make([]int, steps+1)
	for id, s := range b.arrived {
		if s < steps {
			byStep[s] += b.gain(id)
		}
	}
	for _, x := range []int{500, 1000, 2000, 4000, 8000, 16000, 32000, 64000} {
		s := make(map[int]bool)
		waiting := 0
		for i := 1; i < steps; i++ {
			waiting += byStep[i-1]
			if waiting >= x {
				s[i] = true
				waiting = 0
			}
		}
		cands = append(cands, s)
	}
	best, bestCost := cands[0], b.cost(cands[0])
	for _, c := range cands[1:] {
		if cost := b.cost(c); cost < bestCost {
			best, bestCost = c, cost
		}
	}
	// Drop single batch points while that pays (bounded: one pass).
	if len(best) <= 48 {
		for _, p := range sortedKeys(best) {
			trial := make(map[int]bool, len(best))
			for q := range best {
				if q != p {
					trial[q] = true
				}
			}
			if cost := b.cost(trial); cost < bestCost {
				best, bestCost = trial, cost
			}
		}
	}
	return best
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// cost is the replay's bill of the schedule, computed as the replay
// computes it.
func (b *bound) cost(schedule map[int]bool) float64 {
	st := boundFor(b.env, schedule)
	st.reduced = b.reduced
	total, _ := costOf(b.env, st)
	return total.USD
}

// costOf replays st over env's recording with the replay's billing (the
// common anchors, the simulated cache) and returns the total bill.
func costOf(e Env, st Strategy) (Bill, error) {
	r := newReplayer(e.opts, e.Evidence, e)
	rec := e.Recording
	var total Bill
	prev := 0
	for k := range rec.Messages {
		if rec.Messages[k].Role != conv.RoleAssistant {
			continue
		}
		req, _, err := st.Step(context.Background(), rec.Messages[prev:k])
		if err != nil {
			return total, err
		}
		prev = k
		req = r.anch.place(req)
		total = total.Add(r.bill(req, k))
		r.sent(req)
	}
	return total, nil
}

// BoundFloor is a cost no strategy that keeps user and assistant messages
// and shows every evidence term can go below under the cache model: every
// turn's prompt at its smallest (every result that has had its turn
// reduced), all of it read from the cache at the read price except what
// arrived since the previous turn, which is paid at the cheaper of the
// write and input prices, plus the recorded output.
func BoundFloor(e Env) float64 {
	b := boundFor(e, nil)
	p := e.Pricing
	read, fresh := p.CacheRead, min(p.Input, p.CacheWrite)
	if !p.Caches() {
		read, fresh = p.Input, p.Input
	}
	rec := e.Recording
	total, prevTokens := 0.0, 0
	step, prev := 0, 0
	for k := range rec.Messages {
		if rec.Messages[k].Role != conv.RoleAssistant {
			continue
		}
		b.append(rec.Messages[prev:k])
		prev = k
		for i := range b.c.Messages {
			for j := range b.c.Messages[i].Blocks {
				bl := &b.c.Messages[i].Blocks[j]
				if s, ok := b.arrived[bl.ID]; ok && s < step && bl.Meta.Rung < conv.RungPlaceholder {
					placeholder(bl, b.reduced[bl.ID])
				}
			}
		}
		step++
		prompt := 0
		for _, s := range Segments(b.request(), e.Counter) {
			prompt += s.Tokens
		}
		newTokens := max(prompt-prevTokens, 0)
		prevTokens = prompt
		total += (float64(prompt-newTokens)*read + float64(newTokens)*fresh + float64(conv.MessageTokens(&rec.Messages[k], e.Counter))*p.Output) / 1e6
	}
	return total
}
