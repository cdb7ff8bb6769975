package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChangedFiles: a file read and then changed is described once per
// change; the stamps carry over to a new Set (a resumed session), whose
// Read and Changed still see the change.
func TestChangedFiles(t *testing.T) {
	s, ws := newSet(t, map[string]string{"nums.txt": "1\n2\n", "other.txt": "x\n", "gone.txt": "g\n"})
	for _, f := range []string{"nums.txt", "other.txt", "gone.txt"} {
		wantOK(t, run(t, s, NameRead, map[string]any{"file_path": f}))
	}
	if got := s.Changed(); got != "" {
		t.Fatalf("nothing changed, Changed says %q", got)
	}
	if err := os.WriteFile(filepath.Join(ws, "nums.txt"), []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	got := s.Changed()
	for _, want := range []string{"- gone.txt: deleted or moved", "- nums.txt: modified ", "6 bytes (was 4)"} {
		if !strings.Contains(got, want) {
			t.Errorf("Changed says %q, want %q in it", got, want)
		}
	}
	if strings.Contains(got, "other.txt") {
		t.Errorf("an unchanged file is named: %q", got)
	}
	if again := s.Changed(); again != "" {
		t.Errorf("the same change described twice: %q", again)
	}

	// A new Set on the same workspace, as a resumed session opens.
	stamps := s.Stamps()
	s2, err := New(ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	s2.RestoreStamps(stamps)
	if again := s2.Changed(); again != "" {
		t.Errorf("a change already described is described again after a resume: %q", again)
	}
	r := run(t, s2, NameRead, map[string]any{"file_path": "nums.txt"})
	wantOK(t, r)
	if d := r.Data.(*ReadData); !d.ModifiedExternally || !strings.Contains(r.Text, "changed since you last read") {
		t.Errorf("Read after a resume does not say the file changed: %+v\n%s", d, r.Text)
	}
	if err := os.WriteFile(filepath.Join(ws, "other.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := s2.Changed(); !strings.Contains(got, "- other.txt: modified") || strings.Contains(got, "nums.txt") {
		t.Errorf("after a resume, Changed says %q", got)
	}
}
