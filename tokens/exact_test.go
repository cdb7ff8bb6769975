package tokens

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestExactKnownCounts(t *testing.T) {
	// Reference counts from OpenAI's tiktoken (the token ids are in the
	// tokenizer module's own tests).
	tests := []struct {
		encoding, text string
		want           int
	}{
		{"o200k_base", "", 0},
		{"o200k_base", "hello world", 2},
		{"o200k_base", "hello   world", 3},
		{"o200k_base", "'RE", 2},
		{"o200k_base", "supercalifragilistic", 6},
		{"o200k_base", "We know what we are, but know not what we may be.", 14},
		{"cl100k_base", "hello world", 2},
		{"cl100k_base", "'RE", 1},
		{"cl100k_base", "supercalifragilistic", 7},
	}
	for _, tt := range tests {
		e, err := NewExact(tt.encoding)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Count(tt.text); got != tt.want {
			t.Errorf("%s: Count(%q) = %d, want %d", tt.encoding, tt.text, got, tt.want)
		}
		if e.Encoding() != tt.encoding {
			t.Errorf("Encoding() = %q, want %q", e.Encoding(), tt.encoding)
		}
	}
}

func TestExactUnknownEncoding(t *testing.T) {
	for _, name := range []string{"", "p50k_base", "O200K_BASE", "claude"} {
		_, err := NewExact(name)
		if !errors.Is(err, ErrUnknownEncoding) {
			t.Errorf("NewExact(%q) error = %v, want ErrUnknownEncoding", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "o200k_base") || !strings.Contains(err.Error(), "cl100k_base") {
			t.Errorf("NewExact(%q) error %q does not list the supported encodings", name, err)
		}
	}
}

func TestExactInvalidUTF8(t *testing.T) {
	e, err := NewExact("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	// Invalid bytes count as U+FFFD, as tiktoken decodes them.
	if got, want := e.Count("ab\xffcd"), e.Count("ab\uFFFDcd"); got != want {
		t.Errorf("Count with an invalid byte = %d, want %d (as U+FFFD)", got, want)
	}
}

// TestExactConcurrent counts from several goroutines at once; run with
// -race.
func TestExactConcurrent(t *testing.T) {
	e, err := NewExact("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"func main() {\n\tfmt.Println(\"hi\")\n}\n", "The quick brown fox.", "缓存设计说明", `{"a": [1, 2, 3]}`}
	want := make([]int, len(texts))
	for i, s := range texts {
		want[i] = e.Count(s)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(texts)
				if got := e.Count(texts[k]); got != want[k] {
					t.Errorf("concurrent Count(%q) = %d, want %d", texts[k], got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
}
