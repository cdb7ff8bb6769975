package compact

import (
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Bounds on critical content carried verbatim.
const (
	maxCriticalUser  = 2000 // characters of one constraint message
	maxCriticalError = 600  // characters of one error result
	maxCriticalErrs  = 5    // most recent error results carried
)

// criticalItem is content that must survive a compaction verbatim (seed
// 002 SmartCompactor): a user message stating a constraint, or an error
// result.
type criticalItem struct {
	turn  int
	label string // "user" or the tool call
	text  string // verbatim, bounded
	probe string // what must appear in a summary for the item to count as carried
	err   bool
}

// critical collects the region's constraint messages (all) and error
// results (the most recent few).
func critical(region []conv.Message) []criticalItem {
	calls := make(map[string]*conv.Block)
	var users, errs []criticalItem
	for i := range region {
		m := &region[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			switch {
			case b.Type == conv.TypeToolUse:
				calls[b.ToolUseID] = b
			case b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser && summarize.IsConstraint(b.Text):
				t := textfmt.ClipMiddle(strings.TrimSpace(b.Text), maxCriticalUser)
				users = append(users, criticalItem{turn: m.Turn, label: "user", text: t, probe: probe(firstLine(t), 100)})
			case b.Type == conv.TypeToolResult && summarize.IsErrorResult(b):
				label := b.Name
				if call := calls[b.ToolUseID]; call != nil {
					label = call.Name + " " + textfmt.Prefix(textfmt.FirstLine(inputHint(call)), 80)
				}
				lines := summarize.ErrorLines(b.ResultText(), 1)
				if len(lines) == 0 {
					continue
				}
				errs = append(errs, criticalItem{turn: m.Turn, label: strings.TrimSpace(label), text: textfmt.ClipMiddle(strings.TrimSpace(b.ResultText()), maxCriticalError), probe: probe(lines[0], 80), err: true})
			}
		}
	}
	if len(errs) > maxCriticalErrs {
		errs = errs[len(errs)-maxCriticalErrs:]
	}
	return append(users, errs...)
}

func inputHint(call *conv.Block) string {
	s := string(call.Input)
	for _, k := range []string{`"command":"`, `"command": "`, `"file_path":"`, `"file_path": "`, `"path":"`, `"path": "`} {
		if i := strings.Index(s, k); i >= 0 {
			rest := s[i+len(k):]
			if j := strings.Index(rest, `"`); j >= 0 {
				return rest[:j]
			}
		}
	}
	return ""
}

// withCritical appends, under "## Carried verbatim", every critical item
// the summary does not already contain.
func withCritical(text string, items []criticalItem, _ conv.Counter) string {
	norm := normalize(text)
	var sb strings.Builder
	for _, it := range items {
		if it.probe == "" || strings.Contains(norm, it.probe) {
			continue
		}
		if it.err {
			fmt.Fprintf(&sb, "- turn %d, %s (error):\n```\n%s\n```\n", it.turn, it.label, strings.ReplaceAll(it.text, "```", "'''"))
		} else {
			fmt.Fprintf(&sb, "- turn %d, user: “%s”\n", it.turn, it.text)
		}
	}
	if sb.Len() == 0 {
		return text
	}
	return strings.TrimSpace(text) + "\n\n## " + summarize.SecCarried + "\n" + strings.TrimSpace(sb.String())
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return s
}

func probe(s string, n int) string { return textfmt.Prefix(normalize(s), n) }

// normalize collapses whitespace, so that a quote rewrapped by a
// summarizer still matches.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }
