package health

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

var ephemeral = json.RawMessage(`{"type":"ephemeral"}`)

// session builds the requests of a growing conversation: turn n has n
// rounds of user text, a tool call and its result, and anchors at the end
// of the system prompt and at the newest message.
type session struct {
	system []string
	tools  []string
	model  string
	// edit, when set, changes the request of turn n before it is sent.
	edit func(n int, r *llm.Request)
	// wide makes every assistant message carry this many parallel calls.
	wide int
}

func (s session) request(n int) *llm.Request {
	r := &llm.Request{Model: s.model}
	if r.Model == "" {
		r.Model = "claude-sonnet-4-5"
	}
	for _, name := range s.tools {
		r.Tools = append(r.Tools, conv.Tool{Name: name, InputSchema: []byte(`{"type":"object"}`)})
	}
	for _, t := range s.system {
		r.System = append(r.System, conv.NewText(conv.SourceSystem, t))
	}
	r.System[len(r.System)-1].CacheControl = ephemeral
	for i := range n {
		calls := max(s.wide, 1)
		u := conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, fmt.Sprintf("task %d", i))}}
		if i > 0 { // answer the previous round's calls
			prev := r.Messages[len(r.Messages)-1]
			var rs []conv.Block
			for _, b := range prev.Blocks {
				rs = append(rs, conv.NewToolResult(b.ToolUseID, "Bash", "ok", false))
			}
			u.Blocks = append(rs, u.Blocks...)
		}
		a := conv.Message{Role: conv.RoleAssistant}
		for k := range calls {
			a.Blocks = append(a.Blocks, conv.NewToolUse(fmt.Sprintf("t%d_%d", i, k), "Bash", []byte(`{"command":"ls"}`)))
		}
		r.Messages = append(r.Messages, u, a)
	}
	var rs []conv.Block
	for _, b := range r.Messages[len(r.Messages)-1].Blocks {
		rs = append(rs, conv.NewToolResult(b.ToolUseID, "Bash", "ok", false))
	}
	r.Messages = append(r.Messages, conv.Message{Role: conv.RoleUser, Blocks: rs})
	last := &r.Messages[len(r.Messages)-1]
	last.Blocks[len(last.Blocks)-1].CacheControl = ephemeral
	if s.edit != nil {
		s.edit(n, r)
	}
	return r
}

// step is one observed turn.
type step struct {
	usage     llm.Usage
	gap       time.Duration // since the previous turn
	compacted bool          // a compaction before this turn
}

var (
	write = llm.Usage{Input: 50, Output: 100, CacheWrite: 5000}
	read  = llm.Usage{Input: 50, Output: 100, CacheWrite: 300, CacheRead: 5000}
	none  = llm.Usage{Input: 5000, Output: 100}
)

func steps(us ...llm.Usage) []step {
	var out []step
	for _, u := range us {
		out = append(out, step{usage: u, gap: time.Minute})
	}
	return out
}

