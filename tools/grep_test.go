package tools

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var grepFiles = map[string]string{
	".gitignore":          "build/\n*.min.js\n",
	"main.go":             "package main\n\n// TODO: one\nfunc main() {\n\tTODO()\n}\n",
	"lib/util.go":         "package lib\n\n// todo: lower case\n",
	"lib/util_test.go":    "package lib\n// TODO: test\n",
	"web/app.ts":          "// TODO ts\n",
	"web/app.tsx":         "// TODO tsx\n",
	"build/out.go":        "// TODO ignored\n",
	"web/vendor.min.js":   "// TODO ignored\n",
	"assets/logo.bin":     "TODO\x00\x01\x02",
	".git/config":         "TODO in git\n",
	"docs/crlf.md":        "TODO crlf\r\nnext\r\n",
	"docs/notes/deep.txt": "nothing here\n",
}

func TestGrep(t *testing.T) {
	s, _ := newSet(t, grepFiles)
	tests := []struct {
		name    string
		input   map[string]any
		matches []string
		total   int
		files   []string
	}{
		{"whole workspace", map[string]any{"pattern": "TODO"},
			[]string{"docs/crlf.md:1:TODO crlf", "lib/util_test.go:2:// TODO: test", "main.go:3:// TODO: one", "main.go:5:\tTODO()", "web/app.ts:1:// TODO ts", "web/app.tsx:1:// TODO tsx"}, 6, nil},
		{"ignore case", map[string]any{"pattern": "todo:", "ignore_case": true},
			[]string{"lib/util.go:3:// todo: lower case", "lib/util_test.go:2:// TODO: test", "main.go:3:// TODO: one"}, 3, nil},
		{"claude code -i", map[string]any{"pattern": "todo:", "-i": true},
			[]string{"lib/util.go:3:// todo: lower case", "lib/util_test.go:2:// TODO: test", "main.go:3:// TODO: one"}, 3, nil},
		{"path", map[string]any{"pattern": "TODO", "path": "lib"},
			[]string{"lib/util_test.go:2:// TODO: test"}, 1, nil},
		{"one file", map[string]any{"pattern": "TODO", "path": "main.go"},
			[]string{"main.go:3:// TODO: one", "main.go:5:\tTODO()"}, 2, nil},
		{"ignored file named outright", map[string]any{"pattern": "TODO", "path": "build/out.go"},
			[]string{"build/out.go:1:// TODO ignored"}, 1, nil},
		{"glob name", map[string]any{"pattern": "TODO", "glob": "*_test.go"},
			[]string{"lib/util_test.go:2:// TODO: test"}, 1, nil},
		{"glob braces", map[string]any{"pattern": "TODO", "glob": "*.{ts,tsx}"},
			[]string{"web/app.ts:1:// TODO ts", "web/app.tsx:1:// TODO tsx"}, 2, nil},
		{"glob path", map[string]any{"pattern": "TODO", "glob": "web/**/*.tsx"},
			[]string{"web/app.tsx:1:// TODO tsx"}, 1, nil},
		{"glob relative to path", map[string]any{"pattern": "TODO", "path": "web", "glob": "/app.ts"},
			[]string{"web/app.ts:1:// TODO ts"}, 1, nil},
		{"anchors per line", map[string]any{"pattern": `^\tTODO\(\)$`},
			[]string{"main.go:5:\tTODO()"}, 1, nil},
		{"files mode", map[string]any{"pattern": "TODO", "output_mode": "files_with_matches"},
			[]string{}, 6, []string{"docs/crlf.md", "lib/util_test.go", "main.go", "web/app.ts", "web/app.tsx"}},
		{"no match", map[string]any{"pattern": "nothing at all"}, []string{}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, s, NameGrep, tt.input)
			wantOK(t, r)
			d := r.Data.(*GrepData)
			if !slices.Equal(d.Matches, tt.matches) || d.TotalMatches != tt.total || !slices.Equal(d.Files, tt.files) {
				t.Errorf("matches %q (total %d) files %q\nwant %q (total %d) files %q", d.Matches, d.TotalMatches, d.Files, tt.matches, tt.total, tt.files)
			}
			if d.Truncated {
				t.Error("truncated")
			}
			for _, m := range tt.matches {
				if !strings.Contains(r.Text, m) {
					t.Errorf("text lacks %q", m)
				}
			}
			if strings.Contains(r.Text, "ignored") || strings.Contains(r.Text, "in git") {
				if tt.name != "ignored file named outright" {
					t.Errorf("ignored content in the result:\n%s", r.Text)
				}
			}
		})
	}
	r := run(t, s, NameGrep, map[string]any{"pattern": "TODO"})
	if d := r.Data.(*GrepData); d.SkippedBinary != 1 {
		t.Errorf("skipped_binary = %d, want 1 (assets/logo.bin)", d.SkippedBinary)
	}
	wantError(t, run(t, s, NameGrep, map[string]any{"pattern": "x", "path": "nope"}), "nope does not exist")
}

