//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesRefused: a FIFO or a device in the workspace is refused
// by every tool that reads files, without blocking, whether it is named
// outright or met while walking a folder.
func TestSpecialFilesRefused(t *testing.T) {
	s, dir := newSet(t, map[string]string{"a.txt": "needle\n", "sub/b.txt": "needle\n"})
	for _, p := range []string{"pipe", "sub/pipe", ".gitignore"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		tool  string
		input map[string]any
		want  string // "" for success
	}{
		{NameGrep, map[string]any{"pattern": "needle", "path": "pipe"}, "pipe is not a regular file (a FIFO)"},
		{NameGrep, map[string]any{"pattern": "needle"}, ""},
		{NameGrep, map[string]any{"pattern": "needle", "path": "sub"}, ""},
		{NameRead, map[string]any{"file_path": "pipe"}, "not a regular file (a FIFO)"},
		{NameEdit, map[string]any{"file_path": "pipe", "old_string": "a", "new_string": "b"}, "not a regular file"},
		{NameWrite, map[string]any{"file_path": "pipe", "content": "x"}, "not a regular file"},
		{NameLS, map[string]any{"path": "."}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			done := make(chan Result, 1)
			go func() { done <- s.Run(context.Background(), tt.tool, mustJSON(t, tt.input)) }()
			var r Result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s %v hangs on a FIFO", tt.tool, tt.input)
			}
			if tt.want == "" {
				if r.Status != StatusOK {
					t.Fatalf("%s: %s %s", tt.tool, r.Status, r.Error)
				}
				if d, ok := r.Data.(*GrepData); ok && d.TotalMatches != 2-boolInt(tt.input["path"] == "sub") {
					t.Errorf("grep found %d matches", d.TotalMatches)
				}
				return
			}
			if r.Status != StatusError || !strings.Contains(r.Error, tt.want) {
				t.Errorf("%s = %s %q, want an error with %q", tt.tool, r.Status, r.Error, tt.want)
			}
		})
	}
}

// TestHardLinkNotRead: a hard link inside the workspace to a file outside
// it does not leak the file's content through any tool.
func TestHardLinkNotRead(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("TOP-SECRET outside the workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, dir := newSet(t, map[string]string{"ok.txt": "fine\n"})
	if err := os.Link(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	for _, c := range []struct {
		tool  string
		input map[string]any
	}{
		{NameRead, map[string]any{"file_path": "link.txt"}},
		{NameGrep, map[string]any{"pattern": "SECRET"}},
		{NameGrep, map[string]any{"pattern": "SECRET", "path": "link.txt"}},
		{NameEdit, map[string]any{"file_path": "link.txt", "old_string": "TOP", "new_string": "BOTTOM"}},
		{NameWrite, map[string]any{"file_path": "link.txt", "content": "x"}},
	} {
		r := s.Run(context.Background(), c.tool, mustJSON(t, c.input))
		if strings.Contains(r.Text+r.Error+string(r.JSON()), "TOP-SECRET") {
			t.Errorf("%s %v leaked the linked file: %s", c.tool, c.input, r.Text+r.Error)
		}
	}
	r := s.Run(context.Background(), NameRead, mustJSON(t, map[string]any{"file_path": "link.txt"}))
	if !strings.Contains(r.Error, "hard links") {
		t.Errorf("Read of a hard link: %q", r.Error)
	}
	if data, _ := os.ReadFile(outside); string(data) != "TOP-SECRET outside the workspace\n" {
		t.Errorf("the file outside was changed: %q", data)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
