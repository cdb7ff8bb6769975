package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// FileStamp is what the agent last saw of a file it read or wrote: its
// modification time and size (seed 000 §3.6). Stamps and RestoreStamps
// carry them over to a resumed session, so a file changed in between is
// still noticed.
type FileStamp struct {
	Path  string    `json:"path"` // workspace-relative, slash separated
	Mtime time.Time `json:"mtime"`
	Size  int64     `json:"size"`
	// Noticed is the change Changed last announced, if any (Size -1: the
	// file was gone).
	Noticed *FileStamp `json:"noticed,omitempty"`
}

// Stamps returns what the agent last saw of every file it read or wrote,
// by path.
func (s *Set) Stamps() []FileStamp {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FileStamp, 0, len(s.seen))
	for p, st := range s.seen {
		f := FileStamp{Path: p, Mtime: st.mtime.UTC(), Size: st.size}
		if n, ok := s.noticed[p]; ok {
			f.Noticed = &FileStamp{Mtime: n.mtime.UTC(), Size: n.size}
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b FileStamp) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// RestoreStamps takes the stamps of an earlier run of the session; a file
// seen in this run already keeps what this run saw.
func (s *Set) RestoreStamps(stamps []FileStamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range stamps {
		if _, ok := s.seen[f.Path]; ok || !fs.ValidPath(f.Path) {
			continue
		}
		s.seen[f.Path] = stamp{mtime: f.Mtime, size: f.Size}
		if f.Noticed != nil {
			if s.noticed == nil {
				s.noticed = map[string]stamp{}
			}
			s.noticed[f.Path] = stamp{mtime: f.Noticed.Mtime, size: f.Noticed.Size}
		}
	}
}

// MaxChangedNotes bounds the files one Changed call describes; the rest
// are counted.
const MaxChangedNotes = 10

// Changed describes the files the agent read or wrote that have changed
// (or gone) since, each once per change: the notice the next turn
// carries, so the model does not go on from stale content it will not
// read again. It returns "" when nothing changed.
func (s *Set) Changed() string {
	s.mu.Lock()
	paths := make([]string, 0, len(s.seen))
	for p := range s.seen {
		paths = append(paths, p)
	}
	s.mu.Unlock()
	slices.Sort(paths)
	var notes []string
	more := 0
	for _, p := range paths {
		prev, ok := s.lastSeen(p)
		if !ok {
			continue
		}
		var cur stamp
		fi, err := s.root.Stat(p)
		switch {
		case err == nil:
			cur = stampOf(fi)
		case errors.Is(err, fs.ErrNotExist):
			cur = stamp{size: -1}
		default:
			continue
		}
		if prev.equal(cur) || !s.notice(p, cur) {
			continue
		}
		if len(notes) == MaxChangedNotes {
			more++
			continue
		}
		if cur.size < 0 {
			notes = append(notes, "- "+p+": deleted or moved")
		} else {
			notes = append(notes, fmt.Sprintf("- %s: modified %s, %d bytes (was %d)", p, cur.mtime.UTC().Format(time.RFC3339), cur.size, prev.size))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	text := "These files changed since you last read or wrote them (by the user, a command or another program); what you saw of them is stale, so read them again before you rely on it:\n"
	for _, n := range notes {
		text += n + "\n"
	}
	if more > 0 {
		text += fmt.Sprintf("(and %d more files)\n", more)
	}
	return text[:len(text)-1]
}

// notice records that the change of p to cur has been announced, and
// reports whether it had not been before.
func (s *Set) notice(p string, cur stamp) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noticed == nil {
		s.noticed = map[string]stamp{}
	}
	if n, ok := s.noticed[p]; ok && n.equal(cur) {
		return false
	}
	s.noticed[p] = cur
	return true
}
