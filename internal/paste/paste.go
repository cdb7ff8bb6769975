package paste

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
)

// Terminal control sequences of bracketed-paste mode.
const (
	Enable  = "\x1b[?2004h"
	Disable = "\x1b[?2004l"
	start   = "\x1b[200~"
	end     = "\x1b[201~"
)

// MaxInline is the longest paste passed through as typed, in bytes; a
// longer one, or one with a newline or another control character, is held
// behind a placeholder.
const MaxInline = 1000

// Filter holds the pastes of one terminal. Its methods are safe for
// concurrent use: Copy runs in a goroutine of its own while the editor
// reads what it writes.
type Filter struct {
	mu   sync.Mutex
	n    int
	held []held // the pastes not expanded yet, oldest first
}

// held is a paste behind its placeholder.
type held struct{ placeholder, text string }

// Copy reads the terminal's input from r and writes what the line editor
// should see to w, until r ends or fails (its error, nil at EOF). Every
// byte read is written before Copy waits for more, so typing is not held
// back.
func (f *Filter) Copy(w io.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(w)
	// next reads a byte, flushing first when it has to wait for one.
	next := func() (byte, error) {
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return 0, err
			}
		}
		return br.ReadByte()
	}
	done := func(err error) error {
		if ferr := bw.Flush(); err == nil || err == io.EOF {
			return ferr
		}
		return err
	}
	for {
		c, err := next()
		if err != nil {
			return done(err)
		}
		if c != 0x1b {
			bw.WriteByte(c)
			continue
		}
		// An Esc: the start of a paste, Alt-Enter, or something for the
		// editor (an arrow key, an Alt- key), which gets it unchanged.
		seq := []byte{c}
		for len(seq) < len(start) {
			if c, err = next(); err != nil {
				bw.Write(seq)
				return done(err)
			}
			seq = append(seq, c)
			if len(seq) == 2 && (c == '\r' || c == '\n') {
				break
			}
			if c != start[len(seq)-1] {
				break
			}
		}
		switch {
		case string(seq) == start:
			text, err := readPaste(br)
			bw.WriteString(f.hold(text))
			if err != nil {
				return done(err)
			}
		case len(seq) == 2 && (seq[1] == '\r' || seq[1] == '\n'):
			// Alt-Enter: go on to another line.
			bw.WriteString("\\\r")
		default:
			bw.Write(seq)
		}
	}
}

// readPaste reads up to the end of a paste and returns its text, newlines
// as "\n".
func readPaste(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			return normalize(buf), err
		}
		buf = append(buf, c)
		if bytes.HasSuffix(buf, []byte(end)) {
			return normalize(buf[:len(buf)-len(end)]), nil
		}
	}
}

// normalize turns a terminal's CR and CRLF line ends into LF.
func normalize(b []byte) string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// hold returns what the editor gets for a paste: the text itself when it
// is one short line, else a placeholder that Expand turns back into it.
func (f *Filter) hold(text string) string {
	one := strings.TrimSuffix(text, "\n")
	if len(one) <= MaxInline && !strings.ContainsFunc(one, unicode.IsControl) {
		return one
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	var ph string
	if lines := strings.Count(one, "\n") + 1; lines > 1 {
		ph = fmt.Sprintf("[Pasted text #%d +%d lines]", f.n, lines)
	} else {
		ph = fmt.Sprintf("[Pasted text #%d, %d bytes]", f.n, len(text))
	}
	f.held = append(f.held, held{ph, text})
	return ph
}

// Expand replaces the placeholders in line with the texts they stand for
// and forgets those pastes. A placeholder the user edited stays as it is.
func (f *Filter) Expand(line string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []held
	var used []held
	for _, h := range f.held {
		if strings.Contains(line, h.placeholder) {
			used = append(used, h)
		} else {
			kept = append(kept, h)
		}
	}
	f.held = kept
	if len(used) == 0 {
		return line
	}
	// One pass, so that a pasted text holding a placeholder's words is
	// not expanded again.
	pairs := make([]string, 0, 2*len(used))
	for _, h := range used {
		pairs = append(pairs, h.placeholder, h.text)
	}
	return strings.NewReplacer(pairs...).Replace(line)
}
