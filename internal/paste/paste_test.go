package paste

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestFilter(t *testing.T) {
	long := strings.Repeat("x", MaxInline+1)
	tests := []struct {
		name, in, out string
		// expanded is what Expand makes of out.
		expanded string
	}{
		{"typing passes through", "hello\r", "hello\r", "hello\r"},
		{"a lone Esc passes through", "\x1b", "\x1b", "\x1b"},
		{"Esc then a key", "\x1bb", "\x1bb", "\x1bb"},
		{"arrow keys pass through", "\x1b[A\x1b[D", "\x1b[A\x1b[D", "\x1b[A\x1b[D"},
		{"Alt-Enter goes on to another line", "a\x1b\rb", "a\\\rb", "a\\\rb"},
		{"a short one-line paste is typed", "say \x1b[200~hi there\x1b[201~!\r", "say hi there!\r", "say hi there!\r"},
		{"its final newline is dropped", "\x1b[200~hi\r\x1b[201~", "hi", "hi"},
		{"a multi-line paste is one piece", "\x1b[200~a\rb\r\nc\x1b[201~ go\r", "[Pasted text #1 +3 lines] go\r", "a\nb\nc go\r"},
		{"a long line too", "\x1b[200~" + long + "\x1b[201~\r", "[Pasted text #1, 1001 bytes]\r", long + "\r"},
		{"a tab would complete", "\x1b[200~a\tb\x1b[201~", "[Pasted text #1, 3 bytes]", "a\tb"},
		{"two pastes", "\x1b[200~1\r2\x1b[201~ and \x1b[200~3\r4\x1b[201~", "[Pasted text #1 +2 lines] and [Pasted text #2 +2 lines]", "1\n2 and 3\n4"},
		{"a paste cut off by the end of input", "\x1b[200~a\rb", "[Pasted text #1 +2 lines]", "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				wrap func(string) io.Reader
			}{{"whole", whole}, {"byte at a time", oneByte}} {
				var f Filter
				var out strings.Builder
				if err := f.Copy(&out, r.wrap(tt.in)); err != nil {
					t.Fatal(err)
				}
				if out.String() != tt.out {
					t.Errorf("%s: editor got %q, want %q", r.name, out.String(), tt.out)
				}
				if got := f.Expand(out.String()); got != tt.expanded {
					t.Errorf("%s: expanded %q, want %q", r.name, got, tt.expanded)
				}
			}
		})
	}
}

// TestFilterByteAtATime: a paste's markers split across reads are still
// found (a terminal writes a marker whole, but a large paste arrives in
// many reads).
func TestFilterByteAtATime(t *testing.T) {
	var f Filter
	var out strings.Builder
	in := "x\x1b[200~" + strings.Repeat("line\r", 500) + "\x1b[201~\r"
	if err := f.Copy(&out, iotest.OneByteReader(strings.NewReader(in))); err != nil {
		t.Fatal(err)
	}
	if want := "x[Pasted text #1 +500 lines]\r"; out.String() != want {
		t.Fatalf("editor got %q, want %q", out.String(), want)
	}
	if got := f.Expand(out.String()); got != "x"+strings.Repeat("line\n", 500)+"\r" {
		t.Errorf("expanded %q", got)
	}
	if got := f.Expand(out.String()); got != out.String() {
		t.Errorf("a paste expanded twice: %q", got)
	}
}

func oneByte(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) }
func whole(s string) io.Reader   { return strings.NewReader(s) }
