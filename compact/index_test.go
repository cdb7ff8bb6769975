package compact

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/tokens"
)

// resultIDs returns the ids of c's tool results of at least min bytes, in
// order.
func resultIDs(c *conv.Conversation, min int) []string {
	var ids []string
	for i := range c.Messages {
		for _, b := range c.Messages[i].Blocks {
			if b.Type == conv.TypeToolResult && len(b.ResultText()) >= min {
				ids = append(ids, b.ID)
			}
		}
	}
	return ids
}

func TestSummaryRecallIndex(t *testing.T) {
	tests := []struct {
		name string
		mode Mode
	}{
		{"round", ModeRound},
		{"region", ModeRegion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := session(6, 2, 800)
			withRequest(c, "go on")
			before := c.Clone()
			k := newKeeper()
			k.record(c)
			cfg := testConfig()
			cfg.Mode = tt.mode
			if _, err := New(nil, cfg).Compact(context.Background(), c, k, ""); err != nil {
				t.Fatal(err)
			}
			mustCheck(t, c)
			listed := map[string]bool{}
			for _, s := range summaries(c) {
				for _, e := range parseIndex(s.Text) {
					listed[e.id] = true
				}
				if got := WithoutIndex(s.Text); strings.Contains(got, IndexHeader) {
					t.Errorf("WithoutIndex left the index in")
				}
			}
			gone := 0
			for _, id := range resultIDs(before, indexMinChars) {
				if i, _ := c.Find(id); i >= 0 {
					continue // still in the context
				}
				gone++
				if !listed[id] {
					t.Errorf("result %s left the context without an index line", id)
				}
			}
			if gone == 0 {
				t.Fatal("the compaction took no result out: the test tests nothing")
			}
			long := map[string]bool{}
			for _, id := range resultIDs(before, indexMinChars) {
				long[id] = true
			}
			for _, id := range resultIDs(before, 0) {
				if !long[id] && listed[id] {
					t.Errorf("short result %s got an index line", id)
				}
			}
		})
	}
}

func TestRenderIndex(t *testing.T) {
	counter := tokens.NewEstimator()
	var entries []indexEntry
	for i := 1; i <= 300; i++ {
		entries = append(entries, indexEntry{fmt.Sprintf("b%d", i), fmt.Sprintf(`Bash "go test ./pkg%d" exit 0, 40 lines`, i)})
	}
	tests := []struct {
		name    string
		entries []indexEntry
		budget  int
		first   string // newest listed first
		all     bool
	}{
		{"none", nil, 2000, "", false},
		{"all fit", entries[:5], 2000, "b5", true},
		{"budget keeps the newest", entries, 2000, "b300", false},
		{"no room", entries, 10, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := renderIndex(tt.entries, tt.budget, counter, "")
			if tt.first == "" {
				if text != "" {
					t.Fatalf("want no index, got %q", text)
				}
				return
			}
			if n := counter.Count(text); n > tt.budget {
				t.Errorf("index of %d tokens over its budget %d", n, tt.budget)
			}
			got := parseIndex("summary text\n\n" + text)
			if len(got) == 0 || got[len(got)-1].id != tt.first {
				t.Fatalf("newest entry: got %v", got)
			}
			if tt.all != (len(got) == len(tt.entries)) {
				t.Errorf("listed %d of %d", len(got), len(tt.entries))
			}
			if !tt.all && !strings.Contains(text, "older results are in the session transcript") {
				t.Error("a cut index must say that older results are left out")
			}
			for i := 1; i < len(got); i++ {
				if got[i-1] == got[i] {
					t.Errorf("entry %s listed twice", got[i].id)
				}
			}
		})
	}
}

func TestMergeKeepsRecallIndex(t *testing.T) {
	c := session(2, 1, 100)
	cp := New(nil, testConfig())
	counter := tokens.NewEstimator()
	a := conv.NewSummary("## Task\nport it\n\n"+renderIndex([]indexEntry{{"b1", "Read \"a.go\""}, {"b2", "Bash \"make\" exit 2"}}, 500, counter, ""), conv.Span{First: 1, Last: 2})
	b := conv.NewSummary("## Task\nport it, then test\n\n"+renderIndex([]indexEntry{{"b2", "Bash \"make\" exit 2"}, {"b7", "Grep \"TODO\""}}, 500, counter, ""), conv.Span{First: 3, Last: 4})
	m, _, _ := cp.merge(context.Background(), c, []conv.Block{a, b}, TriggerSoft, "", false)
	var ids []string
	for _, e := range parseIndex(m.Text) {
		ids = append(ids, e.id)
	}
	if got, want := strings.Join(ids, ","), "b1,b2,b7"; got != want {
		t.Errorf("merged index (oldest first) %s, want %s", got, want)
	}
	if strings.Count(m.Text, IndexHeader) != 1 {
		t.Errorf("merged summary has %d indexes:\n%s", strings.Count(m.Text, IndexHeader), m.Text)
	}
}

// TestWrote: what a compaction writes is known by its text alone, as a
// request read back off a wire shows it; other text is not.
func TestWrote(t *testing.T) {
	tests := []struct {
		name, text string
		want       bool
	}{
		{"summary header", summaryHeader(conv.Span{First: 1, Last: 9}, "llm", TriggerSoft, "") + "\n\n## Task\nfix it", true},
		{"summary with an index", "done\n\n" + IndexHeader + "\nrecall b7: Read \"a.go\"", true},
		{"truncation marker", TruncationMarker + "\n\n" + IndexHeader + "\nrecall b7: Bash", true},
		{"carried file", fileText(carriedFile{path: "a b/c.go", id: "b7", content: "package c"}), true},
		{"carried file, quoted path", fileText(carriedFile{path: "a\"b.go", id: "b7", content: "x"}), true},
		{"user words", "please fix the [Summary of turns 1–2] bug", false},
		{"a file header with no id", "[File a.go, as read before the summary — recall ]\nx", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Wrote(tt.text); got != tt.want {
				t.Errorf("Wrote(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}
