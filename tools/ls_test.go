package tools

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestLS(t *testing.T) {
	files := map[string]string{
		".gitignore":             "node_modules/\n*.log\n/dist\n",
		".git/HEAD":              "ref: refs/heads/main\n",
		".git/objects/ab/cdef":   "x",
		"node_modules/pkg/i.js":  "x",
		"dist/app.js":            "x",
		"debug.log":              "x",
		"README.md":              "x",
		"go.mod":                 "x",
		"cmd/tool/main.go":       "x",
		"internal/a/a.go":        "x",
		"internal/a/a.log":       "x",
		"internal/b/b.go":        "x",
		"internal/b/deep/d.go":   "x",
		"internal/dist/keep.txt": "x", // /dist is anchored to the root
	}
	s, _ := newSet(t, files)
	tests := []struct {
		name    string
		input   map[string]any
		entries []string
		ignored []string
	}{
		{"root", map[string]any{},
			[]string{".gitignore", "README.md", "cmd/", "go.mod", "internal/"},
			[]string{".git/", "debug.log", "dist/", "node_modules/"}},
		{"depth 2", map[string]any{"path": "internal", "depth": 2},
			[]string{"a/", "a/a.go", "b/", "b/b.go", "b/deep/", "dist/", "dist/keep.txt"},
			[]string{"a/a.log"}},
		{"depth 3", map[string]any{"path": "internal/", "depth": 3},
			[]string{"a/", "a/a.go", "b/", "b/b.go", "b/deep/", "b/deep/d.go", "dist/", "dist/keep.txt"},
			[]string{"a/a.log"}},
		{"extra ignore", map[string]any{"path": "internal", "depth": 3, "ignore": []string{"deep/", "*.txt"}},
			[]string{"a/", "a/a.go", "b/", "b/b.go", "dist/"},
			[]string{"a/a.log", "b/deep/", "dist/keep.txt"}},
		{"ignored folder named outright", map[string]any{"path": "node_modules", "depth": 2},
			[]string{"pkg/", "pkg/i.js"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, s, NameLS, tt.input)
			wantOK(t, r)
			d := r.Data.(*LSData)
			if !slices.Equal(d.Entries, tt.entries) || !slices.Equal(d.Ignored, tt.ignored) {
				t.Errorf("entries %q ignored %q\nwant %q ignored %q", d.Entries, d.Ignored, tt.entries, tt.ignored)
			}
			if d.TotalEntries != len(tt.entries) || d.TotalIgnored != len(tt.ignored) || d.Truncated {
				t.Errorf("totals %+v", d)
			}
			for _, e := range tt.entries {
				if !strings.Contains(r.Text, "\n"+e+"\n") && !strings.HasSuffix(r.Text, "\n"+e) && !strings.Contains(r.Text, "\n"+e+"\n(") {
					t.Errorf("text lacks %q:\n%s", e, r.Text)
				}
			}
		})
	}
	wantError(t, run(t, s, NameLS, map[string]any{"path": "go.mod"}), "go.mod is a file, not a directory; use Read")
	wantError(t, run(t, s, NameLS, map[string]any{"path": "nope"}), "nope does not exist")
}

func TestLSTrueTotal(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = "x"
	}
	s, _ := newSetOpts(t, files, Options{LSMaxEntries: 10})
	r := run(t, s, NameLS, map[string]any{"path": "."})
	wantOK(t, r)
	d := r.Data.(*LSData)
	if len(d.Entries) != 10 || d.TotalEntries != 30 || !d.Truncated || d.Entries[0] != "f00.txt" || d.Entries[9] != "f09.txt" {
		t.Errorf("data %+v", d)
	}
	if !strings.Contains(r.Text, "./ (30 entries)") || !strings.Contains(r.Text, "(Showing 10 of 30 entries.") {
		t.Errorf("text %q", r.Text)
	}
}
