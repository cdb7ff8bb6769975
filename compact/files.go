package compact

import (
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// A compaction carries the newest read of each file the session's calls
// touched last, verbatim, out of the floor the cost model leaves it (see
// pinWithFiles): what the agent read of the files it is working on is
// what it needs next, and a summary keeps only a line of it. Claude Code
// does the like: after a compaction it reads the five files touched last
// again (compact.ts). A read is carried only while it is current — no
// later edit or write of the file — and as the text it holds now (whole,
// or rung 1's form); its original stays recallable by the id the block
// names.

// fileHeader opens a carried file, fileHeaderMid parts its path from the
// recall id, and fileHeaderEnd closes its first line.
const (
	fileHeader    = "[File "
	fileHeaderMid = ", as read before the summary — recall "
	fileHeaderEnd = "]"
)

// carriedFile is a read a compaction may carry.
type carriedFile struct {
	path    string
	id      string // the recall id of the original read
	msg     int    // the message holding it
	content string
	tokens  int
	// own is the id of the block that carries the file already, when its
	// newest read is an earlier compaction's: that block is carried again
	// as it is.
	own string
}

// fileText is a carried file's block text. Its first line names the path
// as it is, or quoted as Go quotes a string when the path holds a newline,
// a double quote or fileHeaderMid, so that parseFile reads any path back.
func fileText(f carriedFile) string {
	path := f.path
	if strings.ContainsAny(path, "\n\"") || strings.Contains(path, fileHeaderMid) {
		path = strconv.Quote(path)
	}
	return fileHeader + path + fileHeaderMid + f.id + fileHeaderEnd + "\n" + f.content
}

// carriedOf reads the file block b carries, when it is one a compaction
// wrote: its path, the recall id of the read and the content.
func carriedOf(b *conv.Block) (path, id, content string, ok bool) {
	if b.Type != conv.TypeText || b.Meta.Source != conv.SourceCompactor {
		return "", "", "", false
	}
	return parseFile(b.Text)
}

// parseFile reads a carried file's path, recall id and content off text.
func parseFile(text string) (path, id, content string, ok bool) {
	rest, ok := strings.CutPrefix(text, fileHeader)
	if !ok {
		return "", "", "", false
	}
	first, content, _ := strings.Cut(rest, "\n")
	var tail string
	if strings.HasPrefix(first, `"`) {
		quoted, err := strconv.QuotedPrefix(first)
		if err != nil {
			return "", "", "", false
		}
		path, _ = strconv.Unquote(quoted) // QuotedPrefix checked it
		tail, ok = strings.CutPrefix(first[len(quoted):], fileHeaderMid)
	} else {
		path, tail, ok = strings.Cut(first, fileHeaderMid)
	}
	if !ok {
		return "", "", "", false
	}
	id, ok = strings.CutSuffix(tail, fileHeaderEnd)
	return path, id, content, ok && id != "" && path != ""
}

// recentReads returns what a compaction may carry of the files touched
// last, newest first: the newest current read of each, in a message
// before end, as long as they fit budget tokens (a read too large for
// what is left is passed over).
func (c *Ladder) recentReads(cv *conv.Conversation, end, budget int) []carriedFile {
	if budget <= 0 {
		return nil
	}
	var t toolresult.Touches
	type carrier struct {
		block, read string
		msg         int
	}
	own := make(map[string]carrier) // path → the block carrying it already
	for i := range cv.Messages {
		for j := range cv.Messages[i].Blocks {
			b := &cv.Messages[i].Blocks[j]
			if path, id, content, ok := carriedOf(b); ok {
				f := t.Touch(path)
				f.Content, f.Read, f.Msg, f.Current = content, id, i, true
				own[path] = carrier{b.ID, id, i}
				continue
			}
			t.Observe(i, b)
		}
	}
	var out []carriedFile
	used := 0
	for _, f := range t.Newest() {
		if !f.Current || f.Msg < 0 || f.Msg >= end || f.Content == "" {
			continue
		}
		cf := carriedFile{path: f.Path, id: f.Read, msg: f.Msg, content: f.Content}
		if o, ok := own[f.Path]; ok && o.msg == f.Msg && o.read == f.Read {
			cf.own = o.block
		}
		b := conv.NewText(conv.SourceCompactor, fileText(cf))
		cf.tokens = conv.BlockTokens(&b, c.cfg.Counter)
		if used+cf.tokens > budget {
			continue
		}
		used += cf.tokens
		out = append(out, cf)
	}
	return out
}

// fileBlocks are the new blocks carrying files whose read lies in [from,
// to), the recall ids of every file carried there, and the blocks
// already carrying a file that stay as they are.
func fileBlocks(files []carriedFile, from, to int) (blocks []conv.Block, ids, own map[string]bool) {
	ids, own = make(map[string]bool), make(map[string]bool)
	for _, f := range files {
		if f.msg < from || f.msg >= to {
			continue
		}
		ids[f.id] = true
		if f.own != "" {
			own[f.own] = true
			continue
		}
		blocks = append(blocks, conv.NewText(conv.SourceCompactor, fileText(f)))
	}
	return blocks, ids, own
}

// filesTokens is what files take.
func filesTokens(files []carriedFile) int {
	n := 0
	for _, f := range files {
		n += f.tokens
	}
	return n
}

// pinWithFiles picks the files a compaction planned now carries and
// where its pinned tail starts. The files come from the history before
// the last step. Their share of the floor comes first out of the tail's
// budget beyond the last step, then, when the cost model sized the floor,
// out of the summaries' budget beyond the two smallest summaries a merge
// keeps (the summaries this compaction merges are then held to what is
// left); the tail gets what they leave. A file the tail then holds
// anyway is not carried, and its share goes back to the tail. A manual
// compaction carries none.
func (c *Ladder) pinWithFiles(cv *conv.Conversation, manual bool) (int, []carriedFile) {
	if manual {
		// The user asked for a smaller context: a manual compaction
		// keeps only the last step, and carries no file either.
		return c.pinStart(cv, c.pinLimit(), manual), nil
	}
	last := c.pinStart(cv, 0, false)
	tail := 0
	for i := last; i < len(cv.Messages); i++ {
		tail += conv.MessageTokens(&cv.Messages[i], c.cfg.Counter)
	}
	fromTail, fromSummaries := max(c.pinLimit()-tail, 0), 0
	if c.keep.sized {
		fromSummaries = max(c.keep.sizedSummary-2*c.cfg.SummaryMin, 0)
	}
	files := c.recentReads(cv, last, fromTail+fromSummaries)
	pin := c.pinStart(cv, max(c.pinLimit()-filesTokens(files), 0), manual)
	var kept []carriedFile // a new slice: files stays as it was
	for _, f := range files {
		if f.msg < pin {
			kept = append(kept, f)
		}
	}
	if len(kept) < len(files) {
		files = kept
		pin = c.pinStart(cv, max(c.pinLimit()-filesTokens(files), 0), manual)
	}
	if c.keep.sized {
		c.keep.summary = c.keep.sizedSummary - max(filesTokens(files)-fromTail, 0)
	}
	return pin, files
}
