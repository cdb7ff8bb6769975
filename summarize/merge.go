package summarize

import (
	"context"
	"fmt"
	"strings"
)

// Merge implements Merger with MergeText.
func (e *Extractive) Merge(ctx context.Context, parts []Part, in MergeInput) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	text := MergeText(parts, in)
	if text == "" {
		return Output{}, ErrEmpty
	}
	return Output{Text: text, Kind: "extractive", Template: in.Template.orDefault()}, nil
}

// sectionPrio ranks sections for trimming a merge: higher is kept longer.
var sectionPrio = map[string]int{
	SecArtifacts: 100, SecTask: 95, SecCarried: 92, SecUser: 85, SecProgress: 80,
	SecErrors: 72, SecCurrent: 70, SecDecisions: 30, SecCommands: 20,
}

// MergeText merges summaries without a model: section by section (by their
// "## " headings), oldest part first, dropping repeated lines; the
// artifact trail keeps one line per file, combining what each part says
// about it. Current work and the progress section come from the newest part
// that has them, since they describe a moment. When the result exceeds the
// target, the least important lines (commands, decisions, older errors)
// go first; the artifact trail and the task are always kept. Text before
// the first heading is kept as a section of its own.
func MergeText(parts []Part, in MergeInput) string {
	d := newDraft(in.Counter)
	var order []string
	seen := make(map[string]bool)
	files := make(map[string]int) // path → index in d.lines
	latest := map[string]int{}    // section → part index that last had it
	secs := make([][]section, len(parts))
	for i, p := range parts {
		secs[i] = parseSections(p.Text)
		for _, s := range secs[i] {
			latest[s.title] = i
		}
	}
	for i, p := range parts {
		for _, s := range secs[i] {
			if !seen[s.title] {
				seen[s.title] = true
				order = append(order, s.title)
			}
			if (s.title == SecCurrent || s.title == SecProgress) && latest[s.title] != i {
				continue
			}
			prio, ok := sectionPrio[s.title]
			if !ok {
				prio = 60
			}
			for _, l := range s.lines {
				if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "- (") && strings.Contains(l, "left out for space") {
					continue
				}
				if s.title == SecArtifacts {
					if path, ok := artifactPath(l); ok {
						if j, dup := files[path]; dup {
							if !strings.Contains(d.lines[j].text, strings.TrimSpace(l)) {
								d.lines[j].text += fmt.Sprintf("; then (turns %d-%d) %s", p.Span.First, p.Span.Last, strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- `"+path+"`")), "— "))
								d.lines[j].tokens = count(d.counter, d.lines[j].text) + 1
							}
							continue
						}
						files[path] = len(d.lines)
					}
				}
				if dupLine(d, s.title, l) {
					continue
				}
				d.add(s.title, prio, l)
			}
		}
	}
	return d.render(in.TargetTokens, order)
}

func dupLine(d *draft, sec, l string) bool {
	for _, x := range d.lines {
		if x.sec == sec && x.text == l {
			return true
		}
	}
	return false
}

// artifactPath reads the path of an artifact-trail line ("- `path` — …").
func artifactPath(l string) (string, bool) {
	l = strings.TrimSpace(l)
	if !strings.HasPrefix(l, "- `") {
		return "", false
	}
	rest := l[3:]
	i := strings.IndexByte(rest, '`')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

type section struct {
	title string
	lines []string
}

// parseSections splits a summary at its Markdown headings (any level).
// Text before the first heading becomes an "Earlier summary" section.
func parseSections(text string) []section {
	var out []section
	cur := section{title: "Earlier summary"}
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			title := strings.TrimSpace(strings.TrimLeft(t, "#"))
			if title != "" {
				if len(cur.lines) > 0 || cur.title != "Earlier summary" {
					out = append(out, cur)
				}
				cur = section{title: normalizeTitle(title)}
				continue
			}
		}
		cur.lines = append(cur.lines, l)
	}
	if len(cur.lines) > 0 || cur.title != "Earlier summary" {
		out = append(out, cur)
	}
	return out
}

// normalizeTitle maps "3. Artifact trail" or "Artifact Trail" onto the
// canonical title so parts from different writers line up.
func normalizeTitle(t string) string {
	t = strings.TrimSpace(strings.TrimLeft(t, "0123456789. "))
	for _, c := range []string{SecTask, SecUser, SecProgress, SecDecisions, SecArtifacts, SecErrors, SecCurrent, SecCommands, SecCarried} {
		if strings.EqualFold(t, c) {
			return c
		}
	}
	return t
}
