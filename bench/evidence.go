package bench

import (
	"index/suffixarray"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

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
	length     int // len of the block's text, to tell an unchanged block
}

type spanKind int

const (
	kindOther spanKind = iota
	kindToolResult
	kindUserOrSystem // system prompt or user-authored text: evidence cannot come from here
)

// Evidence indexes a recorded session once, so that each turn's evidence
// terms and where they occur are found without rescanning the history.
type Evidence struct {
	idx   *suffixarray.Index
	spans []span
	// Terms maps an assistant message index to its evidence terms.
	Terms map[int][]string
	// where maps a term to the ids of the original blocks containing it.
	where map[string][]string
	orig  map[string]int // block id → original text length
}

// NewEvidence indexes the recording rec: every assistant turn's evidence
// terms are those it uses (text and tool inputs) that occurred in an
// earlier tool result and in no system or user text.
func NewEvidence(rec *conv.Conversation) *Evidence {
	var sb strings.Builder
	e := &Evidence{Terms: make(map[int][]string), where: make(map[string][]string), orig: make(map[string]int)}
	add := func(b *conv.Block, msg int, kind spanKind) {
		t := b.PlainText()
		s := span{start: sb.Len(), msg: msg, kind: kind, id: b.ID, length: len(t)}
		sb.WriteString(t)
		s.end = sb.Len()
		sb.WriteByte(0)
		e.spans = append(e.spans, s)
		e.orig[b.ID] = len(t)
	}
	for i := range rec.System {
		add(&rec.System[i], -1, kindUserOrSystem)
	}
	for i := range rec.Messages {
		m := &rec.Messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			kind := kindOther
			switch {
			case b.Type == conv.TypeToolResult:
				kind = kindToolResult
			case m.Role == conv.RoleUser && b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser:
				kind = kindUserOrSystem
			}
			add(b, i, kind)
		}
	}
	e.idx = suffixarray.New([]byte(sb.String()))
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

// isEvidence reports whether term t used by assistant message msg came from
// an earlier tool result and from no user or system text, and records the
// blocks that contain it.
func (e *Evidence) isEvidence(t string, msg int) bool {
	offs := e.idx.Lookup([]byte(t), -1)
	fromTool := false
	var ids []string
	for _, off := range offs {
		s := e.spanAt(off)
		if s == nil || off+len(t) > s.end {
			continue
		}
		switch {
		case s.kind == kindUserOrSystem:
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
	e.where[t] = slices.Compact(ids)
	return true
}

func (e *Evidence) spanAt(off int) *span {
	i := sort.Search(len(e.spans), func(i int) bool { return e.spans[i].end >= off })
	if i == len(e.spans) || off < e.spans[i].start {
		return nil
	}
	return &e.spans[i]
}

// Recall returns how many of terms are visible anywhere in req. An original
// block that is still whole in the request shows every term it held;
// anything changed or new (compressed, placeholder, summary) is searched.
func (e *Evidence) Recall(req *llm.Request, terms []string) (present int) {
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
	text := changed.String()
	for _, t := range terms {
		found := false
		for _, id := range e.where[t] {
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
