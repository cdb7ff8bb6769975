package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"
	"io"
	"os"
	"unicode/utf8"
)

// MaxLine is the longest JSONL line read; a longer one is treated as
// damaged. It bounds the memory one record can take (a Claude Code record
// holding a large image or file is a few MB).
const MaxLine = 64 << 20

// lines reads a JSONL file line by line with bounded memory: unlike
// bufio.Scanner it has no 64 KB limit, and a line longer than max is
// skipped rather than buffered.
type lines struct {
	r    *bufio.Reader
	max  int
	buf  []byte
	n    int  // number of the line last returned
	long bool // the line last returned was cut at max
}

func newLines(r io.Reader, max int) *lines {
	return &lines{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending, valid until the
// following call, or io.EOF. A line longer than max comes back empty with
// long set.
func (l *lines) next() ([]byte, error) {
	l.buf, l.long = l.buf[:0], false
	for {
		frag, err := l.r.ReadSlice('\n')
		if !l.long {
			if len(l.buf)+len(frag) > l.max {
				l.long, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if len(l.buf) == 0 && !l.long && len(frag) == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		l.n++
		line := bytes.TrimRight(l.buf, "\r\n")
		if l.n == 1 {
			line = bytes.TrimPrefix(line, bom)
		}
		return line, nil
	}
}

var bom = []byte("\xef\xbb\xbf")

// utf8Reader passes a stream through, replacing bytes that are not UTF-8
// with U+FFFD and counting them; with strict it fails at the first one.
type utf8Reader struct {
	r      io.Reader
	strict bool
	buf    []byte // read buffer
	in     []byte // input not yet checked (an incomplete rune at most, between reads)
	begun  bool   // a leading byte order mark has been dropped
	out    []byte // checked output not yet returned
	eof    bool
	line   int // newlines checked so far
	bad    int // sequences replaced
	first  int // line of the first one
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.eof && len(u.in) == 0 {
			return 0, io.EOF
		}
		if !u.eof {
			if u.buf == nil {
				u.buf = make([]byte, 64<<10)
			}
			n, err := u.r.Read(u.buf)
			u.in = append(u.in, u.buf[:n]...)
			if !u.begun && (len(u.in) >= len(bom) || err != nil) {
				u.in, u.begun = bytes.TrimPrefix(u.in, bom), true
			}
			if err == io.EOF {
				u.eof = true
			} else if err != nil {
				return 0, err
			}
		}
		if err := u.check(); err != nil {
			return 0, err
		}
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// check moves what is checkable from in to out.
func (u *utf8Reader) check() error {
	in := u.in
	end := len(in)
	if !u.eof { // keep a rune cut by the read boundary for the next round
		for k := 1; k <= utf8.UTFMax-1 && k <= end; k++ {
			if utf8.RuneStart(in[end-k]) {
				if !utf8.FullRune(in[end-k:]) {
					end -= k
				}
				break
			}
		}
	}
	u.out = u.out[:0]
	done := in[:end]
	if utf8.Valid(done) {
		u.line += bytes.Count(done, []byte{'\n'})
		u.out = append(u.out, done...)
	} else {
		for len(done) > 0 {
			r, size := utf8.DecodeRune(done)
			if r == utf8.RuneError && size == 1 {
				if u.bad == 0 {
					u.first = u.line + 1
				}
				u.bad++
				if u.strict {
					return &lineError{line: u.line + 1, err: ErrInvalidUTF8}
				}
				u.out = append(u.out, "\uFFFD"...)
			} else {
				if r == '\n' {
					u.line++
				}
				u.out = append(u.out, done[:size]...)
			}
			done = done[size:]
		}
	}
	u.in = append(u.in[:0], in[end:]...)
	return nil
}

// lineError carries a line number out of a reader to the importer.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// stream is a JSON document read token by token, so that a large file
// never has to be in memory at once: only the values decoded are.
type stream struct {
	f   *os.File
	u   *utf8Reader
	dec *json.Decoder
}

func openStream(path string, strict bool) (*stream, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	u := &utf8Reader{r: f, strict: strict}
	return &stream{f: f, u: u, dec: json.NewDecoder(u)}, nil
}

func (s *stream) Close() error { return s.f.Close() }

// object reads an object, calling fn with each key; fn must consume the
// value (decode or skip).
func (s *stream) object(fn func(key string) error) error {
	if err := s.delim('{'); err != nil {
		return err
	}
	for s.dec.More() {
		t, err := s.dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // '}'
	return err
}

// array reads an array, calling fn for each element; fn must consume it.
func (s *stream) array(fn func(i int) error) error {
	if err := s.delim('['); err != nil {
		return err
	}
	for i := 0; s.dec.More(); i++ {
		if err := fn(i); err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // ']'
	return err
}

func (s *stream) delim(want json.Delim) error {
	t, err := s.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: expected %q, found %v", ErrMalformed, want, t)
	}
	return nil
}

// skip consumes one value without keeping it.
func (s *stream) skip() error {
	depth := 0
	for {
		t, err := s.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func (s *stream) decode(v any) error { return s.dec.Decode(v) }

// document imports r.path as one JSON object read as a stream: field is
// called with each top-level key and must consume its value (decode or
// skip). Errors come back located, replaced invalid UTF-8 is warned about,
// and documents after the first are reported, not imported.
func (r *run) document(field func(s *stream, key string) error) error {
	s, err := openStream(r.path, r.strict)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.object(func(key string) error { return field(s, key) }); err != nil {
		return r.jsonErr(s, err)
	}
	r.utf8Warning(s.u)
	return r.rest(s)
}

// elements reads the array at s, decoding each element into a new T that
// it passes to each with the element's index; it checks for cancellation
// as it goes and counts the elements in r.total.
func elements[T any](r *run, s *stream, each func(i int, v *T) error) error {
	return s.array(func(i int) error {
		var v T
		if err := s.decode(&v); err != nil {
			return err
		}
		if err := r.tick(i); err != nil {
			return err
		}
		r.total++
		return each(i, &v)
	})
}

// jsonErr turns an error from reading a JSON document into a located
// importer error: syntax errors get the line of their offset.
func (r *run) jsonErr(s *stream, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return r.lineErr(le.line, le.err)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return r.lineErr(lineAt(r.path, syn.Offset), fmt.Errorf("%w: %s", ErrMalformed, jsonerr.What(err)))
	case errors.As(err, &typ):
		return r.lineErr(lineAt(r.path, typ.Offset), fmt.Errorf("%w: %s", ErrMalformed, jsonerr.What(err)))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return r.lineErr(lineAt(r.path, s.dec.InputOffset()), fmt.Errorf("%w: the document ends early (truncated file?)", ErrMalformed))
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrInvalidUTF8):
		return r.lineErr(lineAt(r.path, s.dec.InputOffset()), err)
	}
	return err
}

// lineAt returns the 1-based line of byte offset off in the file as the
// decoder saw it (invalid UTF-8 replaced).
func lineAt(path string, off int64) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	u := &utf8Reader{r: f}
	line := 1
	var buf [64 << 10]byte
	for off > 0 {
		n, err := u.Read(buf[:min(int64(len(buf)), off)])
		line += bytes.Count(buf[:n], []byte{'\n'})
		off -= int64(n)
		if err != nil {
			break
		}
	}
	return line
}

// utf8Warning reports replaced invalid UTF-8 in a whole-document format.
func (r *run) utf8Warning(u *utf8Reader) {
	if u.bad > 0 {
		r.w.add("invalid UTF-8 replaced with U+FFFD: %d sequence(s), the first on line %d", u.bad, u.first)
	}
}

// eachLine passes each line of the JSONL file r.path that holds something
// to record, with its number: a line longer than MaxLine is damaged (see
// damaged), a blank one is skipped, and invalid UTF-8 is an error with
// Strict, else replaced with U+FFFD and warned about.
func (r *run) eachLine(record func(n int, line []byte) error) error {
	f, err := os.Open(r.path)
	if err != nil {
		return err
	}
	defer f.Close()
	ls := newLines(f, MaxLine)
	for {
		line, err := ls.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if ls.n%1000 == 1 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
		if ls.long {
			if err := r.damaged(ls.n, fmt.Errorf("longer than %d MiB", MaxLine>>20)); err != nil {
				return err
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			if r.strict {
				return r.lineErr(ls.n, ErrInvalidUTF8)
			}
			r.w.add("line %d: invalid UTF-8 replaced with U+FFFD", ls.n)
			line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
		}
		if err := record(ls.n, line); err != nil {
			return err
		}
	}
}
