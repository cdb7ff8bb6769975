package toolresult

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Limits are how much of each kind of result rung 1 keeps. Zero fields
// take the defaults of [DefaultLimits].
type Limits struct {
	ReadLines   int // lines of a file read (500)
	LSEntries   int // entries of a listing (10)
	GrepMatches int // matches of a search (5)
	DiffLines   int // lines of an edit's or write's diff (10)
	HeadLines   int // stdout head of a command, head of anything else (20)
	TailLines   int // stderr tail of a command, tail of anything else (20)
	// LineChars cuts longer lines (minified code, base64), saying how much
	// was cut (400).
	LineChars int
	// MaxChars caps the whole compressed form whatever the line counts
	// allow (40,000, about 10k tokens).
	MaxChars int
}

// DefaultLimits returns the seed 000 §3.2 table.
func DefaultLimits() Limits {
	return Limits{ReadLines: 500, LSEntries: 10, GrepMatches: 5, DiffLines: 10, HeadLines: 20, TailLines: 20,
		LineChars: 400, MaxChars: 40_000}
}

// Compressor compresses tool results to rung 1 with its limits.
type Compressor struct {
	lim Limits
}

// New returns a Compressor with lim, zero fields filled from the defaults.
func New(lim Limits) *Compressor {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&lim.ReadLines, d.ReadLines)
	fill(&lim.LSEntries, d.LSEntries)
	fill(&lim.GrepMatches, d.GrepMatches)
	fill(&lim.DiffLines, d.DiffLines)
	fill(&lim.HeadLines, d.HeadLines)
	fill(&lim.TailLines, d.TailLines)
	fill(&lim.LineChars, d.LineChars)
	fill(&lim.MaxChars, d.MaxChars)
	return &Compressor{lim: lim}
}

// Compress returns the rung-1 form of result with the default limits; see
// [Compressor.Compress].
func Compress(result, call *conv.Block) (conv.Block, bool) {
	return New(Limits{}).Compress(result, call)
}

// Compress returns the rung-1 form of result, the tool_result answering
// call (which may be nil when the call is unknown): same id, Meta.Rung 1,
// token count reset. It returns false, and a zero Block, when result is
// not a rung-0 compactable tool result or the compressed form would not
// be smaller than what the model saw.
func (cp *Compressor) Compress(result, call *conv.Block) (conv.Block, bool) {
	if result == nil || result.Type != conv.TypeToolResult || result.Meta.Rung != conv.RungFull ||
		!result.Meta.Compactable || result.Meta.Pinned {
		return conv.Block{}, false
	}
	var c Call
	if call != nil {
		c = Classify(call.Name, call.Input)
	} else {
		c = Classify(result.Name, nil)
	}
	orig := result.ResultText()
	images := 0
	for i := range result.Content {
		if result.Content[i].Type == conv.TypeImage {
			images++
		}
	}
	n := note{id: result.ID}
	if images > 0 {
		n.add(fmt.Sprintf("%s dropped", plural(images, "image")))
	}

	var text string
	var structured json.RawMessage
	if env, ok := parseEnvelope(result.Structured); ok {
		text, structured = cp.structured(env, c, result.IsError, &n)
	} else if env, ok := parseEnvelope(json.RawMessage(strings.TrimSpace(orig))); ok && len(result.Structured) == 0 {
		text, _ = cp.structured(env, c, result.IsError, &n)
	} else {
		text = cp.plain(orig, c, result.IsError, &n)
	}
	// A form that left nothing out worth saying (a trailing newline) is no
	// rung 1: every rung-1 form says what it dropped.
	if len(text) >= len(orig)+images*imageChars || !n.said {
		return conv.Block{}, false
	}
	nb := result.Clone()
	nb.SetText(text, conv.RungCompressed)
	nb.Structured = structured
	return nb, true
}

// imageChars is what an image weighs against text when comparing sizes:
// conv charges 2,000 tokens, about 8,000 characters.
const imageChars = 4 * conv.ImageTokens

// note collects what a compressed form left out, to say so in one line
// that ends with the recall id.
type note struct {
	id    string
	parts []string
	said  bool // the note went into the output
}

func (n *note) add(s string) { n.parts = append(n.parts, s) }

func (n *note) addOnce(s string) {
	for _, p := range n.parts {
		if p == s {
			return
		}
	}
	n.add(s)
}

func (n *note) empty() bool { return len(n.parts) == 0 }

// text is the note without brackets: "… 1,240 more lines (1,740 total);
// recall b17".
func (n *note) text() string {
	if n.empty() {
		return ""
	}
	n.said = true
	s := strings.Join(n.parts, "; ")
	if n.id != "" {
		s += "; recall " + n.id
	}
	return s
}

// line is the note as a bracketed line for plain text.
func (n *note) line() string {
	if n.empty() {
		return ""
	}
	return "[" + n.text() + "]"
}

// plural says "1 line", "2 lines", "3 matches", "4 entries".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	switch {
	case strings.HasSuffix(what, "ch"), strings.HasSuffix(what, "sh"), strings.HasSuffix(what, "s"):
		what += "es"
	case strings.HasSuffix(what, "y"):
		what = what[:len(what)-1] + "ies"
	default:
		what += "s"
	}
	return textfmt.Thousands(n) + " " + what
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}
