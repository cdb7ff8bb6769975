// Package corpus finds the recorded agent sessions tests and benchmarks
// replay. They live in ../shared/corpus/raw beside the module root and are
// never committed; a test that needs them skips when they are absent.
package corpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Dir returns the corpus folder and whether it exists, looking beside the
// module root found by walking up from the working directory.
func Dir() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
	raw := filepath.Join(dir, "..", "shared", "corpus", "raw")
	st, err := os.Stat(raw)
	return raw, err == nil && st.IsDir()
}

// Require returns the corpus folder, or skips t saying where it looked.
func Require(t testing.TB) string {
	t.Helper()
	raw, ok := Dir()
	if !ok {
		t.Skipf("corpus not found at %s (it lives in ../shared beside the module); skipping", raw)
	}
	return raw
}

// Files returns every session file of the corpus, sorted, or skips t.
func Files(t testing.TB) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(Require(t), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}
