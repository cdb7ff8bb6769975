package llmtest

import (
	"crypto/sha256"
	"time"
)

// A position is one cacheable unit of a prompt, in prompt order: a tool
// definition, a system block, a message block (Anthropic) or a message
// (OpenAI).
type position struct {
	key        []byte // canonical bytes, with the section and message boundary
	tokens     int
	breakpoint bool          // carries cache_control
	ttl        time.Duration // the breakpoint's lifetime
}

type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
}

// prefixCache holds the prefixes the service has cached, by the hash of
// everything up to and including a position.
type prefixCache struct {
	entries map[[32]byte]cacheEntry
}

func newPrefixCache() *prefixCache { return &prefixCache{entries: make(map[[32]byte]cacheEntry)} }

// chain returns the prefix hash and the cumulative token count at every
// position. The model is part of the key: caches are per model.
func chain(model string, ps []position) (hs [][32]byte, cum []int) {
	h := sha256.Sum256([]byte("model\x00" + model))
	hs = make([][32]byte, len(ps))
	cum = make([]int, len(ps))
	total := 0
	for i, p := range ps {
		d := sha256.New()
		d.Write(h[:])
		d.Write(p.key)
		copy(h[:], d.Sum(nil))
		hs[i] = h
		total += p.tokens
		cum[i] = total
	}
	return hs, cum
}

func (c *prefixCache) live(h [32]byte, now time.Time) bool {
	e, ok := c.entries[h]
	return ok && now.Before(e.expires)
}

// lookback is how many positions a breakpoint's read looks at, itself
// included (Anthropic's documented 20-block lookback).
const lookback = 20

// explicitUsage is Anthropic's caching: entries are written only at
// breakpoints whose prefix reaches min tokens; a breakpoint reads the
// nearest entry at most 20 positions back; the longest hit is read, the
// rest up to the last breakpoint written, the remainder is plain input.
func (c *prefixCache) explicitUsage(now time.Time, model string, ps []position, min int) (read, write5m, write1h, input int) {
	if len(ps) == 0 {
		return 0, 0, 0, 0
	}
	hs, cum := chain(model, ps)
	total := cum[len(ps)-1]
	var bps []int
	for i, p := range ps {
		if p.breakpoint && cum[i] >= min {
			bps = append(bps, i)
		}
	}
	if len(bps) == 0 {
		return 0, 0, 0, total
	}
	hit := -1
	for _, bp := range bps {
		for j := bp; j >= 0 && j > bp-lookback; j-- {
			if c.live(hs[j], now) {
				hit = max(hit, j)
				break
			}
		}
	}
	at := func(i int) int {
		if i < 0 {
			return 0
		}
		return cum[i]
	}
	if hit >= 0 {
		e := c.entries[hs[hit]]
		e.expires = now.Add(e.ttl) // a hit refreshes the entry for free
		c.entries[hs[hit]] = e
		read = cum[hit]
	}
	prev := hit
	for _, bp := range bps {
		if bp <= hit {
			continue
		}
		seg := cum[bp] - at(prev)
		if ps[bp].ttl >= time.Hour {
			write1h += seg
		} else {
			write5m += seg
		}
		c.entries[hs[bp]] = cacheEntry{expires: now.Add(ps[bp].ttl), ttl: ps[bp].ttl}
		prev = bp
	}
	last := bps[len(bps)-1]
	return read, write5m, write1h, total - cum[max(last, hit)]
}

// automaticUsage is OpenAI's caching: every prefix of at least min tokens
// is cached by itself; a request reads the longest cached prefix, counted
// in steps of step tokens.
func (c *prefixCache) automaticUsage(now time.Time, model string, ps []position, min, step int) (cached int) {
	hs, cum := chain(model, ps)
	for i := len(ps) - 1; i >= 0; i-- {
		if c.live(hs[i], now) {
			if cum[i] >= min {
				cached = cum[i] / step * step
			}
			break
		}
	}
	const ttl = 10 * time.Minute
	for i := range ps {
		if cum[i] >= min {
			c.entries[hs[i]] = cacheEntry{expires: now.Add(ttl), ttl: ttl}
		}
	}
	return cached
}
