package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/filekind"
)

// ReadData is the Data of a Read result.
type ReadData struct {
	Path  string    `json:"path"`
	Mtime time.Time `json:"mtime"`
	Size  int64     `json:"size"`
	// TotalLines is the number of lines in the whole file.
	TotalLines int `json:"total_lines"`
	// StartLine and EndLine are the first and last line shown (1-based,
	// inclusive); both are 0 when no line is shown.
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// Truncated is true when the file goes on after EndLine; TruncatedBy
	// says what stopped the output: "limit" (the call's own limit),
	// "max_lines" or "max_bytes" (the Set's caps).
	Truncated   bool   `json:"truncated"`
	TruncatedBy string `json:"truncated_by,omitempty"`
	// ModifiedExternally is true when the file changed since the agent last
	// read or wrote it; PreviousMtime is the mtime it had then.
	ModifiedExternally bool      `json:"modified_externally"`
	PreviousMtime      time.Time `json:"previous_mtime,omitzero"`
	// InvalidUTF8Lines counts shown lines whose invalid UTF-8 was replaced
	// by U+FFFD; LongLines counts shown lines cut at the line length cap.
	InvalidUTF8Lines int `json:"invalid_utf8_lines,omitempty"`
	LongLines        int `json:"long_lines,omitempty"`
	// CRLF is true when the file uses CRLF line endings (not shown).
	CRLF bool `json:"crlf,omitempty"`
}

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
}

// sniffSize is how much of a file is looked at to tell text from binary.
const sniffSize = 8000

func (s *Set) read(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameRead, input, func(in *readInput) Result {
		if in.Offset < 0 || in.Limit < 0 {
			return failf(nil, "offset and limit must not be negative")
		}
		if r, ok := s.inSpill(ctx, in.FilePath, input, (*Set).read); ok {
			return r
		}
		rel, err := s.rel(in.FilePath)
		if err != nil {
			return failf(nil, "%v", err)
		}
		s.writeMu.RLock()
		defer s.writeMu.RUnlock()
		// Name the file by where a link leads, as Write and Edit do, so
		// that what the agent saw is remembered under one name.
		if rel, err = s.resolveLinks(rel); err != nil {
			return failf(nil, "%v", err)
		}
		p := s.display(rel)
		fi, err := s.root.Stat(rel)
		if err != nil {
			return failf(nil, "%v", pathError(p, err))
		}
		if fi.IsDir() {
			return failf(nil, "%s is a directory; use LS to list it", p)
		}
		if !fi.Mode().IsRegular() {
			return failf(nil, "%s is not a regular file (%s)", p, filekind.Of(fi.Mode()))
		}
		f, fi, err := s.openRegular(rel)
		if err != nil {
			return failf(nil, "%v", err)
		}
		defer f.Close()
		br := bufio.NewReaderSize(f, 64<<10)
		head, err := br.Peek(sniffSize)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return failf(nil, "reading %s: %v", p, err)
		}
		if why := binaryReason(head); why != "" {
			return failf(nil, "%s looks like a binary file (%s, %d bytes); Read shows text files only. Use Bash (e.g. `file`, `xxd | head`) to inspect it", p, why, fi.Size())
		}
		d := &ReadData{Path: p, Mtime: fi.ModTime().UTC(), Size: fi.Size()}
		cur := stampOf(fi)
		prev, seen := s.lastSeen(rel)
		if seen && !prev.equal(cur) {
			d.ModifiedExternally, d.PreviousMtime = true, prev.mtime.UTC()
		}
		body, err := s.readLines(ctx, br, in, d)
		if err != nil {
			return failf(d, "reading %s: %v", p, err)
		}
		s.remember(rel, cur)
		if in.Offset > 1 && in.Offset > d.TotalLines {
			return failf(d, "offset %d is past the end of %s, which has %s", in.Offset, p, plural(d.TotalLines, "line"))
		}
		var notes []string
		if d.ModifiedExternally {
			notes = append(notes, "Note: "+changedNote(p, prev, cur)+". The content below is current; what you saw before is stale.")
		}
		var tail []string
		switch {
		case d.TotalLines == 0:
			tail = append(tail, fmt.Sprintf("(%s is empty.)", p))
		case d.Truncated:
			tail = append(tail, fmt.Sprintf("(Showing lines %d-%d of %d. Read with offset=%d to see more.)", d.StartLine, d.EndLine, d.TotalLines, d.EndLine+1))
		}
		if d.LongLines > 0 {
			tail = append(tail, fmt.Sprintf("(%d lines were longer than %d bytes and were cut.)", d.LongLines, s.opts.MaxLineLength))
		}
		if d.InvalidUTF8Lines > 0 {
			tail = append(tail, fmt.Sprintf("(%d lines held invalid UTF-8, shown as U+FFFD.)", d.InvalidUTF8Lines))
		}
		if d.CRLF {
			tail = append(tail, "(The file has CRLF line endings; the CR is not shown. Edit matches either form.)")
		}
		var sb strings.Builder
		for _, n := range notes {
			sb.WriteString(n + "\n\n")
		}
		sb.WriteString(body)
		if len(tail) > 0 {
			if body != "" {
				sb.WriteString("\n\n")
			}
			sb.WriteString(strings.Join(tail, "\n"))
		}
		return Result{Status: StatusOK, Data: d, Text: sb.String()}
	})
}

