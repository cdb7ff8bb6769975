package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPathEscapesRefused tries every way out of the workspace with every
// file tool: the call must fail and nothing outside may change.
func TestPathEscapesRefused(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	outsideDir := filepath.Join(parent, "outside")
	secret := filepath.Join(outsideDir, "secret.txt")
	writeFile(t, secret, "SECRET line\n")
	writeFile(t, filepath.Join(ws, "inside.txt"), "inside\n")
	writeFile(t, filepath.Join(ws, "sub", "x.txt"), "x\n")
	mustSymlink(t, "../outside/secret.txt", filepath.Join(ws, "rel-link"))
	mustSymlink(t, secret, filepath.Join(ws, "abs-link"))
	mustSymlink(t, "../outside", filepath.Join(ws, "dir-link"))
	mustSymlink(t, "../../outside/secret.txt", filepath.Join(ws, "sub", "deep-link"))
	s, err := New(ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	paths := []string{
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		secret,
		"/etc/passwd",
		"rel-link",
		"abs-link",
		"dir-link/secret.txt",
		"dir-link/new.txt",
		"sub/deep-link",
		"..",
		"~/x",
	}
	type call struct {
		tool  string
		input func(p string) map[string]any
	}
	calls := []call{
		{NameRead, func(p string) map[string]any { return map[string]any{"file_path": p} }},
		{NameWrite, func(p string) map[string]any { return map[string]any{"file_path": p, "content": "pwned\n"} }},
		{NameEdit, func(p string) map[string]any {
			return map[string]any{"file_path": p, "old_string": "SECRET", "new_string": "pwned"}
		}},
		{NameMultiEdit, func(p string) map[string]any {
			return map[string]any{"file_path": p, "edits": []map[string]any{{"old_string": "SECRET", "new_string": "pwned"}}}
		}},
		{NameLS, func(p string) map[string]any { return map[string]any{"path": p} }},
		{NameGrep, func(p string) map[string]any { return map[string]any{"pattern": "SECRET", "path": p} }},
	}
	for _, c := range calls {
		for _, p := range paths {
			t.Run(c.tool+"/"+p, func(t *testing.T) {
				r := run(t, s, c.tool, c.input(p))
				if r.Status != StatusError {
					t.Fatalf("status %s, want error: %s", r.Status, r.Render())
				}
				if msg := r.Error; !strings.Contains(msg, "outside the workspace") && !strings.Contains(msg, "symbolic link") && !strings.Contains(msg, "not expanded") {
					t.Errorf("error %q does not say the path leaves the workspace", msg)
				}
				if strings.Contains(r.Render(), "SECRET") {
					t.Errorf("result shows the outside file: %s", r.Render())
				}
			})
		}
	}
	if got := readFile(t, secret); got != "SECRET line\n" {
		t.Errorf("outside file changed to %q", got)
	}
	ents, _ := os.ReadDir(outsideDir)
	if len(ents) != 1 {
		t.Errorf("outside folder holds %d entries, want only secret.txt", len(ents))
	}
	ents, _ = os.ReadDir(parent)
	if len(ents) != 2 {
		t.Errorf("parent folder holds %d entries, want ws and outside", len(ents))
	}

	// Walking tools do not follow links out either.
	r := run(t, s, NameGrep, map[string]any{"pattern": "SECRET"})
	wantOK(t, r)
	if d := r.Data.(*GrepData); d.TotalMatches != 0 {
		t.Errorf("Grep over the workspace found %v through a link", d.Matches)
	}
	r = run(t, s, NameLS, map[string]any{"depth": 3})
	wantOK(t, r)
	if d := r.Data.(*LSData); slices.Contains(d.Entries, "dir-link/secret.txt") || !slices.Contains(d.Entries, "dir-link -> ../outside") {
		t.Errorf("LS entries %v", d.Entries)
	}
}

// TestPathsInside: absolute paths inside the workspace, ".." that stays
// inside and links that stay inside all work.
func TestPathsInside(t *testing.T) {
	s, dir := newSet(t, map[string]string{"a/b.txt": "hello\n"})
	mustSymlink(t, "a/b.txt", filepath.Join(dir, "link"))
	mustSymlink(t, "a", filepath.Join(dir, "dirlink"))
	for _, p := range []string{filepath.Join(dir, "a", "b.txt"), "a/../a/b.txt", "./a/b.txt", "link", "dirlink/b.txt"} {
		r := run(t, s, NameRead, map[string]any{"file_path": p})
		wantOK(t, r)
		if d := r.Data.(*ReadData); !strings.Contains(r.Text, "hello") || d.Path == "" || filepath.IsAbs(d.Path) {
			t.Errorf("Read(%q) = %+v %q", p, d, r.Text)
		}
	}
	// Writing through a link inside the workspace changes its target and
	// keeps the link.
	r := run(t, s, NameEdit, map[string]any{"file_path": "link", "old_string": "hello", "new_string": "bye"})
	wantOK(t, r)
	if got := readFile(t, filepath.Join(dir, "a", "b.txt")); got != "bye\n" {
		t.Errorf("target holds %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced by a file: %v", err)
	}
	if d := r.Data.(*EditData); d.Path != "a/b.txt" {
		t.Errorf("Edit through a link reports path %q, want the target", d.Path)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symbolic links not supported: %v", err)
	}
}

// TestLinkReadThenWrite: reading through a link counts as reading its
// target, so Write through the same link is allowed.
func TestLinkReadThenWrite(t *testing.T) {
	s, dir := newSet(t, map[string]string{"real.txt": "old\n"})
	mustSymlink(t, "real.txt", filepath.Join(dir, "alias.txt"))
	r := run(t, s, NameRead, map[string]any{"file_path": "alias.txt"})
	wantOK(t, r)
	if p := r.Data.(*ReadData).Path; p != "real.txt" {
		t.Errorf("Read through a link reports %q", p)
	}
	wantOK(t, run(t, s, NameWrite, map[string]any{"file_path": "alias.txt", "content": "new\n"}))
	if got := readFile(t, filepath.Join(dir, "real.txt")); got != "new\n" {
		t.Errorf("real.txt holds %q", got)
	}
}
