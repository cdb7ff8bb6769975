package toolresult

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/textfmt"
)

// Plain-text results, as imported from other agents' sessions: the
// compressors work on lines, keep the wrappers those agents put around
// output (mini-swe-agent's <returncode>, SWE-agent's and OpenHands' status
// footers) and compress what is inside.

var (
	returnCodeRe = regexp.MustCompile(`^<returncode>(-?\d+)</returncode>$`)
	footerRe     = regexp.MustCompile(`^(\(Open file: .*\)|\(Current directory: .*\)|bash-\$|` +
		`\[The command completed with exit code -?\d+\.\]|\[Command finished with exit code -?\d+\]|\[exit code -?\d+\]|` +
		`\[Current working directory: .*\]|\[Python interpreter: .*\]|End of matches for .*|` +
		`\[The command has no new output after .*\]|\[Command timed out.*\])\s*$`)
	columnsRe = regexp.MustCompile(`\t+| {2,}`)
)

// wrapped is a result split into the lines kept verbatim around it and
// the body that gets compressed.
type wrapped struct {
	header []string
	open   string // "<output>" when the body was wrapped in it
	body   []string
	close  string
	footer []string
}

func unwrap(text string) wrapped {
	var w wrapped
	lines := splitLines(text)
	if len(lines) > 0 && returnCodeRe.MatchString(strings.TrimSpace(lines[0])) {
		w.header, lines = lines[:1], lines[1:]
	}
	// Peel trailing status lines (and the blank lines among them).
	end := len(lines)
	for i := len(lines) - 1; i >= 0 && len(lines)-i <= 8; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if !footerRe.MatchString(l) {
			break
		}
		end = i
	}
	w.footer = lines[end:]
	lines = lines[:end]
	if len(lines) >= 2 && strings.TrimSpace(lines[0]) == "<output>" && strings.TrimSpace(lines[len(lines)-1]) == "</output>" {
		w.open, w.close = lines[0], lines[len(lines)-1]
		lines = lines[1 : len(lines)-1]
	}
	w.body = lines
	return w
}

func (w wrapped) join(body []string) string {
	out := append([]string(nil), w.header...)
	if w.open != "" {
		out = append(out, w.open)
	}
	out = append(out, body...)
	if w.close != "" {
		out = append(out, w.close)
	}
	out = append(out, w.footer...)
	return strings.Join(out, "\n")
}

// splitLines splits on newlines, dropping one trailing newline.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// cutLine shortens a line to max bytes (on a rune boundary) and says how
// much it dropped.
func cutLine(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [+%s chars]", textfmt.Thousands(len(s)-cut))
}

// cut shortens a long line and records in nt that lines were cut.
func (cp *Compressor) cut(l string, nt *note) string {
	c := cutLine(l, cp.lim.LineChars)
	if len(c) != len(l) {
		nt.addOnce(fmt.Sprintf("lines over %s chars cut", textfmt.Thousands(cp.lim.LineChars)))
	}
	return c
}

// head keeps up to n lines from the front within budget bytes, cutting
// long lines.
func (cp *Compressor) head(lines []string, n, budget int, nt *note) []string {
	var out []string
	size := 0
	for _, l := range lines {
		if len(out) == n {
			break
		}
		l = cp.cut(l, nt)
		if size+len(l)+1 > budget && len(out) > 0 {
			break
		}
		out = append(out, l)
		size += len(l) + 1
	}
	return out
}

