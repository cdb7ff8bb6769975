package assemble

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// mentionRE finds @file mentions: "@path", `@"path with spaces"`,
// "@'path'" and "@path\ with\ escaped\ spaces". The @ must not follow a
// letter, digit or one of _ . - / @, so e-mail addresses and "a@b" are
// not mentions (seed 000 §3.4's lookbehind, for any script).
var mentionRE = regexp.MustCompile(`(?:^|[^\p{L}\p{N}_.\-/@\\])@(?:"([^"\n]+)"|'([^'\n]+)'|((?:\\ |[^\s"'@` + "`" + `])(?:\\ |[^\s"'` + "`" + `])*))`)

// Mentions returns the paths mentioned in text with @, in order of first
// appearance, each once. Unquoted paths lose trailing punctuation
// ("see @main.go." mentions main.go) and their "\ " escapes.
func Mentions(text string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, m := range mentionRE.FindAllStringSubmatch(text, -1) {
		p := m[1] + m[2]
		if m[3] != "" {
			p = strings.ReplaceAll(strings.TrimRight(m[3], ".,;:!?)]}>"), `\ `, " ")
		}
		if p == "" {
			continue
		}
		key := filepath.Clean(p)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, p)
	}
	return out
}

// mentionState is what became of one mention.
type mentionState int

const (
	mentionFile mentionState = iota
	mentionDir
	mentionMissing
	mentionOutside // outside the workspace, or through a symlink that leaves it
	mentionUnreadable
	mentionIgnored // over the limit
)

type mention struct {
	path  string // as written
	rel   string // relative to the workspace, when inside
	state mentionState
	err   error
	// content is the file's text when it goes in the turn (inline).
	content string
	inlined bool
}

// inline reads the mentioned files that fit in budget bytes, in order,
// into the mentions: those go in the turn; the rest are only named. Only
// text goes in (valid UTF-8, no NUL byte).
func inline(ws Workspace, ms []mention, budget int) {
	for i := range ms {
		m := &ms[i]
		if m.state != mentionFile || budget <= 0 {
			continue
		}
		name := filepath.ToSlash(m.rel)
		fi, err := fs.Stat(ws, name)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(budget) {
			continue
		}
		data, err := fs.ReadFile(ws, name)
		if err != nil || len(data) > budget || !utf8.Valid(data) || strings.IndexByte(string(data), 0) >= 0 {
			continue
		}
		m.content, m.inlined = string(data), true
		budget -= len(data)
	}
}

