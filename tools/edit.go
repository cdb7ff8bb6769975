package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// EditData is the Data of an Edit or MultiEdit result.
type EditData struct {
	Path string `json:"path"`
	// Applied is true when the file was changed; a failed call leaves the
	// file untouched.
	Applied bool `json:"applied"`
	// Edits is the number of edits asked for (1 for Edit); FailedEdit the
	// 1-based index of the edit that failed, 0 when none did.
	Edits      int `json:"edits"`
	FailedEdit int `json:"failed_edit,omitempty"`
	// Replacements counts the occurrences replaced by all edits.
	Replacements int `json:"replacements"`
	// ModifiedExternally is true when the file had changed since the agent
	// last read or wrote it; the edit still applied because its old text
	// matched.
	ModifiedExternally bool `json:"modified_externally"`
	Change
}

// editSpec is one replacement. Pointers tell a missing field from an
// empty string: a missing new_string must not silently delete text.
type editSpec struct {
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

type editInput struct {
	FilePath   string  `json:"file_path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

type multiEditInput struct {
	FilePath string     `json:"file_path"`
	Edits    []editSpec `json:"edits"`
}

func (s *Set) edit(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameEdit, input, func(in *editInput) Result {
		return s.applyEdits(ctx, in.FilePath, []editSpec{{in.OldString, in.NewString, in.ReplaceAll}}, false)
	})
}

func (s *Set) multiEdit(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameMultiEdit, input, func(in *multiEditInput) Result {
		if len(in.Edits) == 0 {
			return failf(nil, "edits is empty; give at least one {old_string, new_string}")
		}
		return s.applyEdits(ctx, in.FilePath, in.Edits, true)
	})
}

// applyEdits applies edits in order to the file's content in memory and
// writes the result once, atomically: all of them or none.
func (s *Set) applyEdits(ctx context.Context, path string, edits []editSpec, multi bool) Result {
	rel, err := s.rel(path)
	if err != nil {
		return failf(nil, "%v", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	target, err := s.resolveLinks(rel)
	if err != nil {
		return failf(nil, "%v", err)
	}
	p := show(target)
	d := &EditData{Path: p, Edits: len(edits)}
	fi, err := s.root.Stat(target)
	switch {
	case err != nil:
		if errors.Is(err, fs.ErrNotExist) {
			return failf(d, "%s does not exist; use Write to create a file", p)
		}
		return failf(d, "%v", pathError(p, err))
	case fi.IsDir():
		return failf(d, "%s is a directory", p)
	case !fi.Mode().IsRegular():
		return failf(d, "%s is not a regular file (%s)", p, fi.Mode().Type())
	}
	old, err := s.readRegular(target)
	if err != nil {
		return failf(d, "%v", pathError(p, err))
	}
	if why := binaryReason(old[:min(len(old), sniffSize)]); why != "" {
		return failf(d, "%s looks like a binary file (%s); Edit changes text files only", p, why)
	}
	cur := stampOf(fi)
	prev, seen := s.lastSeen(target)
	d.ModifiedExternally = seen && !prev.equal(cur)

	content := string(old)
	for i, e := range edits {
		n, next, err := replace(content, e)
		if err != nil {
			d.FailedEdit = i + 1
			where := ""
			if multi {
				where = fmt.Sprintf("edit %d of %d: ", i+1, len(edits))
			}
			return failf(d, "%s%v. %s was not changed.", where, err, p)
		}
		d.Replacements += n
		content = next
	}
	if err := ctx.Err(); err != nil {
		return failf(d, "%s not changed: %v", p, context.Cause(ctx))
	}
	if err := s.atomicWrite(target, []byte(content), fi.Mode().Perm(), true); err != nil {
		return failf(d, "writing %s: %v", p, err)
	}
	d.Applied = true
	d.Change = s.diff(p, old, []byte(content), false)

	var sb strings.Builder
	if d.ModifiedExternally {
		fmt.Fprintf(&sb, "Note: %s. The edit still applied because its old text matched; Read the file again if the other change matters.\n\n", changedNote(p, prev, cur))
	}
	fmt.Fprintf(&sb, "Edited %s: %s, +%d -%d lines.\n%s", p, plural(d.Replacements, "replacement"), d.Added, d.Removed, d.diffText())
	return Result{Status: StatusOK, Data: d, Text: sb.String()}
}

// replace applies one edit to content and returns the number of
// replacements and the new content.
func replace(content string, e editSpec) (int, string, error) {
	switch {
	case e.OldString == nil:
		return 0, "", fmt.Errorf("old_string is missing")
	case e.NewString == nil:
		return 0, "", fmt.Errorf("new_string is missing (give \"\" to delete the text)")
	case *e.OldString == "":
		return 0, "", fmt.Errorf("old_string is empty; give the exact text to replace (use Write to create a file)")
	case *e.OldString == *e.NewString:
		return 0, "", fmt.Errorf("old_string and new_string are the same; there is nothing to change")
	}
	old, repl := *e.OldString, *e.NewString
	n := strings.Count(content, old)
	if n == 0 && strings.Contains(content, "\r\n") && strings.Contains(old, "\n") && !strings.Contains(old, "\r\n") {
		// The model sees CRLF files without their CRs (Read strips them).
		crlfOld := strings.ReplaceAll(old, "\n", "\r\n")
		if n = strings.Count(content, crlfOld); n > 0 {
			old, repl = crlfOld, strings.ReplaceAll(repl, "\n", "\r\n")
		}
	}
	switch {
	case n == 0:
		return 0, "", notFound(content, old)
	case n > 1 && !e.ReplaceAll:
		return 0, "", fmt.Errorf("old_string occurs %d times (at lines %s); include more surrounding text to make it unique, or set replace_all to replace every one", n, occurrenceLines(content, old, 5))
	case e.ReplaceAll:
		return n, strings.ReplaceAll(content, old, repl), nil
	}
	return 1, strings.Replace(content, old, repl, 1), nil
}

// notFound explains a missing old_string, with a hint where its first
// line appears when only whitespace differs.
func notFound(content, old string) error {
	msg := "old_string was not found; it must match the file exactly, including whitespace and indentation (Read the file again and copy the text)"
	first := ""
	for l := range strings.SplitSeq(old, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			first = t
			break
		}
	}
	if first == "" {
		return fmt.Errorf("%s", msg)
	}
	var at []string
	for i, l := range strings.Split(content, "\n") {
		if strings.TrimSpace(l) == first {
			at = append(at, strconv.Itoa(i+1))
			if len(at) == 5 {
				break
			}
		}
	}
	if len(at) > 0 {
		return fmt.Errorf("%s. Its first line appears, ignoring surrounding whitespace, at line %s", msg, strings.Join(at, ", "))
	}
	return fmt.Errorf("%s", msg)
}

// occurrenceLines lists the lines where the first max occurrences of sub
// start.
func occurrenceLines(content, sub string, max int) string {
	var at []string
	line, pos := 1, 0
	for len(at) < max {
		i := strings.Index(content[pos:], sub)
		if i < 0 {
			break
		}
		line += strings.Count(content[pos:pos+i], "\n")
		at = append(at, strconv.Itoa(line))
		line += strings.Count(sub, "\n")
		pos += i + len(sub)
	}
	s := strings.Join(at, ", ")
	if strings.Count(content, sub) > max {
		s += ", …"
	}
	return s
}

// plural says "1 word" or "n words".
func plural(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "y"):
		return strconv.Itoa(n) + " " + strings.TrimSuffix(word, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + word + "s"
}
