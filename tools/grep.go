package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
)

// GrepData is the Data of a Grep result.
type GrepData struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob,omitempty"`
	// Matches are the first matching lines, "file:line:text", in file
	// order then line order; text is cut at grepMaxText bytes. Empty in
	// files_with_matches mode.
	Matches []string `json:"matches"`
	// TotalMatches counts every matching line in every file searched.
	TotalMatches int `json:"total_matches"`
	// Files are the first files with a match (files_with_matches mode);
	// TotalFiles counts every file with a match.
	Files      []string `json:"files,omitempty"`
	TotalFiles int      `json:"total_files"`
	// Truncated is true when Matches (or Files) holds fewer than the total.
	Truncated bool `json:"truncated"`
	// FilesSearched counts the files read; SkippedBinary and SkippedLarge
	// the files passed over as binary or larger than the size cap.
	FilesSearched int `json:"files_searched"`
	SkippedBinary int `json:"skipped_binary,omitempty"`
	SkippedLarge  int `json:"skipped_large,omitempty"`
}

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignore_case"`
	DashI      bool   `json:"-i"` // Claude Code's name for ignore_case
	OutputMode string `json:"output_mode"`
	HeadLimit  int    `json:"head_limit"`
}

// grepMaxText cuts long matching lines in Grep output.
const grepMaxText = 300

func (s *Set) grep(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameGrep, input, func(in *grepInput) Result {
		filesMode := false
		switch in.OutputMode {
		case "", "content":
		case "files_with_matches":
			filesMode = true
		default:
			return failf(nil, "output_mode must be \"content\" or \"files_with_matches\", not %q", in.OutputMode)
		}
		if in.HeadLimit < 0 {
			return failf(nil, "head_limit must not be negative")
		}
		limit := s.opts.GrepMaxMatches
		if in.HeadLimit > 0 {
			limit = min(limit, in.HeadLimit)
		}
		pat := in.Pattern
		if in.IgnoreCase || in.DashI {
			pat = "(?i)" + pat
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return failf(nil, "invalid pattern: %v (Grep uses Go RE2 syntax: no backreferences or lookaround)", err)
		}
		// With (?m) one search over the whole file finds every file that
		// has a matching line (and maybe a few that do not): a cheap filter.
		anyLine, err := regexp.Compile("(?m)" + pat)
		if err != nil {
			anyLine = re
		}
		if in.Path == "" {
			in.Path = "."
		}
		if r, ok := s.inSpill(ctx, in.Path, input, (*Set).grep); ok {
			return r
		}
		rel, err := s.rel(in.Path)
		if err != nil {
			return failf(nil, "%v", err)
		}
		p := show(rel)
		fi, err := s.root.Stat(rel)
		if err != nil {
			return failf(nil, "%v", pathError(p, err))
		}
		var globs []*regexp.Regexp
		if in.Glob != "" {
			expanded := expandBraces(in.Glob)
			if expanded == nil {
				return failf(nil, "glob %q has too many {…} alternatives (at most %d)", in.Glob, maxBraceExpansions)
			}
			for _, g := range expanded {
				gre, err := globRegexp(strings.TrimPrefix(g, "/"), strings.Contains(g, "/"))
				if err != nil {
					return failf(nil, "invalid glob %q: %v", in.Glob, err)
				}
				globs = append(globs, gre)
			}
		}
		d := &GrepData{Pattern: in.Pattern, Path: s.display(rel), Glob: in.Glob, Matches: []string{}}
		fsys := s.root.FS()
		search := func(file string) error {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			return s.grepFile(fsys, file, re, anyLine, limit, filesMode, d)
		}
		var walkErr error
		if !fi.IsDir() {
			// A file named outright is searched as it is, if it is one.
			if err := regularOnly(p, fi); err != nil {
				return failf(nil, "%v", err)
			}
			walkErr = search(p)
		} else {
			ig := newIgnorer(fsys)
			walkErr = fs.WalkDir(fsys, p, func(file string, e fs.DirEntry, err error) error {
				if err != nil {
					if file == p {
						return err
					}
					return nil // an unreadable folder is passed over
				}
				if file == p {
					return nil
				}
				if ig.ignored(file, e.IsDir()) {
					if e.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				if !e.Type().IsRegular() || !globMatch(globs, file, p) {
					return nil // folders are walked; links and devices are not searched
				}
				return search(file)
			})
		}
		d.Truncated = d.TotalMatches > len(d.Matches) && !filesMode || filesMode && d.TotalFiles > len(d.Files)
		res := Result{Status: StatusOK, Data: d, Text: grepText(d, filesMode)}
		if walkErr != nil {
			if ctx.Err() != nil {
				res.Status, res.Error = StatusPartial, fmt.Sprintf("search cut short: %v; the totals count only the files searched so far", walkErr)
				res.Text += "\n(" + res.Error + ")"
				return res
			}
			return failf(d, "searching %s: %v", p, pathError(p, walkErr))
		}
		return res
	})
}

