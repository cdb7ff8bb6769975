package health

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Defaults for the zero fields of Config.
const (
	DefaultThreshold      = 3
	DefaultTTL            = 5 * time.Minute
	DefaultMinCacheTokens = 1024
	DefaultLookback       = 20
)

// Config says what the Monitor expects of the provider's cache.
type Config struct {
	// Threshold is how many misses in a row make a warning.
	Threshold int
	// TTL is the cache's time to live: a turn sent later than this after
	// the previous one expects no read.
	TTL time.Duration
	// Automatic is true for a provider that caches prefixes by itself
	// (OpenAI): a read is expected without anchors, once the prompt
	// reaches MinCacheTokens and the provider has reported a read at
	// least once (a server with no cache never does).
	Automatic      bool
	MinCacheTokens int
	// Lookback is how many blocks the provider walks back from an anchor.
	Lookback int
	Logger   *slog.Logger
}

// Layer names the part of a request where it first differs from the
// previous one.
type Layer string

const (
	LayerModel    Layer = "model"
	LayerTools    Layer = "tools"
	LayerSystem   Layer = "system"
	LayerMessages Layer = "messages"
)

// Change is where a request first differs from the previous one.
type Change struct {
	Layer Layer `json:"layer"`
	// Index is the tool, system block or message index; Block the block
	// index within the message (messages only).
	Index int `json:"index"`
	Block int `json:"block"`
	// Cached says the change lies before the previous request's last
	// anchor, so it invalidated what that request cached.
	Cached bool   `json:"cached"`
	Detail string `json:"detail"`
}

// Turn is one request's figures.
type Turn struct {
	N     int       `json:"n"`
	Usage llm.Usage `json:"usage"`
	// HitRatio is the share of the prompt read from the cache.
	HitRatio float64 `json:"hit_ratio"`
	// Expected says a cache read was expected; Miss that none came.
	Expected bool `json:"expected"`
	Miss     bool `json:"miss"`
	// Change is where this request first differs from the previous one;
	// nil when it only extends it.
	Change *Change `json:"change,omitempty"`
}

// Thrash is the warning for Threshold misses in a row.
type Thrash struct {
	Turns []int `json:"turns"`
	// Change is the latest miss's cause, nil when no prefix changed.
	Change  *Change `json:"change,omitempty"`
	Message string  `json:"message"`
}

// Report is what Observe returns for a turn.
type Report struct {
	Turn   Turn    `json:"turn"`
	Thrash *Thrash `json:"thrash,omitempty"`
}

// Stats are a session's metrics so far.
type Stats struct {
	Turns int       `json:"turns"`
	Usage llm.Usage `json:"usage"`
	// HitRate is the share of all prompt tokens read from the cache.
	HitRate     float64 `json:"hit_rate"`
	Misses      int     `json:"misses"`
	Thrashes    int     `json:"thrashes"`
	Compactions int     `json:"compactions"`
	Last        *Turn   `json:"last,omitempty"`
}

// Monitor follows a session's requests and usage.
type Monitor struct {
	cfg Config

	mu         sync.Mutex
	prev       *print
	prevUsage  llm.Usage
	prevAt     time.Time
	compacted  bool // a compaction happened since the previous request
	streak     []int
	stats      Stats
	lastChange *Change
}

// New returns a Monitor.
func New(cfg Config) *Monitor {
	if cfg.Threshold <= 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MinCacheTokens <= 0 {
		cfg.MinCacheTokens = DefaultMinCacheTokens
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = DefaultLookback
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Monitor{cfg: cfg}
}

// Compacted records a compaction: it is counted, and the next turn expects
// no cache read.
func (m *Monitor) Compacted() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Compactions++
	m.compacted = true
}

// Stats returns the metrics so far.
func (m *Monitor) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	if s.Last != nil {
		last := *s.Last
		s.Last = &last
	}
	return s
}

