package bench

import (
	"index/suffixarray"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// termPatterns find evidence-term candidates in an assistant turn: quoted
// strings, error names with their message, paths and file names, qualified
// and code-like identifiers, and numbers of three or more digits.
var termPatterns = []*regexp.Regexp{
	regexp.MustCompile("\"([^\"\\n]{4,120})\""),
	regexp.MustCompile("'([^'\\n]{4,120})'"),
	regexp.MustCompile("`([^`\\n]{4,120})`"),
	regexp.MustCompile(`\b([A-Z][A-Za-z0-9_]*(?:Error|Exception)(?::[^\n]{4,120})?)`),
	regexp.MustCompile(`((?:[A-Za-z0-9_.~-]*/)+[A-Za-z0-9_.-]+)`),
	regexp.MustCompile(`\b([A-Za-z0-9_-]+\.[A-Za-z][A-Za-z0-9]{0,4})\b`),
	regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b`),
	regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]{3,})\b`),
	regexp.MustCompile(`\b(\d{3,})\b`),
}

// codeLike reports whether a bare word looks like an identifier rather than
// an English word: it has an underscore, a digit, or an inner capital.
func codeLike(w string) bool {
	for i, r := range w {
		if r == '_' || unicode.IsDigit(r) || (i > 0 && unicode.IsUpper(r)) {
			return true
		}
	}
	return false
}