func TestGrepTrueTotal(t *testing.T) {
	files := map[string]string{}
	for i := range 12 {
		var sb strings.Builder
		for j := range 25 {
			fmt.Fprintf(&sb, "match %d %d\nother\n", i, j)
		}
		files[fmt.Sprintf("f%02d.txt", i)] = sb.String()
	}
	files["big.txt"] = strings.Repeat("match in a big file\n", 1000)
	s, _ := newSetOpts(t, files, Options{GrepMaxMatches: 7, GrepMaxFileSize: 10000})
	r := run(t, s, NameGrep, map[string]any{"pattern": "^match"})
	wantOK(t, r)
	d := r.Data.(*GrepData)
	if len(d.Matches) != 7 || d.TotalMatches != 300 || d.TotalFiles != 12 || !d.Truncated || d.SkippedLarge != 1 {
		t.Errorf("data %+v", d)
	}
	if d.Matches[0] != "f00.txt:1:match 0 0" || d.Matches[6] != "f00.txt:13:match 0 6" {
		t.Errorf("first matches %q", d.Matches)
	}
	if !strings.Contains(r.Text, "(300 matching lines in 12 files; showing the first 7.") {
		t.Errorf("text %q", r.Text)
	}
	r = run(t, s, NameGrep, map[string]any{"pattern": "^match", "head_limit": 3, "output_mode": "files_with_matches"})
	d = r.Data.(*GrepData)
	if len(d.Files) != 3 || d.TotalFiles != 12 || d.TotalMatches != 300 || !d.Truncated {
		t.Errorf("files mode data %+v", d)
	}
}

func TestGrepLongLinesCut(t *testing.T) {
	s, _ := newSet(t, map[string]string{"min.js": "var x=1;" + strings.Repeat("é", 400) + "needle\n"})
	r := run(t, s, NameGrep, map[string]any{"pattern": "needle"})
	d := r.Data.(*GrepData)
	if len(d.Matches) != 1 || len(d.Matches[0]) > 320 || !strings.HasSuffix(d.Matches[0], "…") {
		t.Errorf("match %q (%d bytes)", d.Matches, len(d.Matches[0]))
	}
}

func TestGrepCancelled(t *testing.T) {
	s, _ := newSet(t, grepFiles)
	// Run refuses a cancelled context up front; the tool body, called
	// directly, shows what a cancellation during the walk gives.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in, err := checkInput(mustJSON(t, map[string]any{"pattern": "TODO"}), []string{"pattern"})
	if err != nil {
		t.Fatal(err)
	}
	r := s.grep(ctx, in)
	r.measure()
	checkResult(t, r)
	if r.Status != StatusPartial || !strings.Contains(r.Error, "search cut short") || !strings.Contains(r.Text, "search cut short") {
		t.Errorf("cancelled grep: %s %q %q", r.Status, r.Error, r.Text)
	}
}

// TestGrepAgreesWithGit: the files Grep searches are the files git sees
// (tracked or untracked, not ignored), for a tree of ignore rules.
func TestGrepAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	files := map[string]string{
		".gitignore":              "*.log\n!important.log\n/build/\ntmp*\ndocs/**/draft.md\n[Cc]ache/\n",
		"a.go":                    "x\n",
		"x.log":                   "x\n",
		"important.log":           "x\n",
		"build/b.go":              "x\n",
		"src/build/c.go":          "x\n",
		"tmp1.txt":                "x\n",
		"src/tmpdir/d.go":         "x\n",
		"docs/draft.md":           "x\n",
		"docs/x/y/draft.md":       "x\n",
		"docs/x/final.md":         "x\n",
		"Cache/e":                 "x\n",
		"src/cache/f":             "x\n",
		"src/.gitignore":          "*.gen.go\n!keep.gen.go\n",
		"src/a.gen.go":            "x\n",
		"src/keep.gen.go":         "x\n",
		"src/sub/b.gen.go":        "x\n",
		"src/sub/.gitignore":      "/only-here.txt\n",
		"src/sub/only-here.txt":   "x\n",
		"src/sub/x/only-here.txt": "x\n",
		"sp ace/file name.txt":    "x\n",
	}
	s, dir := newSet(t, files)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	want := strings.Split(strings.TrimSpace(git("ls-files", "-co", "--exclude-standard")), "\n")
	for i := range want {
		want[i] = strings.Trim(want[i], `"`)
	}
	slices.Sort(want)
	r := run(t, s, NameGrep, map[string]any{"pattern": "", "output_mode": "files_with_matches", "head_limit": 1000})
	got := r.Data.(*GrepData).Files
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Grep searched\n%q\ngit lists\n%q", got, want)
	}
}
