package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
)

// errOutside is returned for a path that names something outside the
// workspace.
var errOutside = errors.New("outside the workspace")

// rel turns a path given by the model into a clean path relative to the
// workspace root. Absolute paths are accepted when they lie inside the
// workspace. Symbolic links are not looked at here: os.Root refuses those
// that leave the workspace when the path is used.
func (s *Set) rel(p string) (string, error) {
	switch {
	case strings.TrimSpace(p) == "":
		return "", errors.New("the path is empty")
	case strings.ContainsRune(p, 0):
		return "", errors.New("the path contains a NUL byte")
	case p == "~" || strings.HasPrefix(p, "~/"):
		return "", fmt.Errorf("%s: ~ is not expanded; give a path relative to the workspace or an absolute path inside it", p)
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		for _, base := range []string{s.dir, s.real} {
			r, err := filepath.Rel(base, c)
			if err == nil && !escapes(r) {
				return r, nil
			}
		}
		return "", fmt.Errorf("%s is %w (%s)", p, errOutside, s.dir)
	}
	c := filepath.Clean(p)
	if escapes(c) {
		return "", fmt.Errorf("%s is %w (%s)", p, errOutside, s.dir)
	}
	return c, nil
}

// escapes reports whether a clean relative path climbs out of its base.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// show is how a workspace-relative path appears in results: slash
// separated, "." for the workspace itself.
func show(rel string) string { return filepath.ToSlash(rel) }

// pathError turns an error from os.Root into a message about the path the
// model gave, so that the model can act on it.
func pathError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied: %s", p)
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root has no exported sentinel for this; its message is stable.
		return fmt.Errorf("%s is %w: a symbolic link on the way points out of it (or is absolute)", p, errOutside)
	case strings.Contains(err.Error(), "not a directory"):
		return fmt.Errorf("%s: a component of the path is a file, not a directory", p)
	}
	return err
}

// resolveLinks follows symbolic links at the end of rel, so that a write
// replaces the file a link points to rather than the link. Targets must be
// relative and stay inside the workspace, as os.Root requires for reads.
func (s *Set) resolveLinks(rel string) (string, error) {
	for range 40 {
		fi, err := s.root.Lstat(rel)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return rel, nil // a missing file is created where it is named
		}
		target, err := s.root.Readlink(rel)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			return "", fmt.Errorf("%s is a symbolic link to an absolute path (%s); refused", show(rel), target)
		}
		next := filepath.Join(filepath.Dir(rel), target)
		if escapes(next) {
			return "", fmt.Errorf("%s is %w: it is a symbolic link to %s", show(rel), errOutside, target)
		}
		rel = next
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", show(rel))
}

// stamp is what the agent last saw of a file: its modification time and
// size (seed 000 §3.6).
type stamp struct {
	mtime time.Time
	size  int64
}

func stampOf(fi fs.FileInfo) stamp { return stamp{mtime: fi.ModTime(), size: fi.Size()} }

func (a stamp) equal(b stamp) bool { return a.mtime.Equal(b.mtime) && a.size == b.size }

// lastSeen returns the stamp recorded when the agent last read or wrote
// rel.
func (s *Set) lastSeen(rel string) (stamp, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.seen[show(rel)]
	return st, ok
}

// remember records what the agent now knows of rel.
func (s *Set) remember(rel string, st stamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[show(rel)] = st
}

// changedNote describes a file that changed since the agent last saw it.
func changedNote(p string, prev, cur stamp) string {
	return fmt.Sprintf("%s changed since you last read or wrote it (by a command, another program or the user): modified %s, now %s; size %d bytes, now %d",
		p, prev.mtime.UTC().Format(time.RFC3339Nano), cur.mtime.UTC().Format(time.RFC3339Nano), prev.size, cur.size)
}
