package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// LSData is the Data of an LS result.
type LSData struct {
	Path string `json:"path"`
	// Entries are the first entries listed, relative to Path, in the order
	// of a depth-first walk with names sorted: folders end in "/",
	// symbolic links read "name -> target".
	Entries []string `json:"entries"`
	// TotalEntries counts every entry within Depth that is not ignored;
	// Truncated is true when Entries holds fewer.
	TotalEntries int  `json:"total_entries"`
	Truncated    bool `json:"truncated"`
	Depth        int  `json:"depth"`
	// Ignored names the first entries skipped (version-control folders,
	// .gitignore'd paths, the call's ignore patterns); TotalIgnored counts
	// them all. Nothing below an ignored folder is looked at.
	Ignored      []string `json:"ignored,omitempty"`
	TotalIgnored int      `json:"total_ignored"`
}

type lsInput struct {
	Path   string   `json:"path"`
	Depth  int      `json:"depth"`
	Ignore []string `json:"ignore"`
}

// lsMaxDepth bounds how deep one LS call may walk.
const lsMaxDepth = 5

// lsMaxIgnoredShown bounds the ignored entries named in a result.
const lsMaxIgnoredShown = 20

func (s *Set) ls(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameLS, input, func(in *lsInput) Result {
		if in.Path == "" {
			in.Path = "."
		}
		if in.Depth < 0 || in.Depth > lsMaxDepth {
			return failf(nil, "depth must be between 1 and %d", lsMaxDepth)
		}
		depth := max(in.Depth, 1)
		rel, err := s.rel(in.Path)
		if err != nil {
			return failf(nil, "%v", err)
		}
		p := show(rel)
		fi, err := s.root.Stat(rel)
		if err != nil {
			return failf(nil, "%v", pathError(p, err))
		}
		if !fi.IsDir() {
			return failf(nil, "%s is a file, not a directory; use Read to see it", p)
		}
		d := &LSData{Path: p, Depth: depth, Entries: []string{}}
		fsys := s.root.FS()
		ig := newIgnorer(fsys)
		ig.addPatterns(p, in.Ignore)
		var walk func(dir string, level int) error
		walk = func(dir string, level int) error {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			ents, err := fs.ReadDir(fsys, dir)
			if err != nil {
				return pathError(dir, err)
			}
			for _, e := range ents {
				full := path.Join(dir, e.Name())
				name := strings.TrimPrefix(full, p+"/")
				if p == "." {
					name = full
				}
				isDir := e.IsDir()
				if ig.ignored(full, isDir) {
					d.TotalIgnored++
					if len(d.Ignored) < lsMaxIgnoredShown {
						d.Ignored = append(d.Ignored, name+dirSlash(isDir))
					}
					continue
				}
				d.TotalEntries++
				entry := name + dirSlash(isDir)
				if e.Type()&fs.ModeSymlink != 0 {
					target, err := s.root.Readlink(full)
					if err != nil {
						target = "?"
					}
					entry = name + " -> " + target
				}
				if len(d.Entries) < s.opts.LSMaxEntries {
					d.Entries = append(d.Entries, entry)
				}
				if isDir && level < depth {
					if err := walk(full, level+1); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(p, 1); err != nil {
			return failf(nil, "listing %s: %v", p, err)
		}
		d.Truncated = len(d.Entries) < d.TotalEntries
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s/ (%s", strings.TrimSuffix(p, "/"), plural(d.TotalEntries, "entry"))
		if depth > 1 {
			fmt.Fprintf(&sb, ", %d levels deep", depth)
		}
		sb.WriteString(")")
		for _, e := range d.Entries {
			sb.WriteString("\n" + e)
		}
		if d.Truncated {
			fmt.Fprintf(&sb, "\n(Showing %d of %d entries. List a subfolder, or use Grep, to see the rest.)", len(d.Entries), d.TotalEntries)
		}
		if d.TotalIgnored > 0 {
			more := ""
			if d.TotalIgnored > len(d.Ignored) {
				more = fmt.Sprintf(" and %d more", d.TotalIgnored-len(d.Ignored))
			}
			fmt.Fprintf(&sb, "\n(Not listed, ignored: %s%s.)", strings.Join(d.Ignored, ", "), more)
		}
		return Result{Status: StatusOK, Data: d, Text: sb.String()}
	})
}

func dirSlash(isDir bool) string {
	if isDir {
		return "/"
	}
	return ""
}
