package toolresult

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Structured results of ctxkit's own tools: {"status","data","text",
// "stats","error"}. The generic rule (seed 000 §3.2) keeps status, data and
// error and drops text (a human rendering of data) and stats; the kind of
// the tool then trims data field by field. Field names are read liberally
// (content or text, entries or files, …) so that a tool may name them as
// it likes.

// envelopeKeys are the top-level fields of a structured result.
var envelopeKeys = map[string]bool{"status": true, "data": true, "text": true, "stats": true, "error": true}

// parseEnvelope reports whether raw is a structured result: a JSON object
// with status or data and no fields besides the five.
func parseEnvelope(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	if _, ok := m["status"]; !ok {
		if _, ok := m["data"]; !ok {
			return nil, false
		}
	}
	for k := range m {
		if !envelopeKeys[k] {
			return nil, false
		}
	}
	return m, true
}

// longString is the length above which any string field not handled by
// the kind's own rule is cut to its head and tail.
const longString = 2000

// structured compresses an envelope. The known kinds are rendered as
// text like the text the model read at rung 0: a header line with the
// facts the table keeps (path, mtime, totals, exit code), the kept lines,
// and a note. Anything else, or a result whose data lacks the fields a
// renderer needs, becomes compact JSON of status, trimmed data and error.
// It also returns the compact JSON form, kept as the block's Structured so
// that later rungs still read fields.
func (cp *Compressor) structured(env map[string]json.RawMessage, c Call, isErr bool, n *note) (text string, form json.RawMessage) {
	var data map[string]any
	if raw := env["data"]; !isNull(raw) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			data, _ = v.(map[string]any)
		}
	}
	var body string
	if data != nil {
		sub := note{parts: append([]string(nil), n.parts...)}
		if r, ok := cp.render(env, data, c, isErr, &sub); ok {
			sub.id = n.id
			text = r
			if !sub.empty() {
				text += "\n" + sub.line()
				n.said = true
			}
		}
	}
	said := n.said
	form, body = cp.jsonForm(env, data, c, isErr, n)
	if text == "" {
		text = body
	} else {
		n.said = said // the JSON form's note is not what the model sees
	}
	return text, form
}