// Observe records the request sent at time at (zero: no TTL check) and the
// usage the provider reported for it, and returns the turn's figures and,
// when the misses in a row reach the threshold, the thrash warning (also
// logged).
func (m *Monitor) Observe(ctx context.Context, req *llm.Request, u llm.Usage, at time.Time) Report {
	cur := fingerprint(req)
	m.mu.Lock()
	defer m.mu.Unlock()

	t := Turn{N: m.stats.Turns + 1, Usage: u}
	if p := u.Prompt(); p > 0 {
		t.HitRatio = float64(u.CacheRead) / float64(p)
	}
	if m.prev != nil {
		t.Change = diff(m.prev, cur)
		// An automatic cache shows itself only by its reads: until the
		// provider has reported one, it may have no cache at all (an
		// OpenAI-compatible server like Ollama reports cached_tokens 0 or
		// nothing), and no read is expected of it.
		cachedBefore := m.prevUsage.CacheWrite+m.prevUsage.CacheRead > 0 ||
			m.cfg.Automatic && m.stats.Usage.CacheRead > 0 && m.prevUsage.Prompt() >= m.cfg.MinCacheTokens
		fresh := at.IsZero() || m.prevAt.IsZero() || at.Sub(m.prevAt) <= m.cfg.TTL
		t.Expected = cachedBefore && fresh && !m.compacted
		t.Miss = t.Expected && u.CacheRead == 0
	}

	var rep Report
	if t.Miss {
		m.stats.Misses++
		m.streak = append(m.streak, t.N)
		if t.Change != nil && t.Change.Cached {
			m.lastChange = t.Change // the latest change that cost a read
		}
		if len(m.streak)%m.cfg.Threshold == 0 {
			rep.Thrash = m.thrash(m.prev, cur)
			m.stats.Thrashes++
			m.cfg.Logger.WarnContext(ctx, "health: prompt cache thrashing", thrashAttrs(rep.Thrash)...)
		}
	} else {
		m.streak, m.lastChange = nil, nil
	}

	m.stats.Turns++
	m.stats.Usage = m.stats.Usage.Add(u)
	if p := m.stats.Usage.Prompt(); p > 0 {
		m.stats.HitRate = float64(m.stats.Usage.CacheRead) / float64(p)
	}
	last := t
	m.stats.Last = &last
	m.prev, m.prevUsage, m.prevAt, m.compacted = cur, u, at, false
	rep.Turn = t
	return rep
}

// thrash builds the warning for the current streak.
func (m *Monitor) thrash(prev, cur *print) *Thrash {
	th := &Thrash{Turns: append([]int(nil), m.streak...), Change: m.lastChange}
	lead := fmt.Sprintf("prompt cache thrashing: %d turns in a row (%v) read nothing from the cache although a read was expected", len(th.Turns), th.Turns)
	switch c := th.Change; {
	case c != nil && c.Cached:
		th.Message = lead + "; " + c.Detail + ", before the previous request's last cache anchor"
	default:
		th.Message = lead + "; nothing before the previous request's last cache anchor changed"
		if gap, ok := reach(prev, cur); !ok {
			th.Message += ", and this request has no anchor at or after it"
		} else if gap >= m.cfg.Lookback {
			th.Message += fmt.Sprintf(", but this request's nearest anchor is %d blocks after it, beyond the %d-block lookback", gap, m.cfg.Lookback)
		} else {
			th.Message += ": the cache may have expired or been evicted, or the prefix is below the model's minimum cacheable length"
		}
	}
	return th
}

func thrashAttrs(th *Thrash) []any {
	attrs := []any{"turns", th.Turns, "message", th.Message}
	if c := th.Change; c != nil {
		attrs = append(attrs, "layer", string(c.Layer), "index", c.Index, "block", c.Block)
	}
	return attrs
}

// print is what a request looks like to the cache: a hash per tool,
// system block and message block, and where its anchors are.
type print struct {
	model    string
	tools    [][32]byte
	system   [][32]byte
	messages [][][32]byte
	toolName []string
	// anchors are the positions carrying cache_control, in cache order
	// (see pos).
	anchors []pos
}

// pos is a position in cache order: tools, then system, then messages.
type pos struct{ layer, index, block int }

func (p pos) less(q pos) bool {
	if p.layer != q.layer {
		return p.layer < q.layer
	}
	if p.index != q.index {
		return p.index < q.index
	}
	return p.block < q.block
}

const (
	layerTools = iota
	layerSystem
	layerMessages
)

func fingerprint(req *llm.Request) *print {
	p := &print{model: req.Model}
	for i, t := range req.Tools {
		t.CacheControl = nil
		p.tools = append(p.tools, hash(t))
		p.toolName = append(p.toolName, t.Name)
		if req.Tools[i].CacheControl != nil {
			p.anchors = append(p.anchors, pos{layerTools, i, 0})
		}
	}
	for i := range req.System {
		p.system = append(p.system, hash(seen(req.System[i])))
		if req.System[i].CacheControl != nil {
			p.anchors = append(p.anchors, pos{layerSystem, i, 0})
		}
	}
	for i, msg := range req.Messages {
		hs := [][32]byte{hash(string(msg.Role))}
		for j := range msg.Blocks {
			hs = append(hs, hash(seen(msg.Blocks[j])))
			if msg.Blocks[j].CacheControl != nil {
				p.anchors = append(p.anchors, pos{layerMessages, i, j})
			}
		}
		p.messages = append(p.messages, hs)
	}
	return p
}

