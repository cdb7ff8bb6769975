package assemble

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMentions(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"look at @src/main.go please", []string{"src/main.go"}},
		{"@a.go", []string{"a.go"}},
		{"see @main.go.", []string{"main.go"}},
		{"(@a.go, @b.go)", []string{"a.go", "b.go"}},
		{`open @"docs/my file.md" and @'other file.txt'`, []string{"docs/my file.md", "other file.txt"}},
		{`@docs/my\ file.md`, []string{"docs/my file.md"}},
		{"读一下 @文档/说明.md 然后修复", []string{"文档/说明.md"}},
		{"@naïve/café.go", []string{"naïve/café.go"}},
		{"mail me at bob@example.com or a@b", nil},
		{"x@y @@z", nil},
		{"@a.go @./a.go @a.go", []string{"a.go"}},
		{"no mentions here", nil},
		{"@", nil},
		{`@"" and @''`, nil},
		{"line one\n@../etc/passwd", []string{"../etc/passwd"}},
		{"@/abs/path.go", []string{"/abs/path.go"}},
	}
	for _, tt := range tests {
		if got := Mentions(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("Mentions(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// workspace makes a workspace with files, a directory and symlinks in and
// out of it, and a secret file outside it.
func workspace(t *testing.T) (ws, outside string) {
	t.Helper()
	ws, outside = t.TempDir(), t.TempDir()
	write := func(dir, name, data string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ws, "src/main.go", "package main\n")
	write(ws, "docs/my file.md", "# doc\n")
	write(ws, "文档/说明.md", "说明\n")
	write(ws, "a.go", "package a\n")
	write(outside, "secret.txt", "secret\n")
	for link, target := range map[string]string{
		"out":           filepath.Join(outside, "secret.txt"),
		"outdir":        outside,
		"in":            "src/main.go",
		"dangling":      "/nonexistent/ctxkit/x",
		"src/up-and-in": "../a.go",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Skipf("symlinks not supported: %v", err)
		}
	}
	return ws, outside
}

func TestResolveMentions(t *testing.T) {
	ws, outside := workspace(t)
	paths := []string{
		"src/main.go", "src", "docs/my file.md", "文档/说明.md", "missing.go",
		"../x.go", filepath.Join(outside, "secret.txt"), filepath.Join(ws, "a.go"),
		"out", "outdir/secret.txt", "dangling", "in",
	}
	ms, err := resolveMentions(openWS(t, ws), ws, paths, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]mentionState{
		"src/main.go":                        mentionFile,
		"src":                                mentionDir,
		"docs/my file.md":                    mentionFile,
		"文档/说明.md":                           mentionFile,
		"missing.go":                         mentionMissing,
		"../x.go":                            mentionOutside,
		filepath.Join(outside, "secret.txt"): mentionOutside,
		filepath.Join(ws, "a.go"):            mentionFile,
		"out":                                mentionOutside,
		"outdir/secret.txt":                  mentionOutside,
		"dangling":                           mentionOutside,
		"in":                                 mentionFile,
	}
	if len(ms) != len(want) {
		t.Fatalf("got %d mentions, want %d: %+v", len(ms), len(want), ms)
	}
	for _, m := range ms {
		if m.state != want[m.path] {
			t.Errorf("%s: state %d, want %d (err %v)", m.path, m.state, want[m.path], m.err)
		}
	}
}

func TestResolveMentionsLimitAndDuplicates(t *testing.T) {
	ws, _ := workspace(t)
	paths := []string{"a.go", "./a.go", filepath.Join(ws, "a.go"), "src/main.go", "b1", "b2", "b3", "b4", "b5"}
	ms, err := resolveMentions(openWS(t, ws), ws, paths, 5)
	if err != nil {
		t.Fatal(err)
	}
	var handled, ignored []string
	for _, m := range ms {
		if m.state == mentionIgnored {
			ignored = append(ignored, m.path)
		} else {
			handled = append(handled, m.path)
		}
	}
	if !slices.Equal(handled, []string{"a.go", "src/main.go", "b1", "b2", "b3"}) || !slices.Equal(ignored, []string{"b4", "b5"}) {
		t.Errorf("handled %q, ignored %q", handled, ignored)
	}
}

func TestMentionReminder(t *testing.T) {
	ws, outside := workspace(t)
	ms, err := resolveMentions(openWS(t, ws), ws, []string{"docs/my file.md", "文档/说明.md", "src", "nope.go", "out", filepath.Join(outside, "secret.txt"), "a.go"}, 6)
	if err != nil {
		t.Fatal(err)
	}
	text, notes := mentionReminder(ms, 6)
	for _, s := range []string{
		"read the files you need with the Read tool",
		`- "docs/my file.md"`,
		"- 文档/说明.md\n",
		"- src (a directory: list it with the LS tool)",
		"- nope.go: does not exist in the workspace.",
		"- out: outside the workspace",
		"- " + filepath.Join(outside, "secret.txt") + ": outside the workspace",
		"Do not try to read it.",
		"these were ignored: a.go",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("reminder lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "secret\n") {
		t.Error("the reminder includes a file's content")
	}
	if len(notes) != 4 {
		t.Errorf("notes = %q, want 4 (missing, 2 refused, ignored)", notes)
	}
}

// TestInlineMentions (issue 26 row 10): mentioned text files go in the
// turn while they fit in the budget, in order; a larger one, a binary one
// or one past the budget is only named.
func TestInlineMentions(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{
		"small.go": "package small\n",
		"mid.txt":  strings.Repeat("x", 60) + "\n",
		"big.txt":  strings.Repeat("y", 200) + "\n",
		"bin.dat":  "a\x00b",
		"last.go":  "package last",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := resolveMentions(openWS(t, ws), ws, []string{"small.go", "big.txt", "bin.dat", "mid.txt", "last.go"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	inline(openWS(t, ws), ms, 80)
	text, notes := mentionReminder(ms, 10)
	for _, s := range []string{
		"<file path=\"small.go\" lines=\"1\">\npackage small\n</file>",
		"<file path=\"mid.txt\" lines=\"1\">\n" + strings.Repeat("x", 60) + "\n</file>",
		"read the files you need with the Read tool",
		"- big.txt\n- bin.dat\n- last.go",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("reminder lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "yyyy") || strings.Contains(text, "package last") {
		t.Errorf("a file over the budget went in:\n%s", text)
	}
	if !slices.Equal(notes, []string{"@small.go: included (1 lines, 14 bytes)", "@mid.txt: included (1 lines, 61 bytes)"}) {
		t.Errorf("notes %q", notes)
	}
}
