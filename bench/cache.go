package bench

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// lookback is how many block positions the Anthropic API walks back from a
// breakpoint looking for an earlier cache entry (the breakpoint counts).
const lookback = 20

// Segment is one cacheable unit of a request in prompt order (tools, then
// system blocks, then message blocks): its token count and the hash of the
// whole prefix up to and including it.
type Segment struct {
	Tokens int
	Prefix uint64
	Anchor bool // a cache_control breakpoint sits on this segment
}

// Segments lays a request out in prompt order. A segment's prefix hash
// covers the bytes of everything before it, so two requests share a cache
// entry exactly when their prefixes are byte-identical.
func Segments(req *llm.Request, counter conv.Counter) []Segment {
	segs := make([]Segment, 0, 64)
	h := fnv.New64a()
	var buf [8]byte
	add := func(tokens int, anchor bool, parts ...string) {
		for _, p := range parts {
			binary.LittleEndian.PutUint64(buf[:], uint64(len(p)))
			h.Write(buf[:])
			h.Write([]byte(p))
		}
		segs = append(segs, Segment{Tokens: tokens, Prefix: h.Sum64(), Anchor: anchor})
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		add(conv.ToolTokens(t, counter), t.CacheControl != nil, "tool", t.Name, t.Description, string(t.InputSchema))
	}
	for i := range req.System {
		b := &req.System[i]
		add(conv.BlockTokens(b, counter), b.CacheControl != nil, "system", b.PlainText())
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			role := string(m.Role)
			if j > 0 {
				role = ""
			}
			errFlag := ""
			if b.IsError {
				errFlag = "error"
			}
			n := conv.BlockTokens(b, counter)
			if j == 0 {
				// The message's own framing, as conv.MessageTokens counts
				// it: the bill and the engine's count of a request agree.
				n += conv.MessageOverhead
			}
			add(n, b.CacheControl != nil, role, string(b.Type), b.ToolUseID, errFlag, b.PlainText())
		}
	}
	return segs
}

// Bill is what one request cost.
type Bill struct {
	Input      int     `json:"input_tokens"`
	CacheWrite int     `json:"cache_write_tokens"`
	CacheRead  int     `json:"cache_read_tokens"`
	Output     int     `json:"output_tokens"`
	USD        float64 `json:"cost_usd"`
}

// Prompt is the request's whole prompt size.
func (b Bill) Prompt() int { return b.Input + b.CacheWrite + b.CacheRead }

// Usage is what the provider reports for the request b bills, when its
// answer was output tokens long: the report an engine observes.
func (b Bill) Usage(output int) llm.Usage {
	return llm.Usage{Input: b.Input, CacheWrite: b.CacheWrite, CacheRead: b.CacheRead, Output: output}
}

// Add sums two bills.
func (b Bill) Add(o Bill) Bill {
	return Bill{b.Input + o.Input, b.CacheWrite + o.CacheWrite, b.CacheRead + o.CacheRead, b.Output + o.Output, b.USD + o.USD}
}

// Cache simulates a provider's prompt cache over one session's requests, as
// the provider bills it. An entry lives for the table's TTL after it was
// last written or read (BillAt); requests without a time (a recording
// without timestamps) never expire anything.
type Cache struct {
	table pricing.Table
	// minTokens is the shortest prefix the provider caches.
	minTokens int
	entries   map[uint64]time.Time // prefix → last written or read
	// Expiries counts the requests that found an entry they would have
	// read gone because its TTL had passed.
	Expiries int
}

// NewCache returns an empty cache billing with table. Prefixes shorter than
// minTokens are never cached (the API silently skips them).
func NewCache(table pricing.Table, minTokens int) *Cache {
	return &Cache{table: table, minTokens: minTokens, entries: make(map[uint64]time.Time)}
}

// clone returns a copy whose billing does not touch c's entries, to price
// a request that may not be sent.
func (c *Cache) clone() *Cache {
	return &Cache{table: c.table, minTokens: c.minTokens, entries: maps.Clone(c.entries), Expiries: c.Expiries}
}

// live reports whether the entry for prefix is there at time at, noting
// an expired one.
func (c *Cache) live(prefix uint64, at time.Time, expired *bool) bool {
	t, ok := c.entries[prefix]
	if !ok {
		return false
	}
	if c.table.TTL > 0 && !at.IsZero() && !t.IsZero() && at.Sub(t) > time.Duration(c.table.TTL)*time.Second {
		*expired = true
		return false
	}
	return true
}

// Bill prices one request laid out as segs producing output tokens, and
// records what it wrote to the cache.
//
// Explicit caching (Anthropic): for each breakpoint the provider looks back
// up to 20 positions for a prefix an earlier request wrote; the longest hit
// is read, everything from there to the last breakpoint is written, and the
// rest is plain input. Automatic caching (OpenAI): the longest prefix any
// earlier request shared is read, and every prefix is remembered at no
// surcharge.
func (c *Cache) Bill(segs []Segment, output int) Bill {
	return c.BillAt(segs, output, time.Time{})
}

// BillAt is Bill for a request sent at time at: entries not written or
// read within the table's TTL before at are gone, and must be written
// again. A zero at expires nothing.
func (c *Cache) BillAt(segs []Segment, output int, at time.Time) Bill {
	var b Bill
	expired := false
	defer func() {
		if expired {
			c.Expiries++
		}
	}()
	b.Output = output
	if !c.table.Caches() {
		for _, s := range segs {
			b.Input += s.Tokens
		}
		b.USD = c.table.Cost(b.Input, 0, 0, output)
		return b
	}
	cum := make([]int, len(segs)+1)
	for i, s := range segs {
		cum[i+1] = cum[i] + s.Tokens
	}
	read, last := 0, 0 // segment counts: prefix read, prefix up to the last breakpoint
	if c.table.Automatic {
		for i := len(segs) - 1; i >= 0; i-- {
			if c.live(segs[i].Prefix, at, &expired) {
				read = i + 1
				break
			}
		}
		if cum[read] < c.minTokens {
			read = 0
		}
		last = read
		for i := range segs {
			if cum[i+1] >= c.minTokens {
				c.entries[segs[i].Prefix] = at
			}
		}
		if c.table.WritePremium() && cum[len(segs)] >= c.minTokens {
			last = len(segs) // what is not read is written, at the premium
		}
	} else {
		for i, s := range segs {
			if !s.Anchor {
				continue
			}
			last = i + 1
			for p := i; p >= 0 && p > i-lookback; p-- {
				if c.live(segs[p].Prefix, at, &expired) {
					read = max(read, p+1)
					c.entries[segs[p].Prefix] = at // a read refreshes the entry
					break
				}
			}
		}
		if cum[last] < c.minTokens {
			last = 0 // nothing cacheable: no write either
		}
		for i, s := range segs {
			if s.Anchor && cum[i+1] >= c.minTokens {
				c.entries[s.Prefix] = at
			}
		}
	}
	b.CacheRead = cum[read]
	if last > read {
		b.CacheWrite = cum[last] - cum[read]
	}
	b.Input = cum[len(segs)] - b.CacheRead - b.CacheWrite
	if c.table.Automatic && !c.table.WritePremium() {
		// Automatic caching without a write premium: what is not read is input.
		b.Input += b.CacheWrite
		b.CacheWrite = 0
	}
	b.USD = c.table.Cost(b.Input, b.CacheWrite, b.CacheRead, output)
	return b
}
