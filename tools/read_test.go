package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func numbered(n int) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	return sb.String()
}

func TestReadRanges(t *testing.T) {
	s, _ := newSetOpts(t, map[string]string{
		"ten.txt":   numbered(10),
		"big.txt":   numbered(50),
		"noeol.txt": "a\nb",
		"empty.txt": "",
		"blank.txt": "\n",
	}, Options{ReadMaxLines: 20, ReadMaxBytes: 200})
	tests := []struct {
		name                 string
		input                map[string]any
		start, end, total    int
		truncated            bool
		by                   string
		first, last, hasNote string
	}{
		{"whole", map[string]any{"file_path": "ten.txt"}, 1, 10, 10, false, "", "     1\tline 1", "    10\tline 10", ""},
		{"offset", map[string]any{"file_path": "ten.txt", "offset": 4}, 4, 10, 10, false, "", "     4\tline 4", "    10\tline 10", ""},
		{"offset and limit", map[string]any{"file_path": "ten.txt", "offset": 3, "limit": 2}, 3, 4, 10, true, "limit", "     3\tline 3", "(Showing lines 3-4 of 10. Read with offset=5 to see more.)", "offset=5"},
		{"limit reaching the end", map[string]any{"file_path": "ten.txt", "offset": 9, "limit": 5}, 9, 10, 10, false, "", "     9\tline 9", "    10\tline 10", ""},
		{"byte cap", map[string]any{"file_path": "big.txt"}, 1, 13, 50, true, "max_bytes", "     1\tline 1", "(Showing lines 1-13 of 50. Read with offset=14 to see more.)", ""},
		{"line cap", map[string]any{"file_path": "big.txt", "offset": 40, "limit": 100}, 40, 50, 50, false, "", "    40\tline 40", "    50\tline 50", ""},
		{"no final newline", map[string]any{"file_path": "noeol.txt"}, 1, 2, 2, false, "", "     1\ta", "     2\tb", ""},
		{"empty", map[string]any{"file_path": "empty.txt"}, 0, 0, 0, false, "", "(empty.txt is empty.)", "(empty.txt is empty.)", ""},
		{"one blank line", map[string]any{"file_path": "blank.txt"}, 1, 1, 1, false, "", "     1\t", "     1\t", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, s, NameRead, tt.input)
			wantOK(t, r)
			d := r.Data.(*ReadData)
			if d.StartLine != tt.start || d.EndLine != tt.end || d.TotalLines != tt.total || d.Truncated != tt.truncated || d.TruncatedBy != tt.by {
				t.Errorf("data %+v, want lines %d-%d of %d truncated %v by %q", d, tt.start, tt.end, tt.total, tt.truncated, tt.by)
			}
			lines := strings.Split(r.Text, "\n")
			if lines[0] != tt.first || lines[len(lines)-1] != tt.last {
				t.Errorf("text starts %q, ends %q; want %q … %q\n%s", lines[0], lines[len(lines)-1], tt.first, tt.last, r.Text)
			}
		})
	}
	s2, _ := newSetOpts(t, map[string]string{"big.txt": numbered(50)}, Options{ReadMaxLines: 5})
	r := run(t, s2, NameRead, map[string]any{"file_path": "big.txt", "limit": 100})
	if d := r.Data.(*ReadData); d.EndLine != 5 || d.TruncatedBy != "max_lines" {
		t.Errorf("line cap: %+v", d)
	}
}

func TestReadErrors(t *testing.T) {
	s, dir := newSet(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Logf("no fifo: %v", err)
	}
	tests := []struct{ input, want string }{
		{`{"file_path":"sub"}`, "sub is a directory; use LS to list it"},
		{`{"file_path":"."}`, ". is a directory"},
		{`{"file_path":"nope.txt"}`, "nope.txt does not exist"},
		{`{"file_path":"a.txt/x"}`, "a.txt/x"},
		{`{"file_path":"a.txt","offset":5}`, "offset 5 is past the end of a.txt, which has 1 line"},
	}
	if _, err := os.Stat(filepath.Join(dir, "fifo")); err == nil {
		tests = append(tests, struct{ input, want string }{`{"file_path":"fifo"}`, "not a regular file"})
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			wantError(t, run(t, s, NameRead, tt.input), tt.want)
		})
	}
}

func TestReadBinaryRefused(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"
	latin1 := strings.Repeat("caf\xe9 cr\xe8me br\xfbl\xe9e \xe0 la fran\xe7aise\xff\xfe\xfd", 20)
	s, _ := newSet(t, map[string]string{"img.png": png, "blob.bin": latin1, "nul.txt": "text\x00more"})
	for _, name := range []string{"img.png", "blob.bin", "nul.txt"} {
		t.Run(name, func(t *testing.T) {
			r := run(t, s, NameRead, map[string]any{"file_path": name})
			wantError(t, r, "looks like a binary file")
			if !strings.Contains(r.Error, "Read shows text files only") {
				t.Errorf("message %q gives no reason", r.Error)
			}
		})
	}
	// Edit refuses binary files too.
	wantError(t, run(t, s, NameEdit, map[string]any{"file_path": "nul.txt", "old_string": "text", "new_string": "x"}), "binary")
}

