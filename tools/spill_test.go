package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpillFolderReadOnly: Read and Grep reach the session's spill folder
// by absolute path, and nothing else outside the workspace; the other
// tools do not write there.
func TestSpillFolderReadOnly(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	spill := filepath.Join(home, "sessions", "s1", "spill")
	for _, d := range []string{ws, spill} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(spill, "input-1.txt"), numbered(30))
	write(filepath.Join(home, "config.json"), `{"model":"m"}`)
	write(filepath.Join(home, "sessions", "s1", "transcript.jsonl"), "{}\n")
	s, err := New(ws, Options{SpillDir: spill})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	in := filepath.Join(spill, "input-1.txt")
	tests := []struct {
		name, tool string
		input      map[string]any
		ok         bool
		want       string
	}{
		{"read a spilled file", NameRead, map[string]any{"file_path": in, "offset": 29}, true, "    29\tline 29"},
		{"grep a spilled file", NameGrep, map[string]any{"pattern": "^line 17$", "path": in}, true, filepath.ToSlash(in) + ":17:line 17"},
		{"grep the spill folder", NameGrep, map[string]any{"pattern": "^line 3$", "path": spill}, true, filepath.ToSlash(in) + ":3:line 3"},
		{"the ctxkit home", NameRead, map[string]any{"file_path": filepath.Join(home, "config.json")}, false, "outside the workspace"},
		{"the transcript beside the spill folder", NameRead, map[string]any{"file_path": filepath.Join(spill, "..", "transcript.jsonl")}, false, "outside the workspace"},
		{"grep the session folder", NameGrep, map[string]any{"pattern": "x", "path": filepath.Dir(spill)}, false, "outside the workspace"},
		{"write into the spill folder", NameWrite, map[string]any{"file_path": filepath.Join(spill, "new.txt"), "content": "x"}, false, "outside the workspace"},
		{"edit a spilled file", NameEdit, map[string]any{"file_path": in, "old_string": "line 1\n", "new_string": "x"}, false, "outside the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, s, tt.tool, tt.input)
			if (r.Status == StatusOK) != tt.ok {
				t.Fatalf("status %s, want ok=%v: %s %s", r.Status, tt.ok, r.Text, r.Error)
			}
			if got := r.Text + r.Error; !strings.Contains(got, tt.want) {
				t.Errorf("result %q, want it to hold %q", got, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(spill, "new.txt")); err == nil {
		t.Error("Write created a file in the spill folder")
	}
}
