package bench

import (
	"encoding/json"
	"slices"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Claude Code's post-compaction file restoration (compact.ts, as published
// in March 2026 and described in its docs' "What survives compaction"):
// after an autocompact it attaches again the files read, edited or written
// most recently, newest first — at most restoreFiles of them, each at most
// restoreFileTokens (a larger one comes back as its path only, with a note
// to read it again), restoreBudget in all — read afresh from disk. The
// replay has no disk: a file's content is what the recording last showed of
// it (its newest read's result, or what a write put there), which is what
// the model saw; an edit moves the file up the list and keeps that content.
const (
	restoreFiles      = 5
	restoreFileTokens = 5_000
	restoreBudget     = 50_000
)

// recentFiles is the file state a Claude Code session keeps between
// compactions: the files its calls touched, in order of access.
type recentFiles struct {
	seq     int
	files   map[string]*recentFile
	pending map[string]string // tool_use_id → path of a read awaiting its result
}

type recentFile struct {
	path    string
	content string
	at      int // access order
}

// see records the file calls and read results among msgs.
func (r *recentFiles) see(msgs []conv.Message) {
	if r.files == nil {
		r.files = make(map[string]*recentFile)
		r.pending = make(map[string]string)
	}
	for i := range msgs {
		for j := range msgs[i].Blocks {
			b := &msgs[i].Blocks[j]
			switch b.Type {
			case conv.TypeToolUse:
				call := toolresult.Classify(b.Name, b.Input)
				if call.Path == "" {
					continue
				}
				switch call.Kind {
				case toolresult.KindRead:
					r.pending[b.ToolUseID] = call.Path
					r.touch(call.Path)
				case toolresult.KindEdit:
					r.touch(call.Path)
				case toolresult.KindWrite:
					f := r.touch(call.Path)
					if c, ok := writtenContent(b.Input); ok {
						f.content = c
					}
				}
			case conv.TypeToolResult:
				p, ok := r.pending[b.ToolUseID]
				if !ok {
					continue
				}
				delete(r.pending, b.ToolUseID)
				if f := r.files[p]; f != nil && !b.IsError {
					f.content = b.ResultText()
				}
			}
		}
	}
}

func (r *recentFiles) touch(path string) *recentFile {
	r.seq++
	f := r.files[path]
	if f == nil {
		f = &recentFile{path: path}
		r.files[path] = f
	}
	f.at = r.seq
	return f
}

// writtenContent is the text a write call puts in its file, when its input
// names it.
func writtenContent(in json.RawMessage) (string, bool) {
	var v map[string]any
	if json.Unmarshal(in, &v) != nil {
		return "", false
	}
	for _, k := range []string{"content", "file_text"} {
		if s, ok := v[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

// restore returns the blocks a compaction attaches after its summary, and
// forgets every file it does not attach: the state starts again from the
// files restored, as Claude Code's does.
func (r *recentFiles) restore(counter conv.Counter) []conv.Block {
	var list []*recentFile
	for _, f := range r.files {
		if f.content != "" {
			list = append(list, f)
		}
	}
	slices.SortFunc(list, func(a, b *recentFile) int { return b.at - a.at })
	if len(list) > restoreFiles {
		list = list[:restoreFiles]
	}
	var out []conv.Block
	kept := make(map[string]*recentFile)
	used := 0
	for _, f := range list {
		text := "[" + f.path + ", read before the summary above, as it stood then]\n" + f.content
		n := counter.Count(text)
		if n > restoreFileTokens || used+n > restoreBudget {
			out = append(out, conv.NewText(conv.SourceCompactor, "["+f.path+" was read before the summary above; it is too large to attach again: read it if you need it]"))
			continue
		}
		used += n
		out = append(out, conv.NewText(conv.SourceCompactor, text))
		kept[f.path] = f
	}
	r.files = kept
	r.pending = make(map[string]string)
	return out
}
