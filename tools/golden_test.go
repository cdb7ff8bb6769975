package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/ctxkit/ctxkit/internal/golden"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGolden compares the rendered text (what the model reads) and the
// structured JSON (without timings) of a few results with the files in
// testdata/golden; run with -update to rewrite them.
func TestGolden(t *testing.T) {
	src := "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n// Sub subtracts.\nfunc Sub(a, b int) int {\n\treturn a - b\n}\n"
	var many strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&many, "entry %02d\n", i)
	}
	files := map[string]string{
		"calc/calc.go":      src,
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
		"notes/list.txt":    many.String(),
		"README.md":         "# calc\n",
		".gitignore":        "bin/\n",
		"bin/calc":          "binary",
	}
	s, dir := newSetOpts(t, files, Options{ReadMaxLines: 30, GrepMaxMatches: 4, DiffLines: 12})
	mtime := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for name := range files {
		touch(t, filepath.Join(dir, name), mtime)
	}
	steps := []struct {
		name, tool string
		input      any
		before     func()
	}{
		{"read", NameRead, map[string]any{"file_path": "calc/calc.go"}, nil},
		{"read_range", NameRead, map[string]any{"file_path": "notes/list.txt", "offset": 5, "limit": 3}, nil},
		{"read_capped", NameRead, map[string]any{"file_path": "notes/list.txt"}, nil},
		{"read_modified", NameRead, map[string]any{"file_path": "calc/calc.go"}, func() {
			writeFile(t, filepath.Join(dir, "calc/calc.go"), strings.Replace(src, "a + b", "b + a", 1))
			touch(t, filepath.Join(dir, "calc/calc.go"), mtime.Add(time.Hour))
		}},
		{"edit", NameEdit, map[string]any{"file_path": "calc/calc.go", "old_string": "return a - b", "new_string": "return a - b // checked"}, nil},
		{"edit_not_unique", NameEdit, map[string]any{"file_path": "calc/calc.go", "old_string": "int {", "new_string": "int64 {"}, nil},
		{"multiedit_failed", NameMultiEdit, map[string]any{"file_path": "calc/calc.go", "edits": []map[string]any{
			{"old_string": "// Add adds.", "new_string": "// Add returns a+b."},
			{"old_string": "// Mul multiplies.", "new_string": "x"},
		}}, nil},
		{"write_create", NameWrite, map[string]any{"file_path": "calc/mul.go", "content": "package calc\n\nfunc Mul(a, b int) int { return a * b }\n"}, nil},
		{"write_update", NameWrite, map[string]any{"file_path": "notes/list.txt", "content": strings.Replace(many.String(), "entry 03\n", "entry three\n", 1)}, func() {
			run(t, s, NameRead, map[string]any{"file_path": "notes/list.txt", "limit": 1})
		}},
		{"ls", NameLS, map[string]any{"depth": 2}, nil},
		{"grep", NameGrep, map[string]any{"pattern": `\b[ab]\b`}, nil},
		{"grep_none", NameGrep, map[string]any{"pattern": "Div", "glob": "*.go"}, nil},
		{"bash_fail", NameBash, map[string]any{"command": "echo checking; echo 'FAIL: calc' >&2; exit 1"}, nil},
		{"todo", NameTodoWrite, map[string]any{"todos": []Todo{{Content: "Add Mul", Status: TodoCompleted}, {Content: "Test Mul", Status: TodoInProgress}}}, nil},
		{"unknown_tool", "Delete", `{"file_path":"x"}`, nil},
		{"escape", NameRead, map[string]any{"file_path": "../etc/passwd"}, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			r := run(t, s, st.tool, st.input)
			// Timings and the mtimes the agent's own writes get vary.
			r.Stats.DurationMS = 0
			if d, ok := r.Data.(*BashData); ok {
				d.DurationMS = 0
			}
			if d, ok := r.Data.(*ReadData); ok && !d.ModifiedExternally && d.Mtime != mtime {
				d.Mtime = time.Time{}
			}
			var js bytes.Buffer
			if err := json.Indent(&js, r.JSON(), "", "  "); err != nil {
				t.Fatal(err)
			}
			got := "-- render --\n" + r.Render() + "\n-- json --\n" + js.String() + "\n"
			got = strings.ReplaceAll(got, dir, "$WORKSPACE")
			golden.Check(t, filepath.Join("testdata", "golden", st.name+".txt"), got)
		})
	}
}
