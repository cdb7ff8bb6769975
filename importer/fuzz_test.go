package importer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// FuzzLoad feeds arbitrary bytes to Load, seeded with every fixture: it
// must never panic, and whatever it accepts passes conv.Check.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "session")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, strict := range []bool{false, true} {
			s, err := Load(context.Background(), path, Options{Strict: strict})
			if err != nil {
				if s != nil {
					t.Fatal("a session came back with an error")
				}
				continue
			}
			if vs := conv.Check(s.Conv); len(vs) > 0 {
				t.Fatalf("accepted a conversation that breaks the invariants: %v", vs)
			}
			if len(s.Conv.Messages) == 0 {
				t.Fatal("accepted a file with no messages")
			}
		}
	})
}
