package assemble

import (
	"cmp"
	"slices"

	"github.com/ctxkit/ctxkit/conv"
)

// Kind names why an anchor is where it is.
type Kind string

const (
	// KindSystem ends the tools + system + project rules prefix (L1, L2).
	KindSystem Kind = "system"
	// KindSummary ends at the newest summary block: stable until the next
	// compaction.
	KindSummary Kind = "summary"
	// KindRound ends the history before the current round (L3): the
	// scratchpad after it changes, the history does not.
	KindRound Kind = "round"
	// KindPrevious ends the message before the newest user message.
	KindPrevious Kind = "previous"
	// KindNewest ends the newest user message's stored blocks.
	KindNewest Kind = "newest"
	// KindLookback is placed within the provider's lookback of the last
	// anchor the previous request wrote, when this turn added more blocks
	// than the lookback reaches.
	KindLookback Kind = "lookback"
	// KindHeld is held where the caller asked (Builder.BuildHeld): a
	// prefix the provider still holds before a changed block, or the
	// frontier the next change will start after.
	KindHeld Kind = "held"
)

// hit is each kind's chance that the next request repeats the prefix up to
// it: the later in the prompt, the likelier something before it changes
// (results compressed when the round ends, blocks cleared, compaction).
func hit(k Kind) float64 {
	switch k {
	case KindSystem:
		return 0.99
	case KindHeld:
		return 0.97
	case KindSummary:
		return 0.95
	case KindRound:
		return 0.9
	case KindPrevious, KindLookback:
		return 0.85
	default: // KindNewest
		return 0.8
	}
}

// readHit is the chance a read of the previous request's last write
// succeeds when an anchor lies within the lookback after it.
const readHit = 0.9

// Anchor is one cache breakpoint of a request.
type Anchor struct {
	Kind Kind `json:"kind"`
	// Msg is the message index; -1 for the tools/system prefix, where Tool
	// says whether Block indexes Request.Tools or Request.System.
	Msg   int  `json:"msg"`
	Block int  `json:"block"`
	Tool  bool `json:"tool,omitempty"`
	// Tokens is the size of the prefix the anchor caches.
	Tokens int `json:"tokens"`
	// Hit is the estimated chance that the next request repeats it.
	Hit float64 `json:"hit"`
}

// slot is one position of the prompt in the provider's cache order (tools,
// system, message blocks) with the prefix size through it.
type slot struct {
	msg, blk int
	tool     bool
	tokens   int  // cumulative
	ok       bool // may carry cache_control
}

// anchorable reports whether b may carry cache_control: thinking blocks
// cannot, an empty text block cannot be cached, and an opaque block or a
// server tool call goes out as its recorded bytes, which the anchor would
// change.
func anchorable(b *conv.Block) bool {
	switch b.Type {
	case conv.TypeThinking, conv.TypeRedactedThinking, conv.TypeOpaque, conv.TypeServerToolUse:
		return false
	}
	return !b.Empty()
}

// layout is the prompt as slots, with the indexes anchors care about.
type layout struct {
	slots    []slot
	prefix   int   // slots in the tools/system prefix
	msgStart []int // first slot of each message
}

func (l *layout) lastOK(from, to int) int {
	for i := to - 1; i >= from; i-- {
		if l.slots[i].ok {
			return i
		}
	}
	return -1
}

// lastInMsg is the last slot of message m that may carry an anchor, or -1.
func (l *layout) lastInMsg(m int) int {
	if m < 0 || m >= len(l.msgStart) {
		return -1
	}
	end := len(l.slots)
	if m+1 < len(l.msgStart) {
		end = l.msgStart[m+1]
	}
	return l.lastOK(l.msgStart[m], end)
}

// candidate is an anchor position with its kind.
type candidate struct {
	slot   int
	kind   Kind
	forced bool // held, or the newest beside held ones: in every set
}

