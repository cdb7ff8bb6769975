package transcript_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/transcript"
)

// FuzzOpen feeds arbitrary bytes as a transcript: opening never panics, and
// what a reader rebuilds is what a writer rebuilds after cutting a torn
// tail, which then leaves a clean file.
func FuzzOpen(f *testing.F) {
	fx := newFixture(f)
	session(fx)
	fx.keep(fx.rung("b7", 2, "[cleared — recall b7]"))
	fx.s.Close()
	seed, err := os.ReadFile(filepath.Join(fx.dir, transcript.FileName))
	if err != nil {
		f.Fatal(err)
	}
	// Small seeds fuzz faster: the first records, whole and torn.
	lines := bytes.SplitAfter(seed, []byte("\n"))
	f.Add(bytes.Join(lines[:4], nil))
	f.Add(bytes.Join(lines[:4], nil)[:len(bytes.Join(lines[:4], nil))-9])
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, transcript.FileName), data, 0o600); err != nil {
			t.Fatal(err)
		}
		ro, err := transcript.OpenReadOnly(dir)
		if err != nil {
			return
		}
		want := ro.Conversation()
		ro.Close()
		s, err := transcript.Open(dir)
		if err != nil {
			t.Fatalf("a reader opened it, a writer did not: %v", err)
		}
		got := s.Conversation()
		s.Close()
		if diff := cmp.Diff(want, got, convOpts); diff != "" {
			t.Fatalf("writer rebuilt another state (-reader +writer):\n%s", diff)
		}
		again, err := transcript.OpenReadOnly(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		if w := again.Warnings(); len(w) > 0 {
			t.Fatalf("warnings after the writer cut the tail: %q", w)
		}
	})
}