// grepFile searches one file and adds what it finds to d.
func (s *Set) grepFile(fsys fs.FS, file string, re, anyLine *regexp.Regexp, limit int, filesMode bool, d *GrepData) error {
	f, fi, err := s.openRegular(file)
	if err != nil {
		return nil // vanished, unreadable, not a regular file: not a match
	}
	defer f.Close()
	if fi.Size() > s.opts.GrepMaxFileSize {
		d.SkippedLarge++
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	if binaryReason(data[:min(len(data), sniffSize)]) != "" {
		d.SkippedBinary++
		return nil
	}
	d.FilesSearched++
	if !anyLine.Match(data) {
		return nil
	}
	found := 0
	for n, rest := 1, data; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if !re.Match(line) {
			continue
		}
		found++
		d.TotalMatches++
		if !filesMode && len(d.Matches) < limit {
			text := string(cutRunes(line, grepMaxText))
			if len(text) < len(line) {
				text += "…"
			}
			d.Matches = append(d.Matches, fmt.Sprintf("%s:%d:%s", s.display(file), n, strings.ToValidUTF8(text, "\uFFFD")))
		}
	}
	if found > 0 {
		d.TotalFiles++
		if filesMode && len(d.Files) < limit {
			d.Files = append(d.Files, s.display(file))
		}
	}
	return nil
}

// globMatch reports whether file passes the glob filter: a glob without a
// slash matches the file name; one with a slash matches the path relative
// to the searched folder or to the workspace.
func globMatch(globs []*regexp.Regexp, file, base string) bool {
	if len(globs) == 0 {
		return true
	}
	sub := strings.TrimPrefix(file, base+"/")
	for _, g := range globs {
		if g.MatchString(file) || g.MatchString(sub) {
			return true
		}
	}
	return false
}

func grepText(d *GrepData, filesMode bool) string {
	where := d.Path
	if d.Glob != "" {
		where += " (" + d.Glob + ")"
	}
	skipped := ""
	if d.SkippedBinary > 0 || d.SkippedLarge > 0 {
		skipped = fmt.Sprintf("\n(Not searched: %d binary files, %d files over the size cap.)", d.SkippedBinary, d.SkippedLarge)
	}
	if d.TotalMatches == 0 {
		return fmt.Sprintf("No matches for %q in %s (%s searched).", d.Pattern, where, plural(d.FilesSearched, "file")) + skipped
	}
	var sb strings.Builder
	if filesMode {
		sb.WriteString(strings.Join(d.Files, "\n"))
	} else {
		sb.WriteString(strings.Join(d.Matches, "\n"))
	}
	fmt.Fprintf(&sb, "\n(%s in %s", plural(d.TotalMatches, "matching line"), plural(d.TotalFiles, "file"))
	switch {
	case d.Truncated && filesMode:
		fmt.Fprintf(&sb, "; showing the first %d files. Narrow the pattern, path or glob to see the rest", len(d.Files))
	case d.Truncated:
		fmt.Fprintf(&sb, "; showing the first %d. Narrow the pattern, path or glob to see the rest", len(d.Matches))
	}
	sb.WriteString(".)" + skipped)
	return sb.String()
}
