package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// noTempFiles fails when a temporary file of atomicWrite is left anywhere
// in the workspace.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".ctxkit-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestWriteCreateAndUpdate(t *testing.T) {
	s, dir := newSet(t, map[string]string{"old.txt": "one\ntwo\nthree\n"})
	r := run(t, s, NameWrite, map[string]any{"file_path": "deep/new/dir/f.go", "content": "package f\n"})
	wantOK(t, r)
	d := r.Data.(*WriteData)
	if d.Operation != "create" || d.Bytes != 10 || d.Lines != 1 || d.Added != 1 || !strings.HasPrefix(d.Diff, "--- /dev/null\n+++ b/deep/new/dir/f.go\n") {
		t.Errorf("create data %+v", d)
	}
	if got := readFile(t, filepath.Join(dir, "deep/new/dir/f.go")); got != "package f\n" {
		t.Errorf("created file holds %q", got)
	}

	// Overwriting needs a Read first.
	r = run(t, s, NameWrite, map[string]any{"file_path": "old.txt", "content": "x\n"})
	wantError(t, r, "has not been read in this session")
	if got := readFile(t, filepath.Join(dir, "old.txt")); got != "one\ntwo\nthree\n" {
		t.Fatalf("refused write changed the file: %q", got)
	}
	run(t, s, NameRead, map[string]any{"file_path": "old.txt", "limit": 1}) // a partial read counts
	r = run(t, s, NameWrite, map[string]any{"file_path": "old.txt", "content": "one\n2\nthree\n"})
	wantOK(t, r)
	d = r.Data.(*WriteData)
	wantDiff := "--- a/old.txt\n+++ b/old.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
	if d.Operation != "update" || d.Diff != wantDiff || d.Added != 1 || d.Removed != 1 || d.DiffLines != 7 {
		t.Errorf("update data %+v", d)
	}
	if !strings.Contains(r.Text, wantDiff) {
		t.Errorf("text lacks the diff: %q", r.Text)
	}
	// Written files may be overwritten again without a Read.
	wantOK(t, run(t, s, NameWrite, map[string]any{"file_path": "deep/new/dir/f.go", "content": "package g\n"}))
	// Same content: nothing written.
	r = run(t, s, NameWrite, map[string]any{"file_path": "old.txt", "content": "one\n2\nthree\n"})
	wantOK(t, r)
	if !r.Data.(*WriteData).Unchanged {
		t.Errorf("identical write not reported: %+v", r.Data)
	}
	// Empty content is a valid file.
	wantOK(t, run(t, s, NameWrite, map[string]any{"file_path": "empty.txt", "content": ""}))
	if got := readFile(t, filepath.Join(dir, "empty.txt")); got != "" {
		t.Errorf("empty.txt holds %q", got)
	}
	noTempFiles(t, dir)
}

func TestWriteRefusesExternallyChanged(t *testing.T) {
	s, dir := newSet(t, map[string]string{"a.txt": "a\n"})
	run(t, s, NameRead, map[string]any{"file_path": "a.txt"})
	writeFile(t, filepath.Join(dir, "a.txt"), "user's change\n")
	touch(t, filepath.Join(dir, "a.txt"), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	r := run(t, s, NameWrite, map[string]any{"file_path": "a.txt", "content": "agent\n"})
	wantError(t, r, "a.txt changed since you last read or wrote it")
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "user's change\n" {
		t.Errorf("the user's change was overwritten: %q", got)
	}
	run(t, s, NameRead, map[string]any{"file_path": "a.txt"})
	wantOK(t, run(t, s, NameWrite, map[string]any{"file_path": "a.txt", "content": "agent\n"}))
}

func TestWriteErrors(t *testing.T) {
	s, dir := newSet(t, map[string]string{"file": "x", "dir/a": "a"})
	tests := []struct{ path, want string }{
		{"dir", "dir is a directory"},
		{"file/child.txt", "file"},
	}
	for _, tt := range tests {
		wantError(t, run(t, s, NameWrite, map[string]any{"file_path": tt.path, "content": "c"}), tt.want)
	}
	noTempFiles(t, dir)
}

func TestAtomicWriteKeepsModeAndLeavesNoTemp(t *testing.T) {
	s, dir := newSet(t, map[string]string{"run.sh": "#!/bin/sh\necho hi\n"})
	path := filepath.Join(dir, "run.sh")
	if err := os.Chmod(path, 0o751); err != nil {
		t.Fatal(err)
	}
	run(t, s, NameRead, map[string]any{"file_path": "run.sh"})
	wantOK(t, run(t, s, NameEdit, map[string]any{"file_path": "run.sh", "old_string": "hi", "new_string": "bye"}))
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 {
		t.Errorf("mode %v after Edit, want 0751", fi.Mode().Perm())
	}
	wantOK(t, run(t, s, NameWrite, map[string]any{"file_path": "run.sh", "content": "#!/bin/sh\n"}))
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o751 {
		t.Errorf("mode %v after Write, want 0751", fi.Mode().Perm())
	}
	noTempFiles(t, dir)

	// A failed rename (the target became a directory) removes the temp file.
	if err := s.atomicWrite("dir-target", []byte("x"), 0o644, true); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "dir-target"))
	writeFile(t, filepath.Join(dir, "dir-target", "inner"), "x")
	if err := s.atomicWrite("dir-target", []byte("y"), 0o644, true); err == nil {
		t.Error("rename over a non-empty directory succeeded")
	}
	noTempFiles(t, dir)
}

// TestConcurrentEdits: parallel calls on one file are serialized, so no
// edit is lost.
func TestConcurrentEdits(t *testing.T) {
	var content strings.Builder
	for i := range 20 {
		content.WriteString("value" + string(rune('A'+i)) + "\n")
	}
	s, dir := newSet(t, map[string]string{"f.txt": content.String()})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			old := "value" + string(rune('A'+i))
			r := s.Run(context.Background(), NameEdit, mustJSON(t, map[string]any{"file_path": "f.txt", "old_string": old, "new_string": strings.ToLower(old)}))
			if r.Status != StatusOK {
				t.Errorf("edit %d: %s", i, r.Render())
			}
			s.Run(context.Background(), NameRead, mustJSON(t, map[string]any{"file_path": "f.txt"}))
		})
	}
	wg.Wait()
	if got := readFile(t, filepath.Join(dir, "f.txt")); got != strings.ToLower(content.String()) {
		t.Errorf("lost edits:\n%s", got)
	}
	noTempFiles(t, dir)
}