func TestThrash(t *testing.T) {
	base := session{system: []string{"You are a coding agent."}, tools: []string{"Read", "Bash"}}
	withEdit := func(f func(n int, r *llm.Request)) session { s := base; s.edit = f; return s }
	tests := []struct {
		name    string
		cfg     Config
		s       session
		steps   []step
		misses  []int // turns that are misses
		thrash  []int // turns that warn
		layer   Layer
		index   int
		block   int
		message string
	}{
		{name: "healthy", s: base, steps: steps(write, read, read, read, read)},
		{name: "timestamp in the system prompt",
			s: withEdit(func(n int, r *llm.Request) {
				r.System = append([]conv.Block{conv.NewText(conv.SourceSystem, fmt.Sprintf("Time: 12:%02d", n))}, r.System...)
			}),
			steps:  steps(write, write, write, write),
			misses: []int{2, 3, 4}, thrash: []int{4}, layer: LayerSystem, index: 0,
			message: "the system prompt changed at block 0, before the previous request's last cache anchor"},
		{name: "tool set changing",
			s: withEdit(func(n int, r *llm.Request) {
				r.Tools[1].Description = fmt.Sprintf("v%d", n)
			}),
			steps:  steps(write, write, write, write, read),
			misses: []int{2, 3, 4}, thrash: []int{4}, layer: LayerTools, index: 1,
			message: "tool 1 (Bash) changed"},
		{name: "a message rewritten every turn",
			s: withEdit(func(n int, r *llm.Request) {
				r.Messages[2].Blocks[0].Text = fmt.Sprintf("[cleared %d]", n)
			}),
			steps:  steps(write, write, write, write),
			misses: []int{2, 3, 4}, thrash: []int{4}, layer: LayerMessages, index: 2, block: 0,
			message: "the request first differs at message 2, block 0"},
		{name: "nothing changed: evicted",
			s:      base,
			steps:  steps(write, write, write, write),
			misses: []int{2, 3, 4}, thrash: []int{4},
			message: "nothing before the previous request's last cache anchor changed: the cache may have expired"},
		{name: "the new anchor is beyond the lookback",
			s:      func() session { s := base; s.wide = 12; return s }(),
			steps:  steps(write, write, write, write),
			misses: []int{2, 3, 4}, thrash: []int{4},
			message: "nearest anchor is 25 blocks after it, beyond the 20-block lookback"},
		{name: "warns again after three more",
			s: withEdit(func(n int, r *llm.Request) {
				r.System[0].Text = fmt.Sprintf("v%d", n)
			}),
			steps:  steps(write, write, write, write, write, write, write),
			misses: []int{2, 3, 4, 5, 6, 7}, thrash: []int{4, 7}, layer: LayerSystem,
			message: "the system prompt changed"},
		{name: "a hit breaks the streak",
			s:      base,
			steps:  steps(write, write, write, read, write, write),
			misses: []int{2, 3, 5, 6}},
		{name: "cache expired between turns: no read expected",
			s: base,
			steps: []step{{usage: write}, {usage: write, gap: 6 * time.Minute}, {usage: write, gap: 10 * time.Minute},
				{usage: write, gap: time.Hour}},
		},
		{name: "a longer TTL",
			cfg:    Config{TTL: time.Hour},
			s:      base,
			steps:  []step{{usage: write}, {usage: write, gap: 30 * time.Minute}, {usage: write, gap: 30 * time.Minute}, {usage: write, gap: 30 * time.Minute}},
			misses: []int{2, 3, 4}, thrash: []int{4}},
		{name: "after a compaction no read is expected",
			s:      base,
			steps:  []step{{usage: write}, {usage: write}, {usage: write}, {usage: write, compacted: true}, {usage: write}},
			misses: []int{2, 3, 5}},
		{name: "nothing was cached: no read expected",
			s:     base,
			steps: steps(none, none, none, none)},
		{name: "automatic caching expects a read once the prompt is long enough and the provider has read",
			cfg:    Config{Automatic: true},
			s:      base,
			steps:  steps(llm.Usage{Input: 500}, llm.Usage{Input: 2000}, llm.Usage{Input: 100, CacheRead: 2000}, llm.Usage{Input: 2200}, llm.Usage{Input: 2300}, llm.Usage{Input: 2400}),
			misses: []int{4, 5, 6}, thrash: []int{6}},
		// Issue 26 row 5: Ollama and other OpenAI-compatible servers
		// report cached_tokens 0, or nothing: they have no cache to thrash.
		{name: "an automatic cache that never reads is no cache",
			cfg:   Config{Automatic: true},
			s:     base,
			steps: steps(llm.Usage{Input: 2000}, llm.Usage{Input: 2100}, llm.Usage{Input: 2200}, llm.Usage{Input: 2300}, llm.Usage{Input: 2400})},
		{name: "a recap after the last anchor costs nothing",
			s: withEdit(func(n int, r *llm.Request) {
				last := &r.Messages[len(r.Messages)-1]
				last.Blocks = append(last.Blocks, conv.NewText(conv.SourceReminder, fmt.Sprintf("todo v%d", n)))
			}),
			steps: steps(write, read, read, read)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			tt.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			m := New(tt.cfg)
			at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			var misses, thrash []int
			var last *Thrash
			for i, st := range tt.steps {
				if st.compacted {
					m.Compacted()
				}
				at = at.Add(st.gap)
				rep := m.Observe(context.Background(), tt.s.request(i+1), st.usage, at)
				if rep.Turn.N != i+1 {
					t.Fatalf("turn %d numbered %d", i+1, rep.Turn.N)
				}
				if rep.Turn.Miss {
					misses = append(misses, rep.Turn.N)
				}
				if rep.Thrash != nil {
					thrash = append(thrash, rep.Turn.N)
					last = rep.Thrash
				}
			}
			if fmt.Sprint(misses) != fmt.Sprint(tt.misses) || fmt.Sprint(thrash) != fmt.Sprint(tt.thrash) {
				t.Fatalf("misses %v thrash %v, want %v and %v", misses, thrash, tt.misses, tt.thrash)
			}
			if got := strings.Count(logs.String(), "level=WARN"); got != len(tt.thrash) {
				t.Errorf("%d warnings logged, want %d:\n%s", got, len(tt.thrash), logs.String())
			}
			if last == nil {
				return
			}
			if len(last.Turns) != 3 && len(last.Turns) != 6 {
				t.Errorf("thrash turns %v", last.Turns)
			}
			if !strings.Contains(last.Message, tt.message) {
				t.Errorf("message %q lacks %q", last.Message, tt.message)
			}
			if tt.layer != "" {
				c := last.Change
				if c == nil || c.Layer != tt.layer || c.Index != tt.index || c.Block != tt.block || !c.Cached {
					t.Errorf("change %+v, want %s %d.%d", c, tt.layer, tt.index, tt.block)
				}
				if !strings.Contains(logs.String(), "layer="+string(tt.layer)) {
					t.Errorf("log lacks the layer:\n%s", logs.String())
				}
			} else if last.Change != nil && last.Change.Cached {
				t.Errorf("change %+v, want none", last.Change)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	s := session{system: []string{"sys"}, tools: []string{"Read"}}
	base := func() *llm.Request { return s.request(2) }
	tests := []struct {
		name   string
		edit   func(r *llm.Request)
		layer  Layer
		index  int
		block  int
		cached bool
	}{
		{"same", func(*llm.Request) {}, "", 0, 0, false},
		{"only anchors and ids moved", func(r *llm.Request) {
			r.System[0].CacheControl = nil
			r.Messages[1].Blocks[0].CacheControl = ephemeral
			r.Messages[1].Blocks[0].ID = "b77"
			r.Messages[1].Blocks[0].Meta.Tokens = 99
		}, "", 0, 0, false},
		{"model", func(r *llm.Request) { r.Model = "claude-opus-4-5" }, LayerModel, 0, 0, true},
		{"tool added", func(r *llm.Request) {
			r.Tools = append(r.Tools, conv.Tool{Name: "Grep", InputSchema: []byte(`{}`)})
		}, LayerTools, 1, 0, true},
		{"tool schema", func(r *llm.Request) { r.Tools[0].InputSchema = []byte(`{"type":"object","x":1}`) }, LayerTools, 0, 0, true},
		{"system block added", func(r *llm.Request) {
			r.System = append(r.System, conv.NewText(conv.SourceSystem, "more"))
		}, LayerSystem, 1, 0, true},
		{"message block", func(r *llm.Request) { r.Messages[2].Blocks[1].Text = "changed" }, LayerMessages, 2, 1, true},
		{"message role", func(r *llm.Request) { r.Messages[1].Role = conv.RoleUser }, LayerMessages, 1, 0, true},
		{"messages cut", func(r *llm.Request) { r.Messages = r.Messages[:2] }, LayerMessages, 2, 0, true},
		{"block appended after the anchor", func(r *llm.Request) {
			last := &r.Messages[4]
			last.Blocks = append(last.Blocks, conv.NewText(conv.SourceReminder, "x"))
		}, "", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev, cur := base(), base()
			if tt.name == "block appended after the anchor" {
				tt.edit(prev) // the previous request had it, this one does not
			} else {
				tt.edit(cur)
			}
			c := diff(fingerprint(prev), fingerprint(cur))
			if tt.layer == "" {
				if c != nil && c.Cached {
					t.Fatalf("change %+v", c)
				}
				return
			}
			if c == nil || c.Layer != tt.layer || c.Index != tt.index || c.Block != tt.block || c.Cached != tt.cached || c.Detail == "" {
				t.Fatalf("change %+v, want %s %d.%d cached=%v", c, tt.layer, tt.index, tt.block, tt.cached)
			}
		})
	}
	// growing by a round is no change
	if c := diff(fingerprint(s.request(2)), fingerprint(s.request(3))); c != nil {
		t.Errorf("a grown conversation reported %+v", c)
	}
}

func TestStats(t *testing.T) {
	m := New(Config{Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
	s := session{system: []string{"sys"}}
	if st := m.Stats(); st.Turns != 0 || st.Last != nil || st.HitRate != 0 {
		t.Fatalf("empty stats %+v", st)
	}
	r1 := m.Observe(context.Background(), s.request(1), write, time.Time{})
	m.Compacted()
	r2 := m.Observe(context.Background(), s.request(2), read, time.Time{})
	if r1.Turn.HitRatio != 0 || r2.Turn.HitRatio != 5000.0/5350 {
		t.Errorf("hit ratios %v %v", r1.Turn.HitRatio, r2.Turn.HitRatio)
	}
	st := m.Stats()
	want := llm.Usage{Input: 100, Output: 200, CacheWrite: 5300, CacheRead: 5000}
	if st.Turns != 2 || st.Usage != want || st.Compactions != 1 || st.HitRate != 5000.0/10400 || st.Last == nil || st.Last.N != 2 {
		t.Errorf("stats %+v", st)
	}
	st.Last.N = 99
	if m.Stats().Last.N != 2 {
		t.Error("Stats shares its Last with the Monitor")
	}
	if _, err := json.Marshal(st); err != nil {
		t.Error(err)
	}
}

// TestConcurrent: the agent observes while the CLI reads (run with -race).
func TestConcurrent(t *testing.T) {
	m := New(Config{Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
	s := session{system: []string{"sys"}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 50 {
			m.Observe(context.Background(), s.request(i%5+1), read, time.Time{})
			if i%10 == 0 {
				m.Compacted()
			}
		}
	})
	wg.Go(func() {
		for range 50 {
			_ = m.Stats()
		}
	})
	wg.Wait()
	if st := m.Stats(); st.Turns != 50 || st.Compactions != 5 {
		t.Errorf("stats %+v", st)
	}
}
