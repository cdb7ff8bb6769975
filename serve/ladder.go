package serve

import (
	"bytes"
	"context"
	"path"
	"sort"
	"strings"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Ladder is the proxy's Decider: the fidelity ladder the engine package
// runs for ctxkit's own agent, with micro's and compact's rules, defaults
// and arithmetic, applied to a request the proxy sees whole. It keeps no
// state: what the cache-aware rule needs from earlier requests (how many
// there were, how long each clearable result has been sent) is read off
// the client's history in the View, so a restarted proxy or a second
// replica decides alike. The rules, in order (serve's package doc has
// them in words):
//
//   - Rung 2, micro's: consumed tool results but the Keep newest, larger
//     than SkipChars and not a fresh read on the Preserve list, are
//     clearable; they are cleared as one batch when micro.CacheAware (on
//     the provider's prices, the horizon capped at the requests left
//     before the soft threshold) says the rent paid for sending them
//     covers the cache rewrite, or at once above micro's high-water mark.
//   - Rung 3, compact's: everything after the first user message up to
//     the pinned tail (KeepRecentTurns, KeepRecentTokens, at most half the
//     target) becomes one summary — at the soft threshold (compact.Budget)
//     when that makes the room a compaction is for (soft − target), at
//     the hard threshold whenever it makes any, and earlier where
//     compact.Plan says one is due and pays back. A compaction request rewrites
//     the prompt anyway, so every clearable result goes with it.
//   - The window is a hard limit: over Budget.Limit, everything clearable
//     goes, then everything before the pinned tail is summarized; if the
//     summary would not fit, the oldest whole steps (the last always
//     stays) are dropped behind a truncation marker instead; if the rest
//     is still over, the largest blocks left — tool results, text, tool
//     call inputs; never thinking — are cut to head and tail at compact's
//     water level.
type Ladder struct {
	micro      micro.Config
	compact    compact.Config
	keepTokens int          // compact.Config.KeepRecentTokens as given (0: 2% of the request's window)
	userBudget int          // compact.Config.UserBudget as given (0: compact's default for the request's budget)
	policy     micro.Policy // micro.Config.Policy as given (nil: cache-aware on the provider's prices)
}

// NewLadder returns the Ladder with micro's and compact's settings (zero
// fields take those packages' defaults). The window and output limit come
// with each request (View.Budget), not from mc or cc.
func NewLadder(mc micro.Config, cc compact.Config) *Ladder {
	l := &Ladder{policy: mc.Policy, keepTokens: cc.KeepRecentTokens, userBudget: cc.UserBudget}
	l.micro = mc.Defaults()
	l.compact = cc.Defaults()
	return l
}

// placeholderTokens is what a placeholder costs, generously.
const placeholderTokens = 40

// summaryOverhead is the wrapping of a summary in the head message.
const summaryOverhead = 30

// Decide implements Decider.
func (l *Ladder) Decide(_ context.Context, v *View) (Plan, error) {
	var p Plan
	n := len(v.Messages)
	if n == 0 || v.Budget.Limit <= 0 {
		return p, nil
	}
	b := v.Budget
	tok := make([]int, n) // message tokens as the plan leaves them
	msgTotal := 0
	lastAsst := -1
	for i, m := range v.Messages {
		tok[i] = m.Tokens
		msgTotal += m.Tokens
		if m.Role == "assistant" {
			lastAsst = i
		}
	}
	fixed := v.Tokens - msgTotal
	total := func() int {
		t := fixed
		for _, x := range tok {
			t += x
		}
		return t
	}

	// Rung 2.
	cl := l.clearable(v, lastAsst)
	inPlan := make([]bool, len(cl))
	clearFrom := func(j int, skip func(msg int) bool) {
		for k := j; k < len(cl); k++ {
			if inPlan[k] || skip != nil && skip(cl[k].msg) {
				continue
			}
			inPlan[k] = true
			p.Clear = append(p.Clear, cl[k].hash)
			tok[cl[k].msg] -= cl[k].freed
		}
	}
	if j, ok := l.batch(v, cl, lastAsst, msgTotal); ok {
		clearFrom(j, nil)
	}

	// Rung 3.
	ends := l.runEnds(v, lastAsst)
	pin := l.pinned(v, tok, lastAsst)
	run := func(k int) int {
		t := 0
		for i := v.Head + 1; i <= k; i++ {
			t += tok[i]
		}
		return t
	}
	est := func(runTok int) int {
		return min(max(runTok/5, l.compact.SummaryMin), l.compact.SummaryMax) + summaryOverhead
	}
	// pick returns the earliest run end before message before whose run,
	// replaced by what cost(end) says replaces it, brings the request to
	// goal; else the latest.
	pick := func(before int, goal int, cost func(int) int) int {
		k := -1
		for _, e := range ends {
			if e >= before {
				break
			}
			k = e
			if total()-run(e)+cost(e) <= goal {
				return e
			}
		}
		return k
	}
	sumCost := func(k int) int { return est(run(k)) }
	inRun := func(msg int) bool { return p.To > 0 && msg >= p.From && msg <= p.To }
	summarize := func(k int, drop bool) {
		p.From, p.To, p.Drop = v.Head+1, k, drop
		// Clearing inside the run is moot; outside it, the compaction
		// request rewrites the prompt anyway (micro: Compacted).
		keep := p.Clear[:0]
		for j := range cl {
			if inPlan[j] && inRun(cl[j].msg) {
				inPlan[j] = false
				tok[cl[j].msg] += cl[j].freed
				continue
			}
			if inPlan[j] {
				keep = append(keep, cl[j].hash)
			}
		}
		p.Clear = keep
		clearFrom(0, inRun)
	}
	// A drop marker carries the newest of the user's own words in the
	// run, up to compact's UserBudget.
	userWords := b.UserWords(l.userBudget)
	dropCost := func(k int) int {
		words := 0
		for i := v.Head + 1; i <= k; i++ {
			if m := v.Messages[i]; m.Role == "user" && len(m.Results) == 0 {
				words += tok[i]
			}
		}
		return compact.MarkerTokens + min(words, userWords)
	}
	runCost := func(k int) int {
		if p.Drop {
			return dropCost(k)
		}
		return est(run(k))
	}
	// Compact's policy: a compaction keeps as little as the pinned tail
	// allows (everything before it in one summary), at the soft threshold,
	// or earlier where the cost model says it is due and pays back
	// (compact.Plan). The proxy keeps no counters: the growth is what the
	// messages after the head added per request since the last summary.
	if n >= l.compact.MinMessages {
		lvl := b.Level(total())
		if k := pick(pin, 0, sumCost); k > v.Head {
			gain := run(k) - est(run(k))
			due := false
			if lvl == compact.LevelNone {
				after, turns := 0, 0
				for i := v.Head + 1; i < n; i++ {
					after += tok[i]
					if v.Messages[i].Role == "assistant" {
						turns++
					}
				}
				if turns > 0 {
					kept := total() - gain
					s := compact.Plan(prices(v), b.Soft, kept, v.Requests, float64(after)/float64(turns), est(run(k)))
					due = s.Early(b.Soft, total())
				}
			}
			// At the soft threshold a compaction must make the room one
			// is for (soft − target), or it would come again next turn.
			if due || lvl == compact.LevelSoft && gain >= b.Soft-b.Target || lvl == compact.LevelHard && gain > 0 {
				summarize(k, false)
			}
		}
	}

	// The hard limit.
	if over := func() bool { return total()-p.runSaving(run, runCost) > b.Limit }; over() {
		clearFrom(0, inRun)
		if over() {
			if k := pick(pin, b.Limit, sumCost); k > v.Head && k >= p.To {
				summarize(k, false)
			}
		}
		if over() {
			k := pick(lastAsst, b.Target, dropCost)
			if k > v.Head && total()-run(k)+dropCost(k) > b.Target {
				k = pick(lastAsst, b.Limit, dropCost)
			}
			if k > v.Head && k >= p.To {
				summarize(k, true)
				p.Words = userWords
			}
		}
		if excess := total() - p.runSaving(run, runCost) - b.Limit; excess > 0 {
			// Aim a little under the limit: a cut block is not decided
			// again, and its note and the estimate have a size.
			p.Cut = l.cuts(v, p, inRun, excess+max(b.Limit/50, compact.ShrinkNote))
		}
	}
	return p, nil
}

// runSaving is what the plan's run saves: its tokens less what replaces
// them.
func (p Plan) runSaving(run, cost func(int) int) int {
	if p.To == 0 {
		return 0
	}
	return run(p.To) - cost(p.To)
}

// clearItem is one clearable result.
type clearItem struct {
	msg    int
	hash   string
	freed  int
	waited int // rent paid: freed tokens × earlier requests it was clearable in
}

// clearable lists the results micro's rules allow to clear now, in
// order, each with the rent it has paid: how many earlier requests of
// the client's history sent it while it was already clearable.
func (l *Ladder) clearable(v *View, lastAsst int) []clearItem {
	if lastAsst < 0 {
		return nil
	}
	n := len(v.Messages)
	var asst []int // message index of each assistant message
	for i, m := range v.Messages {
		if m.Role == "assistant" {
			asst = append(asst, i)
		}
	}
	// nextAsst[i]: the first assistant message after message i, as an
	// index into asst. Request q's input is the messages before asst[q]
	// (q = len(asst) is this request), so a result in message i is
	// consumed from request nextAsst[i]+1 on.
	nextAsst := make([]int, n+1)
	nextAsst[n] = len(asst)
	for i, j := n-1, len(asst); i >= 0; i-- {
		nextAsst[i] = j
		if v.Messages[i].Role == "assistant" {
			j--
		}
	}
	// Every result in order.
	type pos struct{ msg, k int }
	var all []pos
	for i, m := range v.Messages {
		for k := range m.Results {
			all = append(all, pos{i, k})
		}
	}
	// staleAt is the message of the first call after msg that makes
	// read stale, -1 when none does. Only calls whose input names the
	// file are classified (classifying parses shell commands).
	classified := make([][]*toolresult.Call, n) // each call classified at most once
	staleAt := func(msg int, read toolresult.Call) int {
		name := []byte(path.Base(strings.ReplaceAll(read.Path, `\`, "/")))
		for i := msg + 1; i < n; i++ {
			for k, c := range v.Messages[i].Calls {
				if !bytes.Contains(c.Input, name) {
					continue
				}
				if classified[i] == nil {
					classified[i] = make([]*toolresult.Call, len(v.Messages[i].Calls))
				}
				if classified[i][k] == nil {
					x := c.Classify()
					classified[i][k] = &x
				}
				if micro.Stales(*classified[i][k], read) {
					return i
				}
			}
		}
		return -1
	}
	keep := l.micro.Keep
	var out []clearItem
	for o, at := range all {
		r := v.Messages[at.msg].Results[at.k]
		if r.Cleared || !r.Consumed || r.Bytes <= l.micro.SkipChars {
			continue
		}
		// The Keep newest consumed results stay whole.
		if o+keep >= len(all) || all[o+keep].msg >= lastAsst {
			continue
		}
		freed := r.Tokens - placeholderTokens
		if freed <= 0 {
			continue
		}
		from := nextAsst[at.msg] + 1                            // consumed
		from = max(from, nextAsst[all[o+keep].msg]+1)           // past Keep
		if call := r.Call.Classify(); l.micro.Preserves(call) { // kept until stale
			stale := -1
			if call.Path != "" {
				stale = staleAt(at.msg, call)
			}
			if stale < 0 {
				continue
			}
			from = max(from, nextAsst[stale]) // the stale-making call is in asst[nextAsst[stale]-1]
		}
		out = append(out, clearItem{msg: at.msg, hash: r.Hash, freed: freed, waited: freed * max(len(asst)-from, 0)})
	}
	return out
}

// batch offers micro's policy each batch of cl from some position on
// whose rewrite starts elsewhere, largest first, as micro.Clearer does,
// and reports the first it accepts.
func (l *Ladder) batch(v *View, cl []clearItem, lastAsst, msgTotal int) (int, bool) {
	if len(cl) == 0 {
		return 0, false
	}
	pol := l.policy
	automatic := prices(v).Automatic
	if pol == nil {
		pol = micro.CacheAware{Pricing: prices(v)}
	}
	pre := make([]int, len(v.Messages)+1)
	for i, m := range v.Messages {
		pre[i+1] = pre[i] + m.Tokens
	}
	prevEnd := pre[lastAsst] // the previous request ended before the newest assistant message
	freed := make([]int, len(cl)+1)
	rent := make([]int, len(cl)+1)
	for j := len(cl) - 1; j >= 0; j-- {
		freed[j] = freed[j+1] + cl[j].freed
		rent[j] = rent[j+1] + cl[j].waited
	}
	b := v.Budget
	near := float64(v.Tokens) >= l.micro.HighWater*float64(b.Window)
	grown, growN := msgTotal-v.Messages[max(v.Head, 0)].Tokens, v.Requests-1
	prevRead := -1
	for j := range cl {
		// With explicit anchors the client's request reads back only to
		// its system prompt once a message changes; with automatic
		// caching, up to the first changed block.
		read := 0
		if automatic {
			read = pre[cl[j].msg]
		}
		if j > 0 && read == prevRead {
			continue // the same rewrite for less
		}
		prevRead = read
		bt := micro.Batch{Freed: freed[j], Suffix: max(prevEnd-read, 0), Waited: rent[j], Requests: v.Requests,
			Total: v.Tokens, Window: b.Window, Near: near}
		if growN > 0 && grown > 0 {
			bt.Compaction = 1 + max(0, (b.Soft-v.Tokens+bt.Freed)*growN/grown)
		}
		if pol.Clear(bt) {
			return j, true
		}
	}
	return 0, false
}

// runEnds are the messages a summarized run may end at, in order: after
// the head, each followed by an assistant message and not one itself, so
// every tool call keeps its result and roles alternate.
func (l *Ladder) runEnds(v *View, lastAsst int) []int {
	var ends []int
	if v.Head < 0 {
		return nil // nothing to carry a summary
	}
	for k := v.Head + 1; k < lastAsst; k++ {
		if v.Messages[k].Role != "assistant" && v.Messages[k+1].Role == "assistant" {
			ends = append(ends, k)
		}
	}
	return ends
}

// pinned is where the pinned tail starts (compact's rule): the last step
// always, then whole steps back to KeepRecentTurns assistant turns and
// KeepRecentTokens tokens, never more than half the target.
func (l *Ladder) pinned(v *View, tok []int, lastAsst int) int {
	if lastAsst < 0 {
		return len(v.Messages)
	}
	keepTok := l.keepTokens
	if keepTok == 0 {
		keepTok = v.Budget.Window / 50
	}
	capTok := v.Budget.Target / 2
	tail := 0
	for i := len(v.Messages) - 1; i > lastAsst; i-- {
		tail += tok[i]
	}
	pin, turns := lastAsst, 0
	for i := lastAsst; i > v.Head; i-- {
		tail += tok[i]
		if v.Messages[i].Role != "assistant" {
			continue
		}
		if i != lastAsst && tail > capTok {
			break
		}
		pin = i
		turns++
		if turns >= l.compact.KeepRecentTurns && tail >= keepTok {
			break
		}
	}
	return pin
}

// cuts is the shrink rung: the largest blocks outside the run, cut to
// compact's water level so the request sheds excess tokens.
func (l *Ladder) cuts(v *View, p Plan, inRun func(int) bool, excess int) []Cut {
	clearing := map[string]bool{}
	for _, h := range p.Clear {
		clearing[h] = true
	}
	var cands []Cut
	for i, m := range v.Messages {
		if inRun(i) {
			continue
		}
		for _, r := range m.Results {
			if !r.Cleared && !clearing[r.Hash] && r.Tokens > compact.ShrinkFloor {
				cands = append(cands, Cut{Hash: r.Hash, Tokens: r.Tokens})
			}
		}
		for _, c := range m.Cuts {
			if c.Tokens > compact.ShrinkFloor {
				cands = append(cands, Cut{Hash: c.Hash, Tokens: c.Tokens})
			}
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].Tokens > cands[b].Tokens })
	sizes := make([]int, len(cands))
	for i, c := range cands {
		sizes[i] = c.Tokens
	}
	level := compact.ShrinkLevel(sizes, excess)
	var out []Cut
	for _, c := range cands {
		if c.Tokens <= level {
			break
		}
		out = append(out, Cut{Hash: c.Hash, Tokens: level})
	}
	return out
}

// prices are the provider's: Anthropic's, or OpenAI's or Gemini's
// automatic (implicit) caching.
func prices(v *View) pricing.Table {
	switch v.Provider {
	case providerOpenAI:
		return pricing.OpenAI()
	case providerGemini:
		return pricing.Gemini()
	}
	return pricing.Anthropic()
}
