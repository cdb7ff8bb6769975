package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// TestGeminiMasksToolOutputs: Gemini CLI's masking keeps the newest 50,000
// tokens of tool output whole and, once the older ones come to 30,000,
// replaces each by a preview and a file the bench counts as a recall id.
func TestGeminiMasksToolOutputs(t *testing.T) {
	// exchange is a call and its result of about n tokens (words{}).
	exchange := func(i, n int) []conv.Message {
		id := fmt.Sprintf("t%d", i)
		res := conv.NewToolResult(id, "Read", strings.Repeat("abcd", n), false)
		res.ID = fmt.Sprintf("r%d", i)
		return []conv.Message{
			{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse(id, "Read", []byte(`{"file_path":"a.go"}`))}},
			{Role: conv.RoleUser, Blocks: []conv.Block{res}},
		}
	}
	tests := []struct {
		name   string
		sizes  []int // results, oldest first; the last is the request's own
		masked []string
	}{
		{"under the protection", []int{20_000, 20_000, 20_000}, nil},
		{"too little to prune", []int{20_000, 20_000, 20_000, 20_000}, nil},
		{"prunable enough", []int{20_000, 20_000, 20_000, 20_000, 20_000}, []string{"r0", "r1"}},
		{"the request's own results never", []int{40_000, 100_000}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conv.Conversation{}
			for i, n := range tt.sizes {
				c.Messages = append(c.Messages, exchange(i, n)...)
			}
			var m masker
			m.mask(c, words{}, 1)
			var got []string
			for i := range c.Messages {
				for _, b := range c.Messages[i].Blocks {
					if b.Type == conv.TypeToolResult && b.Meta.Rung != conv.RungFull {
						got = append(got, b.ID)
						if !strings.Contains(b.Text, maskedDir+"read_"+b.ID+".txt") {
							t.Errorf("%s: no file named in %.80q", b.ID, b.Text)
						}
						if m.ids["read_"+b.ID] != b.ID {
							t.Errorf("%s: recall id maps to %q", b.ID, m.ids["read_"+b.ID])
						}
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.masked) {
				t.Errorf("masked %v, want %v", got, tt.masked)
			}
		})
	}
}

func TestMaskedPathIsARecallRef(t *testing.T) {
	m := recallRef.FindAllStringSubmatch("[tool output masked; preview:]\nx\n[whole output: tool-outputs/read_m3b1.txt]", -1)
	if len(m) != 1 || m[0][1]+m[0][2] != "read_m3b1" {
		t.Fatalf("matches %q", m)
	}
}

// TestCodexTruncatesOutputs: Codex CLI's history holds a tool output cut
// to 12,000 tokens, its beginning and end; shorter ones whole.
func TestCodexTruncatesOutputs(t *testing.T) {
	tests := []struct {
		name   string
		tokens int
		cut    bool
	}{
		{"short", 100, false},
		{"at the policy", codexOutputTokens - 1, false},
		{"long", 3 * codexOutputTokens, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "HEAD" + strings.Repeat("abcd", tt.tokens-3) + "TAIL"
			s := &codex{base: newBase(Env{Window: 1_000_000, Counter: words{}})}
			arrived := []conv.Message{
				{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("t1", "shell", []byte(`{"command":"cat big"}`))}},
				{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("t1", "shell", text, false)}},
			}
			req, _, err := s.Step(context.Background(), arrived)
			if err != nil {
				t.Fatal(err)
			}
			b := req.Messages[1].Blocks[0]
			got := b.ResultText()
			if cut := b.Meta.Rung == conv.RungCompressed; cut != tt.cut {
				t.Fatalf("cut = %v, want %v", cut, tt.cut)
			}
			if !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") {
				t.Errorf("beginning or end lost")
			}
			if n := (words{}).Count(got); tt.cut && n > codexOutputTokens+20 {
				t.Errorf("%d tokens after the cut", n)
			}
		})
	}
}
