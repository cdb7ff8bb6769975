package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
)

// WriteData is the Data of a Write result.
type WriteData struct {
	Path string `json:"path"`
	// Operation is "create" or "update".
	Operation string `json:"operation"`
	// Bytes and Lines measure the new content.
	Bytes int `json:"bytes"`
	Lines int `json:"lines"`
	// Unchanged is true when the file already held exactly this content;
	// it was then left alone.
	Unchanged bool `json:"unchanged,omitempty"`
	Change
}

// Change is the change a Write or an Edit made, as a unified diff
// (--- a/path, +++ b/path, or --- /dev/null for a new file) cut to its
// first lines.
type Change struct {
	// Added and Removed count changed lines in the whole diff.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Diff is the first lines of the unified diff; DiffLines is the
	// length of the whole diff in lines, so Diff is cut when DiffLines is
	// larger than the lines it holds.
	Diff      string `json:"diff"`
	DiffLines int    `json:"diff_lines"`
}

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

func (s *Set) write(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameWrite, input, func(in *writeInput) Result {
		rel, err := s.rel(in.FilePath)
		if err != nil {
			return failf(nil, "%v", err)
		}
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		target, err := s.resolveLinks(rel)
		if err != nil {
			return failf(nil, "%v", err)
		}
		p := show(target)
		d := &WriteData{Path: p, Operation: "create", Bytes: len(in.Content), Lines: countLines(in.Content)}
		var old []byte
		perm := fs.FileMode(0o666) // before umask, as a new file
		keepMode := false
		fi, err := s.root.Stat(target)
		switch {
		case err == nil && fi.IsDir():
			return failf(nil, "%s is a directory", p)
		case err == nil && !fi.Mode().IsRegular():
			return failf(nil, "%s is not a regular file (%s)", p, fi.Mode().Type())
		case err == nil:
			// Write replaces the whole file: refuse to overwrite what the
			// agent never saw, or what changed since it last looked.
			prev, seen := s.lastSeen(target)
			if !seen {
				return failf(nil, "%s already exists and has not been read in this session. Read it first (Write replaces the whole file), or use Edit for a targeted change", p)
			}
			if cur := stampOf(fi); !prev.equal(cur) {
				return failf(nil, "%s. Read it again before overwriting it", changedNote(p, prev, cur))
			}
			if old, err = s.readRegular(target); err != nil {
				return failf(nil, "%v", pathError(p, err))
			}
			d.Operation, perm, keepMode = "update", fi.Mode().Perm(), true
		case errors.Is(err, fs.ErrNotExist):
			if dir := filepath.Dir(target); dir != "." {
				if err := s.root.MkdirAll(dir, 0o777); err != nil {
					return failf(nil, "creating the directories of %s: %v", p, pathError(show(dir), err))
				}
			}
		default:
			return failf(nil, "%v", pathError(p, err))
		}
		if keepMode && bytes.Equal(old, []byte(in.Content)) {
			d.Unchanged = true
			return Result{Status: StatusOK, Data: d, Text: fmt.Sprintf("%s already has this content (%s, %d bytes); nothing written.", p, plural(d.Lines, "line"), d.Bytes)}
		}
		if err := ctx.Err(); err != nil {
			return failf(nil, "%s not written: %v", p, context.Cause(ctx))
		}
		if err := s.atomicWrite(target, []byte(in.Content), perm, keepMode); err != nil {
			return failf(nil, "writing %s: %v", p, err)
		}
		d.Change = s.diff(p, old, []byte(in.Content), d.Operation == "create")
		var text string
		if d.Operation == "create" {
			text = fmt.Sprintf("Created %s (%s, %d bytes).", p, plural(d.Lines, "line"), d.Bytes)
		} else {
			text = fmt.Sprintf("Updated %s (%s, %d bytes): +%d -%d lines.\n%s", p, plural(d.Lines, "line"), d.Bytes, d.Added, d.Removed, d.diffText())
		}
		return Result{Status: StatusOK, Data: d, Text: text}
	})
}

// atomicWrite replaces rel with data so that a crash leaves either the old
// or the new content, never a mix: write a temporary file in the same
// directory, fsync it, rename it over rel, fsync the directory. With
// keepMode the new file gets exactly perm; otherwise perm is filtered by
// the umask as for any new file. It records what the agent now knows of
// rel.
func (s *Set) atomicWrite(rel string, data []byte, perm fs.FileMode, keepMode bool) (err error) {
	dir := filepath.Dir(rel)
	tmp := filepath.Join(dir, "."+filepath.Base(rel)+".ctxkit-"+rand.Text()[:12]+".tmp")
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return pathError(show(rel), err)
	}
	defer func() {
		if err != nil {
			f.Close()
			s.root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if keepMode {
		if err = f.Chmod(perm); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = s.root.Rename(tmp, rel); err != nil {
		return err
	}
	// The rename is durable once the directory is synced. Some file
	// systems cannot sync a directory; the data itself is safe by now.
	if d, derr := s.root.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	fi, err := s.root.Stat(rel)
	if err != nil {
		return err
	}
	s.remember(rel, stampOf(fi))
	return nil
}

// diff summarizes the change from old to new of file p.
func (s *Set) diff(p string, old, new []byte, create bool) Change {
	oldName := "a/" + p
	if create {
		oldName = "/dev/null"
	}
	out := string(diff.Diff(oldName, old, "b/"+p, new))
	// Drop the "diff a b" line: the ---/+++ header names the file.
	if i := strings.IndexByte(out, '\n'); strings.HasPrefix(out, "diff ") && i >= 0 {
		out = out[i+1:]
	}
	out = strings.ToValidUTF8(strings.TrimSuffix(out, "\n"), "\uFFFD")
	var ds Change
	lines := strings.Split(out, "\n")
	if out == "" {
		lines = nil
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			ds.Added++
		case strings.HasPrefix(l, "-"):
			ds.Removed++
		}
	}
	ds.DiffLines = len(lines)
	ds.Diff = strings.Join(lines[:min(len(lines), s.opts.DiffLines)], "\n")
	return ds
}

// diffText is the diff as the model reads it, with a note when it is cut.
func (ds Change) diffText() string {
	shown := countLines(ds.Diff)
	if shown >= ds.DiffLines {
		return ds.Diff
	}
	return fmt.Sprintf("%s\n(diff cut: showing %d of %d lines)", ds.Diff, shown, ds.DiffLines)
}