// seen is the part of a block the provider sees.
func seen(b conv.Block) conv.Block {
	b.ID, b.Meta, b.Structured, b.CacheControl = "", conv.Meta{}, nil, nil
	if b.Content != nil {
		c := make([]conv.Block, len(b.Content))
		for i := range b.Content {
			c[i] = seen(b.Content[i])
		}
		b.Content = c
	}
	return b
}

func hash(v any) [32]byte {
	data, err := json.Marshal(v)
	if err != nil { // a block json cannot encode never reaches a provider either
		data = []byte(fmt.Sprintf("%#v", v))
	}
	return sha256.Sum256(data)
}

// diff returns where cur first differs from prev, nil when cur only
// extends it.
func diff(prev, cur *print) *Change {
	var deepest *pos
	if n := len(prev.anchors); n > 0 {
		deepest = &prev.anchors[n-1]
	}
	cached := func(p pos) bool { return deepest != nil && !deepest.less(p) }
	if prev.model != cur.model {
		return &Change{Layer: LayerModel, Cached: deepest != nil, Detail: fmt.Sprintf("the model changed from %q to %q", prev.model, cur.model)}
	}
	if i, ok := firstDiffExact(prev.tools, cur.tools); ok {
		what := fmt.Sprintf("tool %d was added", i)
		if i < len(prev.tools) {
			what = fmt.Sprintf("tool %d (%s) changed or was removed", i, prev.toolName[i])
		}
		return &Change{Layer: LayerTools, Index: i, Cached: cached(pos{layerTools, i, 0}),
			Detail: "the tool definitions changed: " + what}
	}
	if i, ok := firstDiffExact(prev.system, cur.system); ok {
		return &Change{Layer: LayerSystem, Index: i, Cached: cached(pos{layerSystem, i, 0}),
			Detail: fmt.Sprintf("the system prompt changed at block %d", i)}
	}
	for i := range prev.messages {
		if i >= len(cur.messages) {
			return &Change{Layer: LayerMessages, Index: i, Cached: cached(pos{layerMessages, i, 0}),
				Detail: fmt.Sprintf("the messages were cut back to %d", len(cur.messages))}
		}
		j, ok := firstDiff(prev.messages[i], cur.messages[i])
		if !ok {
			continue
		}
		blk := max(j-1, 0) // entry 0 is the role
		detail := fmt.Sprintf("the request first differs at message %d, block %d", i, blk)
		if j == 0 {
			detail = fmt.Sprintf("the request first differs at message %d (its role)", i)
		}
		// a block appended to the previous request's last message (a
		// recap, say) does not differ from anything it cached
		return &Change{Layer: LayerMessages, Index: i, Block: blk, Cached: cached(pos{layerMessages, i, blk}), Detail: detail}
	}
	return nil
}

// firstDiff returns the first index where a and b differ, and whether
// they differ at all before the end of a; b may extend a.
func firstDiff(a, b [][32]byte) (int, bool) {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i, true
		}
	}
	return 0, false
}

// firstDiffExact is firstDiff for a layer that may not grow: anything
// after it moves when it does.
func firstDiffExact(a, b [][32]byte) (int, bool) {
	if i, ok := firstDiff(a, b); ok {
		return i, true
	}
	if len(b) > len(a) {
		return len(a), true
	}
	return 0, false
}

// reach returns how many message blocks lie from the previous request's
// deepest anchor to this request's nearest anchor at or after it, and
// false when there is none.
func reach(prev, cur *print) (int, bool) {
	if len(prev.anchors) == 0 {
		return 0, false
	}
	d := prev.anchors[len(prev.anchors)-1]
	for _, a := range cur.anchors {
		if a.less(d) {
			continue
		}
		if a.layer != layerMessages || d.layer != layerMessages {
			return 0, true
		}
		n := a.block - d.block
		for i := d.index; i < a.index; i++ {
			n += len(cur.messages[i]) - 1
		}
		return n, true
	}
	return 0, false
}
