package importer

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the bufio buffer
	tests := []struct {
		name string
		in   string
		max  int
		want []string
		long []bool
	}{
		{"plain", "a\nb\n", 100, []string{"a", "b"}, []bool{false, false}},
		{"no final newline", "a\nb", 100, []string{"a", "b"}, []bool{false, false}},
		{"crlf and blank", "a\r\n\r\nb\r\n", 100, []string{"a", "", "b"}, []bool{false, false, false}},
		{"byte order mark", "\xef\xbb\xbfa\nb\n", 100, []string{"a", "b"}, []bool{false, false}},
		{"line beyond the buffer", long + "\nz\n", 1 << 20, []string{long, "z"}, []bool{false, false}},
		{"line beyond max", "ok\n" + long + "\nz\n", 1000, []string{"ok", "", "z"}, []bool{false, true, false}},
		{"last line beyond max", "ok\n" + long, 1000, []string{"ok", ""}, []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls := newLines(iotest.HalfReader(strings.NewReader(tt.in)), tt.max)
			var got []string
			var long []bool
			for {
				line, err := ls.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(line))
				long = append(long, ls.long)
				if ls.n != len(got) {
					t.Errorf("line number %d after %d lines", ls.n, len(got))
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.long, long); d != "" {
				t.Errorf("long flags (-want +got):\n%s", d)
			}
		})
	}
}

func TestUTF8Reader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  string
		bad   int
		first int
	}{
		{"valid", "héllo\n世界 🚀\n", "héllo\n世界 🚀\n", 0, 0},
		{"invalid bytes", "ok\nb\xffd\n\xc3\x28\n", "ok\nb\uFFFDd\n\uFFFD(\n", 2, 2},
		{"truncated rune at the end", "abc\xe4\xb8", "abc\uFFFD\uFFFD", 2, 1},
		{"byte order mark", "\xef\xbb\xbf{}", "{}", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time splits every multi-byte rune across reads.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				u := &utf8Reader{r: r}
				got, err := io.ReadAll(u)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.want || u.bad != tt.bad || u.first != tt.first {
					t.Errorf("got %q (bad %d, first line %d), want %q (bad %d, first line %d)", got, u.bad, u.first, tt.want, tt.bad, tt.first)
				}
			}
		})
	}
	u := &utf8Reader{r: strings.NewReader("a\nb\nc\xff\n"), strict: true}
	_, err := io.ReadAll(u)
	var le *lineError
	if !errors.As(err, &le) || le.line != 3 || !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("strict: err = %v, want invalid UTF-8 on line 3", err)
	}
}

func TestMiniObservation(t *testing.T) {
	tests := []struct {
		in   string
		want string
		code int
	}{
		{"<returncode>0</returncode>\n<output>\nhello\n</output>", "hello\n[exit code 0]", 0},
		{"<returncode>2</returncode>\n<output>\n</output>", "[exit code 2]", 2},
		{"<returncode>0</returncode>\n<output>\n\n</output>", "[exit code 0]", 0},
		{"The last command timed out and has been killed.", "The last command timed out and has been killed.", -1},
		{"<returncode>-9</returncode><output>x</output>", "x\n[exit code -9]", -9},
	}
	for _, tt := range tests {
		got, code := miniObservation(tt.in)
		if got != tt.want || code != tt.code {
			t.Errorf("miniObservation(%q) = %q, %d; want %q, %d", tt.in, got, code, tt.want, tt.code)
		}
	}
}

func TestSWEAction(t *testing.T) {
	tests := []struct {
		content, thought, action string
		wantThought, wantCmd     string
		ok                       bool
	}{
		{"Look.\n```\nls -a\n```", "Look.\n", "ls -a\n", "Look.", "ls -a", true},
		{"DISCUSSION\nLook.\n\n```bash\nls -a\n```\n", "", "", "DISCUSSION\nLook.", "ls -a", true},
		{"Only words.", "", "", "Only words.", "", false},
		{"Edit.\n```\nedit 1:1\nx\nend_of_edit\n```", "", "edit 1:1\nx\nend_of_edit\n", "Edit.", "edit 1:1\nx\nend_of_edit", true},
	}
	for _, tt := range tests {
		th, cmd, ok := sweAction(tt.content, tt.thought, tt.action)
		if th != tt.wantThought || cmd != tt.wantCmd || ok != tt.ok {
			t.Errorf("sweAction(%q) = %q, %q, %v", tt.content, th, cmd, ok)
		}
	}
}