// readLines formats the requested lines cat -n style and counts the rest.
func (s *Set) readLines(ctx context.Context, br *bufio.Reader, in *readInput, d *ReadData) (string, error) {
	start := max(in.Offset, 1)
	limit := s.opts.ReadMaxLines
	limitBy := "max_lines"
	if in.Limit > 0 && in.Limit <= limit {
		limit, limitBy = in.Limit, "limit"
	}
	var sb strings.Builder
	shown, stopped := 0, false
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		line, full, crlf, err := nextLine(br, s.opts.MaxLineLength)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", err
		}
		d.TotalLines = n
		d.CRLF = d.CRLF || crlf
		if n < start || stopped {
			continue
		}
		if shown == limit {
			stopped, d.TruncatedBy = true, limitBy
			continue
		}
		text := string(line)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
			d.InvalidUTF8Lines++
		}
		if full > len(line) {
			text += fmt.Sprintf(" … [line cut: %d more bytes]", full-len(line))
			d.LongLines++
		}
		entry := fmt.Sprintf("%6d\t%s\n", n, text)
		if shown > 0 && sb.Len()+len(entry) > s.opts.ReadMaxBytes {
			stopped, d.TruncatedBy = true, "max_bytes"
			continue
		}
		sb.WriteString(entry)
		shown++
		if d.StartLine == 0 {
			d.StartLine = n
		}
		d.EndLine = n
	}
	d.Truncated = d.EndLine > 0 && d.EndLine < d.TotalLines
	if !d.Truncated {
		d.TruncatedBy = ""
	}
	return strings.TrimSuffix(sb.String(), "\n"), nil
}

// nextLine returns the next line without its line ending, cut to at most
// maxLen bytes (on a rune boundary), the line's full length without the
// ending, and whether the ending was CRLF. It holds at most one buffer of a
// long line in memory.
func nextLine(br *bufio.Reader, maxLen int) (line []byte, full int, crlf bool, err error) {
	var last byte // the last byte before the newline
	for {
		chunk, err := br.ReadSlice('\n')
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		if len(body) > 0 {
			last = body[len(body)-1]
		}
		full += len(body)
		if len(line) <= maxLen {
			line = append(line, body[:min(len(body), maxLen+1-len(line))]...)
		}
		switch {
		case err == nil:
			if last == '\r' {
				crlf = true
				full--
				line = line[:min(len(line), full)]
			}
			return cutRunes(line, maxLen), full, crlf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && full > 0:
			return cutRunes(line, maxLen), full, false, nil
		default:
			return nil, 0, false, err
		}
	}
}

// cutRunes cuts b to at most n bytes without splitting a UTF-8 sequence.
func cutRunes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	if !utf8.RuneStart(b[i]) {
		i = n // not valid UTF-8 anyway
	}
	return b[:i]
}

// binaryReason says why head (the start of a file) looks binary, or ""
// when it looks like text: a NUL byte, or mostly invalid UTF-8.
func binaryReason(head []byte) string {
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return fmt.Sprintf("NUL byte at offset %d", i)
	}
	bad := 0
	for b := head; len(b) > 0; {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			// A sequence cut by the end of the sample is not evidence.
			if len(b) < utf8.UTFMax && !utf8.FullRune(b) {
				break
			}
			bad++
		}
		b = b[size:]
	}
	if len(head) > 0 && bad*10 > len(head) {
		return fmt.Sprintf("%d%% of its first bytes are not UTF-8", bad*100/len(head))
	}
	return ""
}
