package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	must(t, os.WriteFile(in, []byte("input"), 0o644))
	must(t, os.Link(in, filepath.Join(dir, "hard")))
	must(t, os.Symlink("in.jsonl", filepath.Join(dir, "link-in")))
	must(t, os.WriteFile(filepath.Join(dir, "other"), []byte("other"), 0o644))
	must(t, os.Symlink("other", filepath.Join(dir, "link-other")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "private"), []byte("old"), 0o600))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))

	tests := []struct {
		name    string
		path    string
		force   bool
		wantErr error
		wantMsg string
	}{
		{name: "new file", path: "new.json"},
		{name: "same as input", path: "in.jsonl", wantErr: ErrInput, wantMsg: "refusing to overwrite an input (it is the input)"},
		{name: "same as input, dotted", path: "./sub/../in.jsonl", wantErr: ErrInput},
		{name: "hard link to input", path: "hard", wantErr: ErrInput},
		{name: "symlink to input", path: "link-in", wantErr: ErrInput},
		{name: "symlink to input, forced", path: "link-in", force: true, wantErr: ErrInput},
		{name: "symlink elsewhere", path: "link-other", wantErr: ErrSymlink, wantMsg: "--force"},
		{name: "symlink elsewhere, forced", path: "link-other", force: true},
		{name: "fifo", path: "fifo", wantErr: ErrNotRegular, wantMsg: "a FIFO"},
		{name: "device", path: "/dev/null", wantErr: ErrNotRegular, wantMsg: "a character device"},
		{name: "directory", path: "sub", wantErr: ErrDir},
		{name: "existing file", path: "private"},
		{name: "missing folder", path: "nowhere/out.json", wantMsg: "does not exist"},
		{name: "folder that takes no files", path: "/proc/ctxkit-out.json", wantMsg: "cannot create a file in the folder /proc: it takes no new files"},
		{name: "system file in such a folder", path: "/proc/version", wantMsg: "cannot create a file in the folder /proc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.HasPrefix(tt.path, "/dev/") && !isCharDevice(tt.path) {
				// As root on a machine where it is a plain file, the test
				// would replace it: tests never write to system paths.
				t.Skipf("%s is not a character device here", tt.path)
			}
			p := tt.path
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			err := Write(p, []byte("output"), Options{Inputs: []string{in}, Force: tt.force, Flag: "-o"})
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Write = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && tt.wantMsg == "" && err != nil {
				t.Fatalf("Write = %v", err)
			}
			if tt.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Fatalf("Write = %v, want a message with %q", err, tt.wantMsg)
			}
			if err != nil && (strings.Contains(err.Error(), ".tmp-") || !strings.Contains(err.Error(), "-o ")) {
				t.Errorf("message %q should name the flag and the path, not a temporary file", err)
			}
			if data, _ := os.ReadFile(in); string(data) != "input" {
				t.Fatalf("the input was overwritten: %q", data)
			}
		})
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link-other")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("a forced write through a link replaced the link")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "other")); string(data) != "output" {
		t.Errorf("a forced write through a link did not reach its target: %q", data)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "private")); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want 0600 kept", fi.Mode().Perm())
	}
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	must(t, Write(filepath.Join(dir, "umask.json"), nil, Options{}))
	if fi, _ := os.Stat(filepath.Join(dir, "umask.json")); fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644 under umask 022", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteFull(t *testing.T) {
	if !isCharDevice("/dev/full") {
		t.Skip("/dev/full is not a character device here")
	}
	err := Write("/dev/full", []byte("x"), Options{Force: true})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Write(/dev/full) = %v, want no space left", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// isCharDevice reports whether path is a character device, not a plain file
// standing in its place.
func isCharDevice(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
