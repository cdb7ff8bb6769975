package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goSrc = `package main

import "fmt"

func main() {
	fmt.Println("a")
	fmt.Println("a")
	fmt.Println("b")
}
`

func TestEdit(t *testing.T) {
	tests := []struct {
		name    string
		input   map[string]any
		want    string // the file afterwards; "" means unchanged
		errText string
		repl    int
	}{
		{"unique", map[string]any{"old_string": `"b"`, "new_string": `"c"`}, strings.Replace(goSrc, `"b"`, `"c"`, 1), "", 1},
		{"not unique", map[string]any{"old_string": `fmt.Println("a")`, "new_string": `x`}, "", `old_string occurs 2 times (at lines 6, 7); include more surrounding text`, 0},
		{"replace all", map[string]any{"old_string": `"a"`, "new_string": `"z"`, "replace_all": true}, strings.ReplaceAll(goSrc, `"a"`, `"z"`), "", 2},
		{"missing", map[string]any{"old_string": "fmt.Printf", "new_string": "x"}, "", "old_string was not found", 0},
		{"missing, whitespace hint", map[string]any{"old_string": "  fmt.Println(\"b\")\n", "new_string": "x"}, "", "Its first line appears, ignoring surrounding whitespace, at line 8", 0},
		{"same strings", map[string]any{"old_string": "main", "new_string": "main"}, "", "old_string and new_string are the same", 0},
		{"empty old", map[string]any{"old_string": "", "new_string": "x"}, "", "old_string is empty", 0},
		{"delete", map[string]any{"old_string": "\nimport \"fmt\"\n", "new_string": ""}, strings.Replace(goSrc, "\nimport \"fmt\"\n", "", 1), "", 1},
		{"multi-line", map[string]any{"old_string": "func main() {\n\tfmt", "new_string": "func main() {\n\t// hi\n\tfmt"}, strings.Replace(goSrc, "func main() {\n\tfmt", "func main() {\n\t// hi\n\tfmt", 1), "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newSet(t, map[string]string{"main.go": goSrc})
			tt.input["file_path"] = "main.go"
			r := run(t, s, NameEdit, tt.input)
			got := readFile(t, filepath.Join(dir, "main.go"))
			d := r.Data.(*EditData)
			if tt.errText != "" {
				wantError(t, r, tt.errText)
				if !strings.Contains(r.Error, "main.go was not changed") {
					t.Errorf("error %q does not say the file is unchanged", r.Error)
				}
				if got != goSrc || d.Applied || d.FailedEdit != 1 {
					t.Errorf("failed edit changed the file or claims applied: %+v\n%s", d, got)
				}
				return
			}
			wantOK(t, r)
			if got != tt.want {
				t.Errorf("file =\n%s\nwant\n%s", got, tt.want)
			}
			if !d.Applied || d.Replacements != tt.repl || d.Edits != 1 || d.Diff == "" || !strings.HasPrefix(r.Text, "Edited main.go: ") {
				t.Errorf("data %+v text %q", d, r.Text)
			}
			noTempFiles(t, dir)
		})
	}
}

func TestEditMissingFile(t *testing.T) {
	s, _ := newSet(t, map[string]string{"d/x": "x"})
	wantError(t, run(t, s, NameEdit, map[string]any{"file_path": "nope.go", "old_string": "a", "new_string": "b"}), "nope.go does not exist; use Write to create a file")
	wantError(t, run(t, s, NameEdit, map[string]any{"file_path": "d", "old_string": "a", "new_string": "b"}), "d is a directory")
}

