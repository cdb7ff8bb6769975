package bench

import (
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
	toolresult.Touches
}

// see records the file calls and read results among msgs.
func (r *recentFiles) see(msgs []conv.Message) {
	for i := range msgs {
		for j := range msgs[i].Blocks {
			r.Observe(i, &msgs[i].Blocks[j])
		}
	}
}

// restore returns the blocks a compaction attaches after its summary, and
// forgets every file it does not attach: the state starts again from the
// files restored, as Claude Code's does.
func (r *recentFiles) restore(counter conv.Counter) []conv.Block {
	var out []conv.Block
	kept := make(map[string]bool)
	used, n := 0, 0
	for _, f := range r.Newest() {
		if f.Content == "" {
			continue
		}
		if n++; n > restoreFiles {
			break
		}
		text := "[" + f.Path + ", read before the summary above, as it stood then]\n" + f.Content
		t := counter.Count(text)
		if t > restoreFileTokens || used+t > restoreBudget {
			out = append(out, conv.NewText(conv.SourceCompactor, "["+f.Path+" was read before the summary above; it is too large to attach again: read it if you need it]"))
			continue
		}
		used += t
		out = append(out, conv.NewText(conv.SourceCompactor, text))
		kept[f.Path] = true
	}
	r.Keep(kept)
	return out
}