// jsonForm is the generic rule: status, data (trimmed by kind) and error,
// with text and stats dropped and what was left out said in "omitted".
// It returns the form without the note (for Structured) and with it (for
// the model).
func (cp *Compressor) jsonForm(env map[string]json.RawMessage, data map[string]any, c Call, isErr bool, n *note) (json.RawMessage, string) {
	var dropped []string
	for _, k := range []string{"text", "stats"} {
		if v, ok := env[k]; ok && !isNull(v) {
			dropped = append(dropped, k)
		}
	}
	rawData := compact(env["data"])
	if data != nil {
		kind := c.Kind
		if isErr {
			kind = KindOther
		}
		cp.trimData(data, kind, c, n)
		rawData = marshal(data)
	}
	if len(dropped) > 0 {
		n.parts = append([]string{"dropped " + strings.Join(dropped, ", ")}, n.parts...)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(k string, v json.RawMessage) {
		if len(v) == 0 {
			return
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(marshal(k))
		b.WriteByte(':')
		b.Write(v)
	}
	field("status", compact(env["status"]))
	field("data", rawData)
	if e := env["error"]; !isNull(e) {
		field("error", compact(e))
	}
	form := append(json.RawMessage(nil), b.Bytes()...)
	form = append(form, '}')
	if !n.empty() {
		field("omitted", marshal(n.text()))
		n.parts = nil
	}
	b.WriteByte('}')
	return form, b.String()
}

// trimData applies the kind's rule to data in the JSON form, recording
// what it left out.
func (cp *Compressor) trimData(m map[string]any, kind Kind, c Call, n *note) {
	done := map[string]bool{}
	path := c.Path
	if p, ok := m["path"].(string); ok && p != "" {
		path = p
	}
	switch kind {
	case KindRead:
		if k, s, ok := stringField(m, "content", "text", "output", "file_content"); ok {
			lines := splitLines(s)
			kept := cp.head(lines, cp.lim.ReadLines, cp.lim.MaxChars, n)
			if rest := len(lines) - len(kept); rest > 0 || cutAny(lines, cp.lim.LineChars) {
				m[k] = strings.Join(kept, "\n")
				m["truncated"] = true
				if rest > 0 {
					where := ""
					if path != "" {
						where = " of " + path
					}
					n.add(fmt.Sprintf("%s: … %s more lines%s not shown (%s total)", k, textfmt.Thousands(rest), where, textfmt.Thousands(len(lines))))
				}
			}
			done[k] = true
		}
	case KindLS:
		cp.trimList(m, done, n, cp.lim.LSEntries, "entries", "total_entries", "",
			"entries", "files", "items", "children", "paths", "results")
	case KindGrep:
		pattern := c.Pattern
		if p, ok := m["pattern"].(string); ok && p != "" {
			pattern = p
		}
		cp.trimList(m, done, n, cp.lim.GrepMatches, "matches", "total_matches", pattern,
			"matches", "results", "hits", "files")
	case KindEdit, KindWrite:
		if k, s, ok := stringField(m, "diff", "diff_preview", "preview", "patch", "snippet"); ok {
			lines := splitLines(s)
			kept := cp.head(lines, cp.lim.DiffLines, cp.lim.MaxChars, n)
			m[k] = strings.Join(kept, "\n")
			if rest := len(lines) - len(kept); rest > 0 {
				n.add(fmt.Sprintf("%s: … %s more lines (%s total)", k, textfmt.Thousands(rest), textfmt.Thousands(len(lines))))
			}
			done[k] = true
		}
		for _, k := range []string{"content", "file_text", "new_content", "old_content", "old_string",
			"new_string", "original", "edits"} {
			if v, ok := m[k]; ok {
				delete(m, k)
				n.add(fmt.Sprintf("%s dropped (%s chars)", k, textfmt.Thousands(len(marshal(v)))))
			}
		}
	case KindBash:
		if k, s, ok := stringField(m, "stdout", "output"); ok {
			lines := splitLines(s)
			kept := cp.head(lines, cp.lim.HeadLines, cp.lim.MaxChars/2, n)
			m[k] = strings.Join(kept, "\n")
			if rest := len(lines) - len(kept); rest > 0 {
				n.add(fmt.Sprintf("%s: … %s more lines (%s total)", k, textfmt.Thousands(rest), textfmt.Thousands(len(lines))))
			}
			done[k] = true
		}
		if s, ok := m["stderr"].(string); ok {
			lines := splitLines(s)
			kept := cp.tail(lines, cp.lim.TailLines, cp.lim.MaxChars/2, n)
			m["stderr"] = strings.Join(kept, "\n")
			if rest := len(lines) - len(kept); rest > 0 {
				n.add(fmt.Sprintf("stderr: … %s earlier lines (%s total)", textfmt.Thousands(rest), textfmt.Thousands(len(lines))))
			}
			done["stderr"] = true
		}
	}
	// Whatever the kind's rule did not cover: long strings keep their head
	// and tail.
	for _, k := range sortedKeys(m) {
		s, ok := m[k].(string)
		if !ok || done[k] || len(s) <= longString {
			continue
		}
		lines := splitLines(s)
		var sub note
		kept := cp.headTail(lines, &sub)
		if len(lines) == 1 {
			kept = []string{cutLine(s, longString)}
		}
		m[k] = strings.Join(kept, "\n")
		n.add(fmt.Sprintf("%s cut (%s chars)", k, textfmt.Thousands(len(s))))
	}
}

// trimList keeps the first max items of the first list field found and
// records the true total.
func (cp *Compressor) trimList(m map[string]any, done map[string]bool, n *note, max int, what, totalKey, pattern string, keys ...string) {
	for _, k := range keys {
		list, ok := m[k].([]any)
		if !ok {
			continue
		}
		done[k] = true
		if len(list) <= max {
			return
		}
		total := len(list)
		m[k] = list[:max]
		if _, ok := m[totalKey]; !ok {
			m[totalKey] = total
		}
		m["truncated"] = true
		where := ""
		if pattern != "" {
			where = " for " + quote(pattern, 80)
		}
		n.add(fmt.Sprintf("%s: … %s more %s%s (%s total)", k, textfmt.Thousands(total-max), what, where, textfmt.Thousands(total)))
		return
	}
}

func stringField(m map[string]any, keys ...string) (string, string, bool) {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return k, s, true
		}
	}
	return "", "", false
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func isNull(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) == 0 || string(t) == "null"
}

// marshal encodes v without HTML escaping; map keys come out sorted.
func marshal(v any) json.RawMessage {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func compact(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