// candidates returns the distinct evidence-term candidates of text.
func candidates(text string) []string {
	seen := make(map[string]bool)
	var out []string
	for pi, re := range termPatterns {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			t := strings.TrimRight(m[1], ".,:;")
			if len(t) < 3 || (len(t) < 4 && pi != len(termPatterns)-1) {
				continue
			}
			if pi == len(termPatterns)-2 && !codeLike(t) {
				continue // bare word: only identifiers count
			}
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// span is one block's place in the evidence index text.
type span struct {
	start, end int
	msg        int // message index, -1 for system
	kind       spanKind
	id         string
}

type spanKind int

const (
	kindOther spanKind = iota
	kindToolResult
	kindSystem    // the system prompt: always sent, so no evidence
	kindUser      // user-authored text
	kindAssistant // an assistant's text or tool call
)

// Evidence indexes a recorded session once, so that each turn's evidence
// terms and where they occur are found without rescanning the history.
//
// Version 2 (Terms, Recall) counts a term a turn uses only if the model
// had to get it from a tool result: it occurs, as a whole token, in an
// earlier tool result, and in no system text, no user text up to that
// turn and no earlier assistant message (a term the model restated itself
// is in its own words from then on). Presence is a whole-token match too:
// "240" is not found inside "1240" or a placeholder's "(1240 lines
// omitted)". The metric cannot be satisfied by keeping lists of terms
// without knowing the future: the terms are whatever a later turn uses —
// any identifier, path, number of three or more digits, error name, or
// span of text the assistant quotes — so a list that covers every term a
// result could give a later turn is the result's own text; and a term
// present only because a placeholder, summary or compressed form happens
// to hold the same token by chance is rare once matching is by whole
// tokens.
//
// Version 1 (TermsV1, RecallV1) is the earlier metric, kept for one
// release so figures can be compared: substring presence, and a term
// excluded only when some user or system text anywhere holds it.
type Evidence struct {
	idx   *suffixarray.Index
	text  string
	spans []span
	// Terms maps an assistant message index to its evidence terms (v2).
	Terms map[int][]string
	// TermsV1 is Terms under the earlier rules.
	TermsV1 map[int][]string
	// where maps a term to the ids of the original blocks holding it as a
	// whole token; whereV1 as a substring.
	where, whereV1 map[string][]string
	orig           map[string]int // block id → original text length
	spanOf         map[string]int // block id → index in spans
	rec            *conv.Conversation
}

// NewEvidence indexes the recording rec and finds every assistant turn's
// evidence terms under both versions.
func NewEvidence(rec *conv.Conversation) *Evidence {
	var sb strings.Builder
	e := &Evidence{
		Terms: make(map[int][]string), TermsV1: make(map[int][]string),
		where: make(map[string][]string), whereV1: make(map[string][]string), orig: make(map[string]int),
		spanOf: make(map[string]int), rec: rec,
	}
	add := func(t string, id string, msg int, kind spanKind) {
		s := span{start: sb.Len(), msg: msg, kind: kind, id: id}
		sb.WriteString(t)
		s.end = sb.Len()
		sb.WriteByte(0)
		e.spanOf[id] = len(e.spans)
		e.spans = append(e.spans, s)
	}
	for i := range rec.System {
		b := &rec.System[i]
		add(b.PlainText(), b.ID, -1, kindSystem)
		e.orig[b.ID] = len(b.PlainText())
	}
	for i := range rec.Messages {
		m := &rec.Messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			kind := kindOther
			t := b.PlainText()
			switch {
			case b.Type == conv.TypeToolResult:
				kind = kindToolResult
			case m.Role == conv.RoleUser && b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser:
				kind = kindUser
			case m.Role == conv.RoleAssistant && b.Type == conv.TypeToolUse:
				kind, t = kindAssistant, b.Name+" "+inputText(b)
			case m.Role == conv.RoleAssistant && b.Type == conv.TypeText:
				kind = kindAssistant
			}
			add(t, b.ID, i, kind)
			e.orig[b.ID] = len(b.PlainText())
		}
	}
	e.text = sb.String()
	e.idx = suffixarray.New([]byte(e.text))
	for i := range rec.Messages {
		m := &rec.Messages[i]
		if m.Role != conv.RoleAssistant {
			continue
		}
		var text strings.Builder
		for j := range m.Blocks {
			b := &m.Blocks[j]
			switch b.Type {
			case conv.TypeText:
				text.WriteString(b.Text)
			case conv.TypeToolUse:
				text.WriteString(inputText(b))
			}
			text.WriteByte('\n')
		}
		for _, t := range candidates(text.String()) {
			if e.isEvidence(t, i) {
				e.Terms[i] = append(e.Terms[i], t)
			}
			if e.isEvidenceV1(t, i) {
				e.TermsV1[i] = append(e.TermsV1[i], t)
			}
		}
	}
	return e
}

// inputText renders a tool call's input for term extraction: the JSON
// string values unescaped, so a path inside the input reads as it does in
// a result.
func inputText(b *conv.Block) string {
	s := string(b.Input)
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\"`, `"`, `\\`, `\`)
	return r.Replace(s)
}

// wordByte reports whether c is part of a token: a letter, digit or
// underscore (bytes of multi-byte runes count as letters).
func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// wholeAt reports whether t occurs in text at off as a whole token: not
// continued by a letter, digit or underscore on a side where t itself
// begins or ends with one.
func wholeAt(text string, off int, t string) bool {
	if off > 0 && wordByte(t[0]) && wordByte(text[off-1]) {
		return false
	}
	end := off + len(t)
	return end >= len(text) || !wordByte(t[len(t)-1]) || !wordByte(text[end])
}

// containsWhole reports whether text holds t as a whole token.
func containsWhole(text, t string) bool {
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], t)
		if i < 0 {
			return false
		}
		if wholeAt(text, from+i, t) {
			return true
		}
		from += i + 1
	}
	return false
}

// isEvidence applies the v2 rules to term t used by assistant message msg
// and records the blocks holding it.
func (e *Evidence) isEvidence(t string, msg int) bool {
	fromTool := false
	var ids []string
	for _, off := range e.idx.Lookup([]byte(t), -1) {
		s := e.spanAt(off)
		if s == nil || off+len(t) > s.end || !wholeAt(e.text, off, t) {
			continue
		}
		switch {
		case s.kind == kindSystem:
			return false
		case s.kind == kindUser && s.msg <= msg:
			return false
		case s.kind == kindAssistant && s.msg < msg:
			return false // restated by the model before
		case s.kind == kindToolResult && s.msg < msg:
			fromTool = true
		}
		ids = append(ids, s.id)
	}
	if !fromTool {
		return false
	}
	slices.Sort(ids)
	e.where[t] = slices.Compact(ids)
	return true
}

// isEvidenceV1 applies the v1 rules: from an earlier tool result, in no
// user or system text anywhere, substring matches.
func (e *Evidence) isEvidenceV1(t string, msg int) bool {
	fromTool := false
	var ids []string
	for _, off := range e.idx.Lookup([]byte(t), -1) {
		s := e.spanAt(off)
		if s == nil || off+len(t) > s.end {
			continue
		}
		switch {
		case s.kind == kindSystem || s.kind == kindUser:
			return false
		case s.kind == kindToolResult && s.msg < msg:
			fromTool = true
		}
		ids = append(ids, s.id)
	}
	if !fromTool {
		return false
	}
	slices.Sort(ids)
	e.whereV1[t] = slices.Compact(ids)
	return true
}

func (e *Evidence) spanAt(off int) *span {
	i := sort.Search(len(e.spans), func(i int) bool { return e.spans[i].end >= off })
	if i == len(e.spans) || off < e.spans[i].start {
		return nil
	}
	return &e.spans[i]
}

// visible splits req into the original blocks it still holds whole and the
// text of everything changed or new (compressed, placeholder, summary).
func (e *Evidence) visible(req *llm.Request) (map[string]bool, string) {
	whole := make(map[string]bool)
	var changed strings.Builder
	visit := func(b *conv.Block) {
		if n, ok := e.orig[b.ID]; ok && b.Meta.Rung == conv.RungFull && n == len(b.PlainText()) {
			whole[b.ID] = true
			return
		}
		changed.WriteString(b.PlainText())
		changed.WriteByte(0)
	}
	for i := range req.System {
		visit(&req.System[i])
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			visit(&req.Messages[i].Blocks[j])
		}
	}
	return whole, changed.String()
}

// Recall returns how many of terms are visible in req as whole tokens. An
// original block still whole in the request shows every term it held.
func (e *Evidence) Recall(req *llm.Request, terms []string) (present int) {
	return len(terms) - len(e.Missing(req, terms))
}

func (e *Evidence) held(t string, whole map[string]bool) bool {
	for _, id := range e.where[t] {
		if whole[id] {
			return true
		}
	}
	return false
}

// RecallV1 is Recall under the v1 rules (substring presence).
func (e *Evidence) RecallV1(req *llm.Request, terms []string) (present int) {
	whole, text := e.visible(req)
	for _, t := range terms {
		found := false
		for _, id := range e.whereV1[t] {
			if whole[id] {
				found = true
				break
			}
		}
		if found || strings.Contains(text, t) {
			present++
		}
	}
	return present
}

// recallRef finds a recall id where changed text names one: a
// placeholder's "— recall b17]", a recall index line "recall b17: …", a
// cut block's "the whole text: recall b17".
// A proxy's "(recall id 3fa8…)" names one too.
// A masked output's file, "tool-outputs/<id>.txt" (Gemini CLI's masking,
// as the gemini strategy writes it), names one too.
var recallRef = regexp.MustCompile(`\brecall (?:id )?([A-Za-z0-9_-]+)|` + maskedDir + `([^\s\]]+)\.txt`)

// Behind returns the ids of original blocks that hold one of missing —
// terms the request does not show — and that the request names by recall
// id (in a placeholder, a compressed form, a summary's or a marker's
// recall index), so the model can get them back with one recall call, and
// the terms they cover.
func (e *Evidence) Behind(req *llm.Request, missing []string) (ids []string, covered int) {
	ids, covered, _ = e.behind(req, missing, nil)
	return ids, covered
}

// behind is Behind where alias maps recall ids that are not recorded
// block ids (a proxy's own) to the recorded blocks they stand for. Of the
// covered terms, compacted counts those whose block only a compaction
// names (its summary's recall index, a carried block, a truncation
// marker); the rest are behind a cleared or compressed result.
func (e *Evidence) behind(req *llm.Request, missing []string, alias map[string]string) (ids []string, covered, compacted int) {
	// recallable maps an original's id to whether only compaction blocks
	// name it.
	recallable := make(map[string]bool)
	name := func(id string, byCompaction bool) {
		only, seen := recallable[id]
		recallable[id] = byCompaction && (!seen || only)
	}
	for i := range req.Messages {
		for _, b := range req.Messages[i].Blocks {
			if n, ok := e.orig[b.ID]; ok && b.Meta.Rung == conv.RungFull && n == len(b.PlainText()) {
				continue // an original shown whole names nothing new
			}
			// A proxy's summary message comes back off the wire as plain
			// text: what a compaction wrote is told by its text too.
			byCompaction := b.Meta.Source == conv.SourceCompactor || b.Type == conv.TypeSummary ||
				b.Type == conv.TypeText && compact.Wrote(b.Text)
			for _, m := range recallRef.FindAllStringSubmatch(b.PlainText(), -1) {
				ref := m[1] + m[2]
				if _, ok := e.orig[ref]; ok {
					name(ref, byCompaction)
				} else if id, ok := alias[ref]; ok {
					name(id, byCompaction)
				}
			}
		}
	}
	if len(recallable) == 0 {
		return nil, 0, 0
	}
	seen := make(map[string]bool)
	for _, t := range missing {
		for _, id := range e.where[t] {
			only, ok := recallable[id]
			if !ok {
				continue
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
			covered++
			if only {
				compacted++
			}
			break
		}
	}
	return ids, covered, compacted
}

// Missing returns the terms of terms that req does not show.
func (e *Evidence) Missing(req *llm.Request, terms []string) []string {
	whole, text := e.visible(req)
	var out []string
	for _, t := range terms {
		if !e.held(t, whole) && !containsWhole(text, t) {
			out = append(out, t)
		}
	}
	return out
}

// original is the recorded text of block id.
func (e *Evidence) original(id string) string {
	i, ok := e.spanOf[id]
	if !ok {
		return ""
	}
	return e.text[e.spans[i].start:e.spans[i].end]
}