func TestEditCRLF(t *testing.T) {
	s, dir := newSet(t, map[string]string{"dos.txt": "one\r\ntwo\r\nthree\r\n"})
	r := run(t, s, NameEdit, map[string]any{"file_path": "dos.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
	wantOK(t, r)
	if got := readFile(t, filepath.Join(dir, "dos.txt")); got != "1\r\n2\r\nthree\r\n" {
		t.Errorf("CRLF edit gave %q", got)
	}
}

func TestEditWarnsWhenModifiedExternally(t *testing.T) {
	s, dir := newSet(t, map[string]string{"a.txt": "alpha\nbeta\n"})
	run(t, s, NameRead, map[string]any{"file_path": "a.txt"})
	writeFile(t, filepath.Join(dir, "a.txt"), "alpha\nbeta\ngamma\n")
	touch(t, filepath.Join(dir, "a.txt"), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	r := run(t, s, NameEdit, map[string]any{"file_path": "a.txt", "old_string": "beta", "new_string": "BETA"})
	wantOK(t, r)
	d := r.Data.(*EditData)
	if !d.ModifiedExternally || !strings.HasPrefix(r.Text, "Note: a.txt changed since you last read or wrote it") {
		t.Errorf("no warning: %+v %q", d, r.Text)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "alpha\nBETA\ngamma\n" {
		t.Errorf("file %q", got)
	}
	// Not read at all: Edit still works, with no warning.
	s2, _ := newSet(t, map[string]string{"b.txt": "b\n"})
	r = run(t, s2, NameEdit, map[string]any{"file_path": "b.txt", "old_string": "b", "new_string": "c"})
	wantOK(t, r)
	if r.Data.(*EditData).ModifiedExternally {
		t.Error("unread file reported as modified")
	}
}

// TestMultiEditAllOrNothing: when any edit fails, the file is untouched.
func TestMultiEditAllOrNothing(t *testing.T) {
	edit := func(old, new string, all bool) map[string]any {
		return map[string]any{"old_string": old, "new_string": new, "replace_all": all}
	}
	tests := []struct {
		name    string
		edits   []map[string]any
		want    string
		failed  int
		errText string
	}{
		{"all apply, in order", []map[string]any{edit(`"b"`, `"c"`, false), edit(`"c"`, `"d"`, false), edit(`"a"`, `"e"`, true)},
			strings.ReplaceAll(strings.Replace(goSrc, `"b"`, `"d"`, 1), `"a"`, `"e"`), 0, ""},
		{"second missing", []map[string]any{edit(`"b"`, `"c"`, false), edit(`"nope"`, `"x"`, false), edit(`main`, `Main`, false)},
			"", 2, "edit 2 of 3: old_string was not found"},
		{"last not unique", []map[string]any{edit(`"b"`, `"c"`, false), edit(`"a"`, `"x"`, false)},
			"", 2, "edit 2 of 2: old_string occurs 2 times"},
		{"earlier edit removes a later target", []map[string]any{edit("import \"fmt\"\n", "", false), edit("import", "x", false)},
			"", 2, "edit 2 of 2: old_string was not found"},
		{"first same strings", []map[string]any{edit("main", "main", false)}, "", 1, "edit 1 of 1"},
		{"missing new_string", []map[string]any{{"old_string": "main"}}, "", 1, "new_string is missing"},
		{"missing old_string", []map[string]any{edit(`"b"`, `"c"`, false), {"new_string": "x"}}, "", 2, "old_string is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newSet(t, map[string]string{"main.go": goSrc})
			before := stat(t, filepath.Join(dir, "main.go"))
			r := run(t, s, NameMultiEdit, map[string]any{"file_path": "main.go", "edits": tt.edits})
			got := readFile(t, filepath.Join(dir, "main.go"))
			d := r.Data.(*EditData)
			if tt.errText != "" {
				wantError(t, r, tt.errText)
				if got != goSrc || d.Applied || d.FailedEdit != tt.failed {
					t.Errorf("failed MultiEdit: file changed or data %+v", d)
				}
				if after := stat(t, filepath.Join(dir, "main.go")); !after.equal(before) {
					t.Error("failed MultiEdit rewrote the file")
				}
				noTempFiles(t, dir)
				return
			}
			wantOK(t, r)
			if got != tt.want || !d.Applied || d.Edits != len(tt.edits) || d.Replacements != 4 {
				t.Errorf("file =\n%s\nwant\n%s\ndata %+v", got, tt.want, d)
			}
		})
	}
}

func stat(t *testing.T, path string) stamp {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return stampOf(fi)
}
