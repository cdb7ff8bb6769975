package toolresult

import (
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

func TestTouches(t *testing.T) {
	read := func(id, path string) conv.Block {
		return conv.NewToolUse(id, "Read", []byte(fmt.Sprintf(`{"file_path":%q}`, path)))
	}
	result := func(id, text string, isErr bool, rung conv.Rung) conv.Block {
		b := conv.NewToolResult(id, "Read", text, isErr)
		b.ID, b.Meta.Rung = "r"+id, rung
		return b
	}
	edit := func(id, path string) conv.Block {
		return conv.NewToolUse(id, "Edit", []byte(fmt.Sprintf(`{"file_path":%q,"old_string":"a","new_string":"b"}`, path)))
	}
	write := func(id, path, content string) conv.Block {
		return conv.NewToolUse(id, "Write", []byte(fmt.Sprintf(`{"file_path":%q,"content":%q}`, path, content)))
	}
	tests := []struct {
		name   string
		blocks []conv.Block
		want   string // the newest first: path content read msg current
	}{
		{"a read", []conv.Block{read("1", "a.go"), result("1", "A", false, conv.RungFull)},
			"[a.go A r1 1 true]"},
		{"an edit makes the read not current", []conv.Block{read("1", "a.go"), result("1", "A", false, conv.RungFull), edit("2", "a.go")},
			"[a.go A r1 1 false]"},
		{"a write brings its content", []conv.Block{write("1", "n.go", "package n")},
			"[n.go package n  -1 false]"},
		{"a failed read keeps the earlier one", []conv.Block{read("1", "a.go"), result("1", "A", false, conv.RungFull), read("2", "a.go"), result("2", "gone", true, conv.RungFull)},
			"[a.go A r1 1 true]"},
		{"a cleared read holds nothing", []conv.Block{read("1", "a.go"), result("1", "[cleared]", false, conv.RungPlaceholder)},
			"[a.go   -1 false]"},
		{"newest first", []conv.Block{read("1", "a.go"), read("2", "b.go"), result("1", "A", false, conv.RungFull), result("2", "B", false, conv.RungFull), edit("3", "a.go")},
			"[a.go A r1 2 false] [b.go B r2 3 true]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr Touches
			for i := range tt.blocks {
				tr.Observe(i, &tt.blocks[i])
			}
			got := ""
			for _, f := range tr.Newest() {
				if got != "" {
					got += " "
				}
				got += fmt.Sprintf("[%s %s %s %d %v]", f.Path, f.Content, f.Read, f.Msg, f.Current)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