// tail keeps up to n lines from the back within budget bytes.
func (cp *Compressor) tail(lines []string, n, budget int, nt *note) []string {
	var out []string
	size := 0
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		l := cp.cut(lines[i], nt)
		if size+len(l)+1 > budget && len(out) > 0 {
			break
		}
		out = append(out, l)
		size += len(l) + 1
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// plain compresses a plain-text result of a call of kind c.Kind.
func (cp *Compressor) plain(text string, c Call, isErr bool, n *note) string {
	w := unwrap(text)
	var body []string
	switch kind := c.Kind; {
	case isErr && kind != KindBash:
		body = cp.headTail(w.body, n)
	case kind == KindRead:
		body = cp.readBody(w.body, c, n)
	case kind == KindLS:
		body = cp.listBody(w.body, c, n)
	case kind == KindGrep:
		body = cp.grepBody(w.body, c, n)
	case kind == KindEdit || kind == KindWrite:
		body = cp.diffBody(w.body, c, n)
	default:
		body = cp.headTail(w.body, n)
	}
	return w.join(body)
}

// readBody keeps the first ReadLines lines of a file.
func (cp *Compressor) readBody(lines []string, c Call, n *note) []string {
	kept := cp.head(lines, cp.lim.ReadLines, cp.lim.MaxChars, n)
	if rest := len(lines) - len(kept); rest > 0 {
		where := ""
		if c.Path != "" {
			where = " of " + c.Path
		}
		n.add(fmt.Sprintf("… %s more lines%s not shown (%s total)", textfmt.Thousands(rest), where, textfmt.Thousands(len(lines))))
	}
	return appendNote(kept, n)
}

// listBody keeps the first LSEntries entries of a listing and the true
// total.
func (cp *Compressor) listBody(lines []string, c Call, n *note) []string {
	var header, entries []string
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case i == 0 && (strings.HasPrefix(t, "Found ") || strings.HasPrefix(t, "total ") || strings.HasSuffix(t, ":")):
			header = append(header, l)
		default:
			entries = append(entries, l)
		}
	}
	// ls without a terminal prints columns: one line, many entries.
	if len(entries) > 0 && len(entries) <= 3 && !strings.HasPrefix(entries[0], "-") && !strings.HasPrefix(entries[0], "d") {
		var split []string
		for _, e := range entries {
			for _, f := range columnsRe.Split(strings.TrimSpace(e), -1) {
				if f != "" {
					split = append(split, f)
				}
			}
		}
		if len(split) > cp.lim.LSEntries {
			entries = split
		}
	}
	kept := cp.head(entries, cp.lim.LSEntries, cp.lim.MaxChars, n)
	if rest := len(entries) - len(kept); rest > 0 {
		where := ""
		if c.Path != "" && c.Path != "." {
			where = " in " + c.Path
		}
		n.add(fmt.Sprintf("… %s more entries%s (%s total)", textfmt.Thousands(rest), where, textfmt.Thousands(len(entries))))
	}
	return appendNote(append(header, kept...), n)
}

// grepBody keeps the first GrepMatches matches of a search, the true
// total and the pattern.
func (cp *Compressor) grepBody(lines []string, c Call, n *note) []string {
	var header, matches []string
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || t == "--":
		case i == 0 && (strings.HasPrefix(t, "Found ") || strings.HasPrefix(t, "[Found ")):
			header = append(header, l)
		default:
			matches = append(matches, l)
		}
	}
	kept := cp.head(matches, cp.lim.GrepMatches, cp.lim.MaxChars, n)
	if rest := len(matches) - len(kept); rest > 0 {
		what := ""
		if c.Pattern != "" {
			what = " for " + quote(c.Pattern, 80)
		}
		n.add(fmt.Sprintf("… %s more matches%s (%s total)", textfmt.Thousands(rest), what, textfmt.Thousands(len(matches))))
	}
	return appendNote(append(header, kept...), n)
}

// diffBody keeps an edit's or write's status line and the first DiffLines
// lines of the snippet or diff after it.
func (cp *Compressor) diffBody(lines []string, c Call, n *note) []string {
	if len(lines) == 0 {
		return nil
	}
	kept := []string{cp.cut(lines[0], n)}
	kept = append(kept, cp.head(lines[1:], cp.lim.DiffLines, cp.lim.MaxChars, n)...)
	if rest := len(lines) - len(kept); rest > 0 {
		where := ""
		if c.Path != "" {
			where = " for " + c.Path
		}
		n.add(fmt.Sprintf("… %s more lines of the result%s (%s total)", textfmt.Thousands(rest), where, textfmt.Thousands(len(lines))))
	}
	return appendNote(kept, n)
}

// headTail keeps the head and the tail of output with a note between
// them: a command's output ends with what matters most (the error, the
// test summary), so the tail is never dropped.
func (cp *Compressor) headTail(lines []string, n *note) []string {
	budget := cp.lim.MaxChars / 2
	h := cp.head(lines, cp.lim.HeadLines, budget, n)
	if len(h) == len(lines) {
		return appendNote(h, n)
	}
	rest := lines[len(h):]
	t := cp.tail(rest, cp.lim.TailLines, budget, n)
	if omitted := len(rest) - len(t); omitted > 0 {
		n.add(fmt.Sprintf("… %s lines omitted (%s total)", textfmt.Thousands(omitted), textfmt.Thousands(len(lines))))
	}
	out := appendNote(append([]string(nil), h...), n)
	return append(out, t...)
}

func cutAny(lines []string, max int) bool {
	for _, l := range lines {
		if len(l) > max {
			return true
		}
	}
	return false
}

// appendNote ends lines with the note, if there is one, and empties it.
func appendNote(lines []string, n *note) []string {
	if n.empty() {
		return lines
	}
	lines = append(lines, n.line())
	n.parts = nil
	return lines
}

// quote shows s in double quotes on one line, cut to max runes.
func quote(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return `"` + s + `"`
}
