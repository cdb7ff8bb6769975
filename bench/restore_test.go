package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// TestClaudeCodeRestoresFiles: after a compaction Claude Code's model
// attaches the newest files its calls touched, at most 5, each at most
// 5,000 tokens (a larger one as its path), 50,000 in all, and forgets the
// rest.
func TestClaudeCodeRestoresFiles(t *testing.T) {
	read := func(id, path, content string) []conv.Message {
		return []conv.Message{
			{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse(id, "Read", []byte(fmt.Sprintf(`{"file_path":%q}`, path)))}},
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, "Read", content, false)}},
		}
	}
	call := func(id, name, input string) []conv.Message {
		return []conv.Message{{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse(id, name, []byte(input))}}}
	}
	big := strings.Repeat("word ", restoreFileTokens) // over 5,000 tokens by words{}
	tests := []struct {
		name  string
		msgs  [][]conv.Message
		want  []string // restored blocks, by their first line's path and whether content came back
		after []string // files still known after the compaction
	}{
		{
			name: "newest five of seven",
			msgs: [][]conv.Message{read("1", "a.go", "A"), read("2", "b.go", "B"), read("3", "c.go", "C"), read("4", "d.go", "D"),
				read("5", "e.go", "E"), read("6", "f.go", "F"), read("7", "g.go", "G")},
			want:  []string{"g.go:G", "f.go:F", "e.go:E", "d.go:D", "c.go:C"},
			after: []string{"c.go", "d.go", "e.go", "f.go", "g.go"},
		},
		{
			name:  "an edit moves a file up, with what was read",
			msgs:  [][]conv.Message{read("1", "a.go", "A"), read("2", "b.go", "B"), call("3", "Edit", `{"file_path":"a.go","old_string":"x","new_string":"y"}`)},
			want:  []string{"a.go:A", "b.go:B"},
			after: []string{"a.go", "b.go"},
		},
		{
			name:  "a write brings its content",
			msgs:  [][]conv.Message{call("1", "Write", `{"file_path":"n.go","content":"package n"}`)},
			want:  []string{"n.go:package n"},
			after: []string{"n.go"},
		},
		{
			name:  "too large: the path only",
			msgs:  [][]conv.Message{read("1", "a.go", "A"), read("2", "big.go", big)},
			want:  []string{"big.go:-", "a.go:A"},
			after: []string{"a.go"},
		},
		{
			name: "a failed read brings nothing",
			msgs: [][]conv.Message{{
				{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("1", "Read", []byte(`{"file_path":"x.go"}`))}},
				{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("1", "Read", "no such file", true)}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r recentFiles
			for _, m := range tt.msgs {
				r.see(m)
			}
			var got []string
			for _, b := range r.restore(words{}) {
				path, rest, _ := strings.Cut(strings.TrimPrefix(b.Text, "["), ",")
				if p, _, ok := strings.Cut(path, " was read"); ok {
					got = append(got, p+":-")
					continue
				}
				_, content, _ := strings.Cut(rest, "\n")
				got = append(got, path+":"+content)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("restored %q, want %q", got, tt.want)
			}
			var after []string
			for _, f := range r.Newest() {
				after = append(after, f.Path)
			}
			slices.Sort(after)
			if fmt.Sprint(after) != fmt.Sprint(tt.after) {
				t.Errorf("known after %q, want %q", after, tt.after)
			}
		})
	}
}
