package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/toolresult"
)

// The shrink rung's values: the parts of a message other than tool
// results that the proxy may cut to head and tail when nothing else gets
// a request under the hard limit — text blocks and text parts, string
// contents, tool call inputs. Thinking blocks, images and anything the
// scanner does not know are never among them.

// valueKind says how a value is written back.
type valueKind uint8

const (
	valueString valueKind = iota // a JSON string of text
	valueObject                  // an Anthropic tool_use input: a JSON object
	valueArgs                    // an OpenAI tool call's arguments: a JSON string holding JSON
)

// valueRef is one cuttable value of a message.
type valueRef struct {
	sp   span
	kind valueKind
	str  bool // the message's whole content (a string)
}

// minCutBytes: a value this small is never cut, so it is never hashed.
const minCutBytes = 4 * compact.ShrinkFloor

var kText = []byte(`"text"`)

// cutValues lists m's cuttable values at least minCutBytes long.
func cutValues(body []byte, m message) []valueRef {
	if m.Role == "tool" || !m.Content.ok() && len(m.Blocks) == 0 {
		return nil
	}
	var out []valueRef
	add := func(v valueRef) {
		if v.sp.e-v.sp.s >= minCutBytes {
			out = append(out, v)
		}
	}
	switch {
	case m.Str:
		add(valueRef{sp: m.Content, kind: valueString, str: true})
	case m.Content.ok() && body[m.Content.s] == '[':
		elems(body, m.Content, func(_ int, e span) error {
			if body[e.s] != '{' || e.e-e.s < minCutBytes {
				return nil
			}
			var typ string
			var text span
			members(body, e, func(k []byte, v span) error {
				switch {
				case bytes.Equal(k, kType):
					typ = str(body, v)
				case bytes.Equal(k, kText) && body[v.s] == '"':
					text = v
				}
				return nil
			})
			switch typ {
			case "text", "input_text", "output_text":
				if text.ok() {
					add(valueRef{sp: text, kind: valueString})
				}
			}
			return nil
		})
	}
	for _, b := range m.Blocks {
		if b.Type != "tool_use" || !b.Input.ok() || b.Sealed {
			continue
		}
		switch body[b.Input.s] {
		case '{':
			add(valueRef{sp: b.Input, kind: valueObject})
		case '"':
			add(valueRef{sp: b.Input, kind: valueArgs})
		}
	}
	return out
}

// valueHash names a value by its bytes.
func valueHash(body []byte, sp span) string {
	h := sha256.Sum256(body[sp.s:sp.e])
	return fmt.Sprintf("%x", h[:hashLen/2])
}

// shrinksOf maps value hash → replacement JSON, from shrink decisions.
func shrinksOf(ds []store.Decision) (map[string][]byte, error) {
	var ss map[string][]byte
	for _, d := range ds {
		if d.Kind != store.KindShrink {
			continue
		}
		var repl []json.RawMessage
		if err := json.Unmarshal(d.Data, &repl); err != nil || len(repl) != len(d.Hashes) {
			return nil, fmt.Errorf("shrink decision %d: replacements do not match its %d hashes", d.Seq, len(d.Hashes))
		}
		if ss == nil {
			ss = map[string][]byte{}
		}
		for i, h := range d.Hashes {
			ss[h] = repl[i]
		}
	}
	return ss, nil
}

// cutChars is how many characters of text keep about tokens tokens, for
// text whose JSON form is jsonBytes long (escapes count).
func cutChars(text string, jsonBytes, tokens int) int {
	keep := max(tokens-compact.ShrinkNote, 8) * 4
	if jsonBytes > 0 && len(text) > 0 {
		keep = int(float64(keep) * float64(len(text)) / float64(jsonBytes))
	}
	return max(keep, 32)
}

// cutNote names a cut and how to get the whole back.
func cutNote(text string, keep int, what, id, recallTool string) string {
	lines := strings.Count(text, "\n") + 1
	kept := strings.Count(text[:min(keep, len(text))], "\n")
	how := fmt.Sprintf("recall id %s", id)
	if recallTool != "" {
		how = fmt.Sprintf("call %s with id %q", recallTool, id)
	}
	return fmt.Sprintf("[… cut by ctxkit to fit the context window: about %d of %d lines left out; the whole %s: %s]", max(lines-kept-1, 1), lines, what, how)
}

// cutValue returns the replacement JSON for a value cut to about tokens
// tokens, and the original text kept for recall.
func cutValue(body []byte, v valueRef, tokens int, id, recallTool string) (repl []byte, original string, ok bool) {
	raw := body[v.sp.s:v.sp.e]
	switch v.kind {
	case valueString:
		text := str(body, v.sp)
		n := cutChars(text, len(raw), tokens)
		if n >= len(text) {
			return nil, "", false
		}
		return jsonString(toolresult.ClipText(text, n, cutNote(text, n, "text", id, recallTool))), text, true
	case valueObject:
		in, ok := clipInput(raw, tokens, id)
		return in, string(raw), ok
	case valueArgs:
		args := str(body, v.sp)
		if in, ok := clipInput([]byte(args), tokens, id); ok {
			return jsonString(string(in)), args, true
		}
		n := cutChars(args, len(raw), tokens)
		if n >= len(args) {
			return nil, "", false
		}
		return jsonString(toolresult.ClipText(args, n, cutNote(args, n, "arguments", id, recallTool))), args, true
	}
	return nil, "", false
}

// clipInput cuts a tool call input's string values (keys kept) until it
// is about tokens tokens, as compact's shrink rung does.
func clipInput(raw []byte, tokens int, id string) ([]byte, bool) {
	if !json.Valid(raw) || len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' {
		return nil, false
	}
	chars := max(tokens-compact.ShrinkNote, 8) * 4
	var in json.RawMessage
	ok := false
	for n := chars; n >= 40; n /= 2 {
		if in, ok = toolresult.ClipInput(raw, n, id); !ok {
			return nil, false
		}
		if tokensOf(len(in)) <= tokens {
			break
		}
	}
	return in, ok && len(in) < len(raw)
}
