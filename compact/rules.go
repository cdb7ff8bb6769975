package compact

// Rung 3's arithmetic as functions, for a caller that decides without a
// Ladder (ctxkit serve) and must decide alike.

// Defaults returns c with every zero field set to its default, as New
// uses it.
func (c Config) Defaults() Config { return c.withDefaults() }

// ShrinkFloor is the least a block cut by the shrink rung keeps, and
// ShrinkNote what the note naming the cut costs, in tokens.
const (
	ShrinkFloor = blockFloor
	ShrinkNote  = noteTokens
)

// ShrinkLevel is the shrink rung's water level: the largest size L (at
// least ShrinkFloor) such that cutting every block larger than L down to
// L, each with a note of ShrinkNote tokens, frees at least excess tokens.
// sizes are the candidate blocks' tokens, largest first. When no level
// frees enough it is ShrinkFloor.
func ShrinkLevel(sizes []int, excess int) int {
	if len(sizes) == 0 {
		return ShrinkFloor
	}
	freed := func(level int) int {
		f := 0
		for _, t := range sizes {
			if t <= level {
				break
			}
			f += t - level - noteTokens
		}
		return f
	}
	lo, hi := blockFloor, max(sizes[0], blockFloor)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if freed(mid) >= excess {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// MarkerTokens bounds the truncation marker that replaces turns dropped
// to fit the window.
const MarkerTokens = markerTokens

// UserWords is Config.UserBudget as New fills it in: configured when
// positive, else min(20,000, Target/4).
func (b Budget) UserWords(configured int) int {
	if configured > 0 {
		return configured
	}
	return min(20_000, b.Target/4)
}
