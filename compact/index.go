package compact

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// IndexHeader opens the recall index a summary or a truncation marker
// ends with: one line per tool result the compaction took out of the
// context, newest first, each with the recall id that gives the original
// back. A summary keeps what the work needs; the index keeps the way back
// to everything else, so a compaction loses no more than clearing does.
const IndexHeader = "[Recall index: tool results these turns held, newest first; the recall tool returns any of them by id]"

// indexMinChars: a result this short is not worth an index line (the line
// would cost about what the result does, and the summary sees it whole).
const indexMinChars = 100

// indexMaxTokens bounds one recall index. An index line costs about what
// the placeholder it stands for would have cost; 4,000 tokens is about the
// newest 200 results, a round figure (not fitted): older lines go first.
const indexMaxTokens = 4_000

// indexBudget is the most one recall index may take: indexMaxTokens, and
// never more than half of what all summaries together may take.
func (c *Ladder) indexBudget() int {
	return min(indexMaxTokens, c.configuredSummaryBudget()/2)
}

// indexEntry is one line of a recall index.
type indexEntry struct {
	id, desc string
}

// regionEntries lists the tool results of msgs worth an index line, oldest
// first, with the entries of any recall index the messages' own text
// holds (an earlier summary or marker they replace) before them.
func regionEntries(msgs []conv.Message, extra []conv.Block) []indexEntry {
	calls := make(map[string]toolresult.Call)
	var older, out []indexEntry
	seen := make(map[string]bool)
	add := func(list *[]indexEntry, e indexEntry) {
		if !seen[e.id] {
			seen[e.id] = true
			*list = append(*list, e)
		}
	}
	text := func(b *conv.Block) {
		if b.Type == conv.TypeText || b.Type == conv.TypeSummary {
			for _, e := range parseIndex(b.Text) {
				add(&older, e)
			}
		}
	}
	for i := range extra {
		text(&extra[i])
	}
	for i := range msgs {
		for j := range msgs[i].Blocks {
			b := &msgs[i].Blocks[j]
			switch b.Type {
			case conv.TypeToolUse:
				calls[b.ToolUseID] = toolresult.Classify(b.Name, b.Input)
			case conv.TypeToolResult:
				if desc, ok := describe(b, calls[b.ToolUseID]); ok {
					add(&out, indexEntry{b.ID, desc})
				}
			default:
				text(b)
			}
		}
	}
	return append(older, out...)
}

// describe is the index line's description of result b: its facts in
// brief (toolresult.Facts.Brief); for a placeholder, which no longer holds
// the result, the call's.
func describe(b *conv.Block, call toolresult.Call) (string, bool) {
	if b.Meta.Rung == conv.RungFull && len(b.ResultText()) < indexMinChars {
		return "", false
	}
	f := toolresult.FactsOf(b, call)
	if b.Meta.Rung != conv.RungFull {
		f.HasExit, f.IsErr = false, b.IsError
		if code, ok := toolresult.ExitCode(b); ok {
			f.Exit, f.HasExit = code, true
		}
	}
	return f.Brief(), true
}

// renderIndex writes entries (oldest first) as a recall index, newest
// first, within budget tokens; "" when there are none.
func renderIndex(entries []indexEntry, budget int, counter conv.Counter, tool string) string {
	if len(entries) == 0 || budget <= 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString(IndexHeader)
	if tool != "" {
		sb.WriteString("\n(" + toolresult.Recall("<id>", tool) + " gives one back)")
	}
	used := counter.Count(sb.String()) + 20 // and the closing line
	n := 0
	for i := len(entries) - 1; i >= 0; i-- {
		line := "\nrecall " + entries[i].id + ": " + entries[i].desc
		t := counter.Count(line)
		if used+t > budget {
			break
		}
		used += t
		sb.WriteString(line)
		n++
	}
	if n == 0 {
		return ""
	}
	if left := len(entries) - n; left > 0 {
		fmt.Fprintf(&sb, "\n(%d older results are in the session transcript, not listed here)", left)
	}
	return sb.String()
}

// parseIndex reads the entries of the recall index in text, oldest first.
func parseIndex(text string) []indexEntry {
	_, idx, ok := strings.Cut(text, IndexHeader)
	if !ok {
		return nil
	}
	var rev []indexEntry
	for _, l := range strings.Split(idx, "\n") {
		rest, ok := strings.CutPrefix(l, "recall ")
		if !ok {
			continue
		}
		id, desc, ok := strings.Cut(rest, ": ")
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			continue
		}
		rev = append(rev, indexEntry{id, desc})
	}
	out := make([]indexEntry, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// WithoutIndex returns a summary's or marker's text without its recall
// index: what a summarizer wrote (the ladder writes the index itself).
func WithoutIndex(text string) string {
	if i := strings.Index(text, "\n\n"+IndexHeader); i >= 0 {
		return text[:i]
	}
	if i := strings.Index(text, IndexHeader); i >= 0 {
		return strings.TrimRight(text[:i], "\n")
	}
	return text
}

// appendIndex adds the recall index of entries to text, if any.
func (c *Ladder) appendIndex(text string, entries []indexEntry, budget int) string {
	if idx := renderIndex(entries, budget, c.cfg.Counter, c.cfg.RecallTool); idx != "" {
		return text + "\n\n" + idx
	}
	return text
}

// dedupe keeps the last entry of each id, in order.
func dedupe(entries []indexEntry) []indexEntry {
	last := make(map[string]int, len(entries))
	for i, e := range entries {
		last[e.id] = i
	}
	out := entries[:0:0]
	for i, e := range entries {
		if last[e.id] == i {
			out = append(out, e)
		}
	}
	return out
}
