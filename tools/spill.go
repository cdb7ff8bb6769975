package tools

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
)

// spillSet returns the read-only Set on the session's spill folder when p
// is an absolute path inside it (Options.SpillDir), so that Read and Grep
// can open what the session saved there; nil otherwise. The folder appears
// with the first spill, so the Set is made on first use.
func (s *Set) spillSet(p string) *Set {
	dir := s.opts.SpillDir
	if dir == "" || !filepath.IsAbs(p) {
		return nil
	}
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spill != nil {
		return s.spill
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	opts := s.opts
	opts.SpillDir = ""
	sub, err := New(dir, opts)
	if err != nil {
		return nil
	}
	sub.prefix = filepath.ToSlash(dir)
	s.spill = sub
	return sub
}

// inSpill runs a read-only tool body on the spill folder's Set when path
// names a file in it, and reports whether it did. Results name the files
// by their absolute paths.
func (s *Set) inSpill(ctx context.Context, path string, input json.RawMessage, run func(*Set, context.Context, json.RawMessage) Result) (Result, bool) {
	sub := s.spillSet(path)
	if sub == nil {
		return Result{}, false
	}
	return run(sub, ctx, input), true
}

// display is how a path relative to the Set's root appears in results:
// as it is in the workspace, absolute in the spill folder's Set.
func (s *Set) display(rel string) string {
	if s.prefix == "" {
		return show(rel)
	}
	return path.Join(s.prefix, show(rel))
}