// placeAnchors chooses at most max anchors (seed 001 §4): it lists the
// candidate positions, drops those below the minimum cacheable prefix,
// and keeps the set with the highest expected number of cached tokens.
//
// The expected value of a set, anchors sorted by position, is
// Σ tokens_i × (hit_i − hit_{i+1}): the next request reads the longest
// anchored prefix it repeats, so an anchor is worth its size times the
// chance that it is the deepest one to hit. A set with an anchor within
// the lookback after the previous request's last write (lw) also gets
// tokens(lw) × readHit: without such an anchor this request reads nothing
// of the conversation from the cache. The held slots (BuildHeld) and the
// newest message's are in every set.
func placeAnchors(l *layout, q int, newest int, minTokens, max, lookback int, summary int, held []int) []Anchor {
	if max <= 0 || len(l.slots) == 0 {
		return nil
	}
	var cands []candidate
	add := func(s int, k Kind) {
		if s < 0 || l.slots[s].tokens < minTokens {
			return
		}
		for i := range cands {
			if cands[i].slot == s { // same place: the more stable reason stands
				return
			}
		}
		cands = append(cands, candidate{slot: s, kind: k})
	}
	// Held anchors, then the newest message's, are in every set tried
	// (with room kept for the newest): the layer that holds anchors counts
	// on every request having written its end.
	for _, s := range held {
		if len(cands) < max-1 {
			add(s, KindHeld)
		}
	}
	add(l.lastInMsg(newest), KindNewest)
	forced := len(cands)
	add(l.lastOK(0, l.prefix), KindSystem)
	add(summary, KindSummary)
	if q >= 1 {
		add(l.lastInMsg(q-1), KindRound)
	}
	add(l.lastInMsg(newest-1), KindPrevious)
	add(l.lastInMsg(newest), KindNewest)

	// The previous request wrote last at the end of the user message
	// before the newest one (its own newest anchor), if that was long
	// enough to cache; otherwise at the end of the system prefix.
	lw := l.lastInMsg(newest - 2)
	if lw >= 0 && l.slots[lw].tokens < minTokens {
		lw = -1
	}
	if lw < 0 {
		lw = l.lastOK(0, l.prefix)
	}
	inReach := func(s int) bool { return lw >= 0 && s >= lw && s < lw+lookback }
	if lw >= l.prefix && !slices.ContainsFunc(cands, func(c candidate) bool { return inReach(c.slot) }) {
		add(l.lastOK(lw, min(lw+lookback, len(l.slots))), KindLookback)
	}
	for i := range forced {
		cands[i].forced = true
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.slot, b.slot) })

	value := func(set []candidate) float64 {
		v, h := 0.0, 1.0
		reads := false
		effective := make([]float64, len(set))
		for i, c := range set {
			h = min(h, hit(c.kind))
			effective[i] = h
			reads = reads || inReach(c.slot)
		}
		for i, c := range set {
			next := 0.0
			if i+1 < len(set) {
				next = effective[i+1]
			}
			v += float64(l.slots[c.slot].tokens) * (effective[i] - next)
		}
		if reads {
			v += float64(l.slots[lw].tokens) * readHit
		}
		return v
	}
	// At most 8 candidates: trying every subset of up to 4 is cheap and
	// exact. Ties keep the smaller set, then the earlier one tried.
	var best []candidate
	bestV := -1.0
	for mask := 1; mask < 1<<len(cands); mask++ {
		var set []candidate
		missing := false
		for i := range cands {
			if mask&(1<<i) != 0 {
				set = append(set, cands[i])
			} else if cands[i].forced {
				missing = true
			}
		}
		if len(set) > max || missing {
			continue
		}
		if v := value(set); v > bestV || v == bestV && len(set) < len(best) {
			best, bestV = set, v
		}
	}
	out := make([]Anchor, len(best))
	for i, c := range best {
		s := l.slots[c.slot]
		out[i] = Anchor{Kind: c.kind, Msg: s.msg, Block: s.blk, Tool: s.tool, Tokens: s.tokens, Hit: hit(c.kind)}
	}
	return out
}
