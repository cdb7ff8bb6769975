package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchWorkspace makes a workspace of n Go-like files of lines lines.
func benchWorkspace(b *testing.B, n, lines int) *Set {
	b.Helper()
	dir := b.TempDir()
	var src strings.Builder
	for i := range lines {
		fmt.Fprintf(&src, "func f%d(x int) int { return x + %d } // helper\n", i, i)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%d", i%10), fmt.Sprintf("f%d.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(src.String()), 0o644)
	}
	s, err := New(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkGrep(b *testing.B) {
	s := benchWorkspace(b, 200, 500)
	in := []byte(`{"pattern":"return x \\+ 4[0-9]\\b"}`)
	for b.Loop() {
		if r := s.Run(context.Background(), NameGrep, in); r.Status != StatusOK {
			b.Fatal(r.Render())
		}
	}
}

func BenchmarkRead(b *testing.B) {
	s := benchWorkspace(b, 1, 20000)
	in := []byte(`{"file_path":"pkg0/f0.go"}`)
	for b.Loop() {
		if r := s.Run(context.Background(), NameRead, in); r.Status != StatusOK {
			b.Fatal(r.Render())
		}
	}
}

func BenchmarkLS(b *testing.B) {
	s := benchWorkspace(b, 500, 1)
	in := []byte(`{"depth":2}`)
	for b.Loop() {
		if r := s.Run(context.Background(), NameLS, in); r.Status != StatusOK {
			b.Fatal(r.Render())
		}
	}
}
