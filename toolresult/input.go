package toolresult

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Rung 1 for what the agent wrote: a tool call's input (Write contents,
// Edit and MultiEdit strings, str_replace_editor's file_text, apply_patch
// bodies, long Bash heredocs) is compressed like a result once its round
// has ended. The input stays a JSON object with the same keys in the same
// order (providers validate it against the tool's schema); only string
// values longer than InputLimits.String characters change, to their first
// lines and a note with their size, a content hash and the recall id:
//
//	{"file_path":"src/store.go","content":"package store\n\nimport (\n…\n[… 240 more lines not shown (9,812 chars in all, sha256 1a2b3c4d5e6f); recall b17]"}

// InputLimits bound the compressed form of a tool call's input.
type InputLimits struct {
	// String is the longest string value kept whole, in characters
	// (DefaultInputString when 0).
	String int
	// Lines is how many first lines of a longer string are kept
	// (DefaultInputLines when 0).
	Lines int
}

// Defaults of InputLimits: a string over 1,000 characters (about 250
// tokens) keeps its first 10 lines, the same head an Edit or Write result
// keeps of its diff (package doc).
const (
	DefaultInputString = 1_000
	DefaultInputLines  = 10
)

func (l InputLimits) withDefaults() InputLimits {
	if l.String <= 0 {
		l.String = DefaultInputString
	}
	if l.Lines <= 0 {
		l.Lines = DefaultInputLines
	}
	return l
}

// CompressInput returns the rung-1 form of a tool call's input: every
// string value longer than lim.String characters cut to its first
// lim.Lines lines (at most lim.String characters of them) and a note
// naming its size, its hash and recall id. ok is false when nothing was
// long enough to cut, when the result would not be shorter, or when the
// input is not a JSON object (it is then left alone: a provider would
// reject anything else).
func CompressInput(input json.RawMessage, recall string, lim InputLimits) (json.RawMessage, bool) {
	lim = lim.withDefaults()
	return rewriteStrings(input, func(s string) (string, bool) {
		if utf8.RuneCountInString(s) <= lim.String {
			return s, false
		}
		head := headLines(s, lim.Lines, lim.String)
		return head + "\n" + inputNote(s, len(head), recall), true
	})
}

// ClipInput cuts every string value of a tool call's input longer than
// max characters to its head and tail around a note naming its size, its
// hash and recall id: the last resort when a call's input alone does not
// fit the window. ok as for CompressInput.
func ClipInput(input json.RawMessage, maxChars int, recall string) (json.RawMessage, bool) {
	maxChars = max(maxChars, 40)
	return rewriteStrings(input, func(s string) (string, bool) {
		if len(s) <= maxChars {
			return s, false
		}
		return ClipText(s, maxChars, fmt.Sprintf("[… %s cut to fit the context window (%s, sha256 %s); recall %s]", plural(lineCount(s), "line"), plural(len(s), "char"), hash(s), recall)), true
	})
}

// ClipText keeps about maxChars characters of s, two thirds from its head
// and one third from its tail, cut at line ends where one is near and at
// rune boundaries always, with note between them on a line of its own.
func ClipText(s string, maxChars int, note string) string {
	if len(s) <= maxChars {
		return s
	}
	maxChars = max(maxChars, 0)
	head := runeStart(s, maxChars*2/3)
	if i := strings.LastIndexByte(s[:head], '\n'); i > head/2 {
		head = i + 1
	}
	tail := runeStart(s, len(s)-(maxChars-head))
	if tail < head {
		tail = head
	}
	if i := strings.IndexByte(s[tail:], '\n'); i >= 0 && i < (len(s)-tail)/2 {
		tail += i + 1
	}
	return s[:head] + "\n" + note + "\n" + s[tail:]
}

// runeStart moves i back to the start of the rune it falls in.
func runeStart(s string, i int) int {
	i = min(max(i, 0), len(s))
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func inputNote(s string, kept int, recall string) string {
	more := lineCount(strings.TrimPrefix(s[kept:], "\n"))
	what := "more lines"
	if more == 1 {
		what = "more line"
	}
	return fmt.Sprintf("[… %s %s not shown (%s in all, sha256 %s); recall %s]", textfmt.Thousands(more), what, plural(len(s), "char"), hash(s), recall)
}

// headLines is the first n lines of s, at most maxChars bytes of them
// (cut at a rune boundary).
func headLines(s string, n, maxChars int) string {
	end := 0
	for i := 0; i < n && end < len(s); i++ {
		j := strings.IndexByte(s[end:], '\n')
		if j < 0 {
			end = len(s)
			break
		}
		end += j + 1
	}
	if end > maxChars {
		end = runeStart(s, maxChars)
	}
	return strings.TrimRight(s[:end], "\n")
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// rewriteStrings re-encodes a JSON object with every string value (at any
// depth; keys untouched) passed through f, keeping keys in their order.
// It reports false when the input is not an object, when f changed
// nothing, or when the result is not shorter.
func rewriteStrings(input json.RawMessage, f func(string) (string, bool)) (json.RawMessage, bool) {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return input, false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var out bytes.Buffer
	changed := false
	str := func(s string) string {
		r, ok := f(s)
		changed = changed || ok
		return r
	}
	if err := jsonenc.Reencode(dec, &out, nil, str); err != nil || !changed {
		return input, false
	}
	if dec.More() {
		return input, false
	}
	if out.Len() >= len(trimmed) || !json.Valid(out.Bytes()) {
		return input, false
	}
	return json.RawMessage(out.Bytes()), true
}
