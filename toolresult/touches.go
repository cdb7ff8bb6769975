package toolresult

import (
	"encoding/json"
	"slices"

	"github.com/ctxkit/ctxkit/conv"
)

// Touches follows which files a conversation's calls touched, in order,
// and what was last read or written of each: what a compaction carries
// of the files the agent is working on (package compact), and what Claude
// Code's model reads again after one (package bench). Feed it the blocks
// in conversation order; the zero value is ready.
type Touches struct {
	seq     int
	files   map[string]*Touched
	pending map[string]string // tool_use_id → path of a read awaiting its result
}

// Touched is what the calls did to one file.
type Touched struct {
	Path string
	At   int // the order of the last call that touched it, from 1
	// Content is the newest text known of the file: the newest read's
	// result or the newest write's content, whichever came last.
	Content string
	// Read is the newest successful read's result and Msg the message
	// holding it ("" and -1 when none). Current is true while no edit or
	// write came after it: its text is the file as it is.
	Read    string
	Msg     int
	Current bool
}

// Observe takes the block at message msg: a call that reads, edits or
// writes a file touches it; a read's result is recorded for its file.
func (t *Touches) Observe(msg int, b *conv.Block) {
	switch b.Type {
	case conv.TypeToolUse:
		call := Classify(b.Name, b.Input)
		if call.Path == "" {
			return
		}
		switch call.Kind {
		case KindRead:
			t.Touch(call.Path)
			if t.pending == nil {
				t.pending = make(map[string]string)
			}
			t.pending[b.ToolUseID] = call.Path
		case KindEdit:
			t.Touch(call.Path).Current = false
		case KindWrite:
			f := t.Touch(call.Path)
			f.Current = false
			if c, ok := writtenContent(b.Input); ok {
				f.Content = c
			}
		}
	case conv.TypeToolResult:
		path, ok := t.pending[b.ToolUseID]
		if !ok {
			return
		}
		delete(t.pending, b.ToolUseID)
		f := t.files[path]
		if b.Meta.Rung > conv.RungCompressed {
			// Cleared or summarized: the read no longer holds the file.
			f.Read, f.Msg, f.Current = "", -1, false
			return
		}
		if b.IsError {
			return
		}
		f.Content, f.Read, f.Msg, f.Current = b.ResultText(), b.ID, msg, true
	}
}

// Touch records a touch of path now and returns its record, for a caller
// that knows of one the calls do not show.
func (t *Touches) Touch(path string) *Touched {
	if t.files == nil {
		t.files = make(map[string]*Touched)
	}
	t.seq++
	f := t.files[path]
	if f == nil {
		f = &Touched{Path: path, Msg: -1}
		t.files[path] = f
	}
	f.At = t.seq
	return f
}

// Newest returns the files touched, the most recently touched first.
func (t *Touches) Newest() []*Touched {
	out := make([]*Touched, 0, len(t.files))
	for _, f := range t.files {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *Touched) int { return b.At - a.At })
	return out
}

// Keep forgets every file but those keep names, and the reads still
// awaiting their results.
func (t *Touches) Keep(keep map[string]bool) {
	for p := range t.files {
		if !keep[p] {
			delete(t.files, p)
		}
	}
	clear(t.pending)
}

// writtenContent is the text a write call puts in its file, when its input
// names it.
func writtenContent(in json.RawMessage) (string, bool) {
	var v map[string]any
	if json.Unmarshal(in, &v) != nil {
		return "", false
	}
	_, s, ok := stringField(v, "content", "file_text", "text")
	return s, ok
}
