package tools

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
)

// alwaysSkipped reports the version-control folders no tool looks into.
func alwaysSkipped(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", ".jj":
		return true
	}
	return false
}

// ignorer decides which workspace paths are ignored, the way git does:
// .git/info/exclude, then the .gitignore of the workspace root and of every
// folder below it, later and deeper patterns winning, "!" re-including.
// It reads .gitignore files lazily through the workspace root and caches
// them for the life of one call. Global excludes (core.excludesFile) and
// ignore files above the workspace are not consulted.
type ignorer struct {
	fsys  fs.FS
	rules map[string][]ignoreRule // folder (slash path, "." for the root) → its rules
	extra []ignoreRule            // extra patterns, relative to extraBase
	base  string
}

type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

func newIgnorer(fsys fs.FS) *ignorer {
	return &ignorer{fsys: fsys, rules: map[string][]ignoreRule{}}
}

// addPatterns adds patterns in .gitignore syntax that apply below folder
// base, with precedence over every ignore file.
func (ig *ignorer) addPatterns(base string, patterns []string) {
	ig.base = base
	for _, p := range patterns {
		if r, ok := parseIgnoreLine(p); ok {
			ig.extra = append(ig.extra, r)
		}
	}
}

// ignored reports whether the workspace-relative slash path rel is
// ignored. Folders above rel are not checked: callers walk down from a
// starting point and prune ignored folders as they meet them.
func (ig *ignorer) ignored(rel string, isDir bool) bool {
	if alwaysSkipped(path.Base(rel)) {
		return true
	}
	ignored := false
	dir := path.Dir(rel)
	// Walk the folders from the root down to rel's parent.
	var chain []string
	for d := dir; ; d = path.Dir(d) {
		chain = append(chain, d)
		if d == "." || d == "/" {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		d := chain[i]
		sub := rel
		if d != "." {
			sub = strings.TrimPrefix(rel, d+"/")
		}
		for _, r := range ig.load(d) {
			if r.matches(sub, isDir) {
				ignored = !r.negate
			}
		}
	}
	if len(ig.extra) > 0 {
		sub, ok := rel, true
		if ig.base != "." && ig.base != "" {
			sub, ok = strings.CutPrefix(rel, ig.base+"/")
		}
		if ok {
			for _, r := range ig.extra {
				if r.matches(sub, isDir) {
					ignored = !r.negate
				}
			}
		}
	}
	return ignored
}

func (r ignoreRule) matches(rel string, isDir bool) bool {
	return (!r.dirOnly || isDir) && r.re.MatchString(rel)
}

// load returns the rules of folder dir, reading them once.
func (ig *ignorer) load(dir string) []ignoreRule {
	if rules, ok := ig.rules[dir]; ok {
		return rules
	}
	var rules []ignoreRule
	files := []string{path.Join(dir, ".gitignore")}
	if dir == "." {
		files = []string{".git/info/exclude", ".gitignore"}
	}
	for _, f := range files {
		// A FIFO named .gitignore must not hang the walk.
		if fi, err := fs.Stat(ig.fsys, f); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := fs.ReadFile(ig.fsys, f)
		if err != nil {
			continue // no ignore file here, or one we may not read
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if r, ok := parseIgnoreLine(line); ok {
				rules = append(rules, r)
			}
		}
	}
	ig.rules[dir] = rules
	return rules
}

// parseIgnoreLine parses one line of a .gitignore file.
func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are dropped unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	var r ignoreRule
	if strings.HasPrefix(line, "!") {
		r.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	// A slash at the start or in the middle anchors the pattern to the
	// folder of the ignore file; otherwise it matches at any depth.
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	re, err := globRegexp(line, anchored)
	if err != nil {
		return ignoreRule{}, false
	}
	r.re = re
	return r, true
}

// globRegexp compiles a gitignore-style glob (*, ?, [...], **) into a
// regular expression over slash paths. An unanchored glob matches at any
// depth.
func globRegexp(glob string, anchored bool) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	for i := 0; i < len(glob); {
		c := glob[i]
		atSegStart := i == 0 || glob[i-1] == '/'
		switch {
		case atSegStart && strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 3
		case atSegStart && glob[i:] == "**":
			b.WriteString(".*")
			i += 2
		case c == '*':
			b.WriteString("[^/]*")
			i++
		case c == '?':
			b.WriteString("[^/]")
			i++
		case c == '[':
			class, n := globClass(glob[i:])
			if n == 0 {
				b.WriteString(`\[`)
				i++
				break
			}
			b.WriteString(class)
			i += n
		case c == '\\' && i+1 < len(glob):
			b.WriteString(regexp.QuoteMeta(glob[i+1 : i+2]))
			i += 2
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
			i++
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// globClass translates the bracket expression at the start of s and
// returns it with the number of bytes it used, or 0 when s has no closing
// bracket.
func globClass(s string) (string, int) {
	var b strings.Builder
	b.WriteString("[")
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteString("^")
		i++
	}
	first := true
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ']' && !first:
			b.WriteString("]")
			return b.String(), i + 1
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteString(regexp.QuoteMeta(s[i : i+1]))
		case c == '-':
			b.WriteString("-")
		case c == '[' || c == ']' || c == '^' || c == '\\':
			b.WriteString(`\` + string(c))
		default:
			b.WriteByte(c)
		}
		first = false
	}
	return "", 0
}

// maxBraceExpansions bounds the globs one brace pattern may expand to:
// "{a,b}{c,d}…" grows exponentially.
const maxBraceExpansions = 64

// expandBraces expands {a,b} alternatives: "*.{ts,tsx}" gives "*.ts" and
// "*.tsx". Braces do not nest; a "{" without a "}" is literal. It returns
// nil when the pattern expands to more than maxBraceExpansions globs.
func expandBraces(glob string) []string {
	out := []string{""}
	for rest := glob; ; {
		i := strings.IndexByte(rest, '{')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(rest[i:], '}')
		}
		if i < 0 || j < 0 {
			for k := range out {
				out[k] += rest
			}
			return out
		}
		j += i
		alts := strings.Split(rest[i+1:j], ",")
		if len(out)*len(alts) > maxBraceExpansions {
			return nil
		}
		next := make([]string, 0, len(out)*len(alts))
		for _, o := range out {
			for _, a := range alts {
				next = append(next, o+rest[:i]+a)
			}
		}
		out, rest = next, rest[j+1:]
	}
}