// resolveMentions looks every mentioned path up in the workspace ws (dir
// is its absolute path, for absolute mentions; it is not opened). Only the
// first max distinct paths are looked at. Without a workspace nothing is
// resolved.
func resolveMentions(ws Workspace, dir string, paths []string, max int) ([]mention, error) {
	if len(paths) == 0 || ws == nil {
		return nil, nil
	}
	var out []mention
	seen := make(map[string]bool)
	for _, p := range paths {
		m := mention{path: p}
		rel, inside := relative(dir, p)
		m.rel = rel
		key := rel
		if !inside {
			key = filepath.Clean(p)
		}
		if seen[key] { // "a.go" and "./a.go", or an absolute path to it
			continue
		}
		seen[key] = true
		switch {
		case len(out) >= max:
			m.state = mentionIgnored
		case !inside:
			m.state = mentionOutside
		default:
			name := filepath.ToSlash(rel)
			fi, err := fs.Stat(ws, name)
			switch {
			case err == nil && leaves(ws, name):
				m.state = mentionOutside
			case err == nil && fi.IsDir():
				m.state = mentionDir
			case err == nil:
				m.state = mentionFile
			case leaves(ws, name):
				m.state = mentionOutside
			case errors.Is(err, fs.ErrNotExist):
				m.state = mentionMissing
			default:
				m.state, m.err = mentionUnreadable, err
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// relative returns p relative to the workspace dir and whether it stays
// inside it as written (before symlinks): "../x" and "/etc/passwd" do not.
func relative(dir, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		rel := filepath.Clean(p)
		return rel, filepath.IsLocal(rel)
	}
	if dir != "" {
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			return rel, true
		}
	}
	return filepath.Clean(p), false
}

// leaves reports whether following the symlinks of name (slash-separated,
// relative to the workspace) leads out of the workspace, dangling links to
// the outside included. It needs a workspace that reads links
// (fs.ReadLinkFS, as os.Root's FS); without one the workspace's own
// confinement is all there is.
func leaves(ws Workspace, name string) bool {
	if _, ok := ws.(fs.ReadLinkFS); !ok {
		return false
	}
	cur := ""
	for _, part := range strings.Split(name, "/") {
		next := path.Join(cur, part)
		fi, err := fs.Lstat(ws, next)
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := fs.ReadLink(ws, next)
			if err != nil || path.IsAbs(target) || filepath.IsAbs(target) {
				return true
			}
			if t := path.Join(cur, target); !fs.ValidPath(t) {
				return true
			} else if t != "." && leaves(ws, t) {
				return true
			}
		}
		cur = next
	}
	return false
}

// mentionReminder is the system reminder telling the model about the
// mentioned files: the contents of those inline put in the turn, each in a
// <file> tag; the others named, for the model to read with the Read tool
// (so nothing large enters the context unasked); and notes for the user
// about what was included and what was refused.
func mentionReminder(ms []mention, max int) (string, []string) {
	if len(ms) == 0 {
		return "", nil
	}
	var ok, bad, ignored, files []string
	var notes []string
	for _, m := range ms {
		if m.inlined {
			lines := strings.Count(m.content, "\n")
			if m.content != "" && !strings.HasSuffix(m.content, "\n") {
				lines++
			}
			body := m.content
			if body != "" && !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			files = append(files, fmt.Sprintf("<file path=%q lines=\"%d\">\n%s</file>", filepath.ToSlash(m.rel), lines, body))
			notes = append(notes, fmt.Sprintf("@%s: included (%d lines, %d bytes)", m.path, lines, len(m.content)))
			continue
		}
		name := showPath(m.rel)
		if m.state == mentionOutside || m.state == mentionIgnored {
			name = showPath(m.path)
		}
		switch m.state {
		case mentionFile:
			ok = append(ok, "- "+name)
		case mentionDir:
			ok = append(ok, "- "+name+" (a directory: list it with the LS tool)")
		case mentionMissing:
			bad = append(bad, "- "+name+": does not exist in the workspace.")
			notes = append(notes, fmt.Sprintf("@%s: no such file in the workspace", m.path))
		case mentionOutside:
			bad = append(bad, "- "+name+": outside the workspace (or reached through a symlink that leaves it); it was not read. Do not try to read it.")
			notes = append(notes, fmt.Sprintf("@%s: refused, outside the workspace", m.path))
		case mentionUnreadable:
			reason := m.err
			var pe *fs.PathError
			if errors.As(m.err, &pe) {
				reason = pe.Err
			}
			bad = append(bad, fmt.Sprintf("- %s: cannot be read (%v).", name, reason))
			notes = append(notes, fmt.Sprintf("@%s: %v", m.path, m.err))
		case mentionIgnored:
			ignored = append(ignored, name)
		}
	}
	var sb strings.Builder
	if len(files) > 0 {
		sb.WriteString("The user mentioned these files with @; their contents, as they are now, follow. You need not read them again unless they change.\n")
		sb.WriteString(strings.Join(files, "\n"))
	}
	if len(ok) > 0 {
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("The user mentioned these paths with @. Their contents are not included: read the files you need with the Read tool before you answer.\n")
		sb.WriteString(strings.Join(ok, "\n"))
	}
	if len(bad) > 0 {
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("These @ mentions could not be used:\n")
		sb.WriteString(strings.Join(bad, "\n"))
	}
	if len(ignored) > 0 {
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		fmt.Fprintf(&sb, "Only the first %d mentioned paths are handled; these were ignored: %s", max, strings.Join(ignored, ", "))
		notes = append(notes, fmt.Sprintf("only %d @ mentions are handled; ignored %s", max, strings.Join(ignored, ", ")))
	}
	return sb.String(), notes
}

// showPath quotes a path that has spaces or quotes in it, so the model
// passes it to Read whole; other paths, non-ASCII ones too, go as they are.
func showPath(p string) string {
	if strings.ContainsAny(p, " \t\"'") || !utf8.ValidString(p) {
		return fmt.Sprintf("%q", p)
	}
	return p
}