func TestReadInvalidUTF8Replaced(t *testing.T) {
	text := "good line\nbad \xff byte\nalso good\n"
	s, _ := newSet(t, map[string]string{"mixed.txt": text})
	r := run(t, s, NameRead, map[string]any{"file_path": "mixed.txt"})
	wantOK(t, r)
	d := r.Data.(*ReadData)
	if d.InvalidUTF8Lines != 1 || !strings.Contains(r.Text, "bad \uFFFD byte") || !strings.Contains(r.Text, "1 lines held invalid UTF-8") {
		t.Errorf("data %+v text %q", d, r.Text)
	}
}

func TestReadLongLinesAndCRLF(t *testing.T) {
	long := strings.Repeat("é", 30) // 60 bytes
	s, _ := newSetOpts(t, map[string]string{"long.txt": long + "\nshort\n", "dos.txt": "one\r\ntwo\r\n"}, Options{MaxLineLength: 25})
	r := run(t, s, NameRead, map[string]any{"file_path": "long.txt"})
	wantOK(t, r)
	d := r.Data.(*ReadData)
	want := "     1\t" + strings.Repeat("é", 12) + " … [line cut: 36 more bytes]"
	if first, _, _ := strings.Cut(r.Text, "\n"); first != want || d.LongLines != 1 || d.TotalLines != 2 {
		t.Errorf("first line %q, want %q; %+v", first, want, d)
	}
	r = run(t, s, NameRead, map[string]any{"file_path": "dos.txt"})
	wantOK(t, r)
	d = r.Data.(*ReadData)
	if !d.CRLF || strings.Contains(r.Text, "\r") || !strings.HasPrefix(r.Text, "     1\tone\n     2\ttwo\n") {
		t.Errorf("CRLF file: %+v %q", d, r.Text)
	}
}

// TestReadModifiedExternally: a file changed behind the agent's back is
// reported on the next Read, once.
func TestReadModifiedExternally(t *testing.T) {
	s, dir := newSet(t, map[string]string{"a.go": "package a\n"})
	path := filepath.Join(dir, "a.go")
	r := run(t, s, NameRead, map[string]any{"file_path": "a.go"})
	if d := r.Data.(*ReadData); d.ModifiedExternally {
		t.Fatal("first read reports a modification")
	}
	r = run(t, s, NameRead, map[string]any{"file_path": "a.go"})
	if d := r.Data.(*ReadData); d.ModifiedExternally {
		t.Fatal("unchanged file reported as modified")
	}

	tests := []struct {
		name   string
		change func()
	}{
		{"new content, new mtime", func() {
			writeFile(t, path, "package a\n\nfunc F() {}\n")
			touch(t, path, time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
		}},
		{"same size, new mtime", func() {
			writeFile(t, path, "package b\n\nfunc F() {}\n")
			touch(t, path, time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
		}},
		{"same mtime, new size", func() {
			writeFile(t, path, "package a // grown\n\nfunc F() {}\n")
			touch(t, path, time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			r := run(t, s, NameRead, map[string]any{"file_path": "a.go"})
			wantOK(t, r)
			d := r.Data.(*ReadData)
			if !d.ModifiedExternally || d.PreviousMtime.IsZero() {
				t.Fatalf("change not reported: %+v", d)
			}
			if !strings.HasPrefix(r.Text, "Note: a.go changed since you last read or wrote it") {
				t.Errorf("no note in the text: %q", r.Text)
			}
			var back struct {
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal(r.JSON(), &back); err != nil || back.Data["modified_externally"] != true {
				t.Errorf("JSON data %v (%v)", back.Data, err)
			}
			// Seen now: the next read is clean.
			r = run(t, s, NameRead, map[string]any{"file_path": "a.go"})
			if r.Data.(*ReadData).ModifiedExternally {
				t.Error("reported twice")
			}
		})
	}

	// The agent's own writes are not external changes.
	wantOK(t, run(t, s, NameEdit, map[string]any{"file_path": "a.go", "old_string": "F()", "new_string": "G()"}))
	wantOK(t, run(t, s, NameWrite, map[string]any{"file_path": "a.go", "content": "package a\n"}))
	if r := run(t, s, NameRead, map[string]any{"file_path": "a.go"}); r.Data.(*ReadData).ModifiedExternally {
		t.Error("the agent's own write reported as external")
	}
}

func touch(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}
