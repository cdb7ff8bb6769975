package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/textfmt"
)

// rewrite is a request with a session's decisions applied: the splices
// that turn the client's body into the upstream body, and the view a
// Decider sees.
type rewrite struct {
	splices  []splice
	removed  []bool   // per message of the request: replaced by a summary
	cleared  []string // hashes of the blocks cleared in this request
	sumTexts []string // summaries appended to the head message
	head     int      // index of the head message (-1: none)
	size     int      // bytes of the upstream body
	delta    []int    // per message: bytes its cut values gained (negative)
	shrunk   map[string]bool
}

// clearSet maps block hash → placeholder text, from clear decisions.
type clearSet map[string]string

func clearsOf(ds []store.Decision) (clearSet, error) {
	cs := clearSet{}
	for _, d := range ds {
		if d.Kind != store.KindClear {
			continue
		}
		texts, err := strs(d.Data)
		if err != nil || len(texts) != len(d.Hashes) {
			return nil, fmt.Errorf("clear decision %d: placeholders do not match its %d hashes", d.Seq, len(d.Hashes))
		}
		for i, h := range d.Hashes {
			cs[h] = texts[i]
		}
	}
	return cs, nil
}

// headIndex is the first user message: it carries the summaries.
func headIndex(r *request) int {
	for i, m := range r.Messages {
		if m.Role == "user" {
			return i
		}
	}
	return -1
}

// applyDecisions applies ds to r. summary returns the text stored under a
// summary decision's key.
func applyDecisions(r *request, ds []store.Decision, summary func(key string) (string, error)) (*rewrite, error) {
	rw := &rewrite{removed: make([]bool, len(r.Messages)), head: headIndex(r)}
	cs, err := clearsOf(ds)
	if err != nil {
		return nil, err
	}
	idx := make(map[string]int, len(r.Messages))
	for i, m := range r.Messages {
		if _, dup := idx[m.Hash]; !dup {
			idx[m.Hash] = i
		}
	}
	for _, d := range ds {
		if d.Kind != store.KindSummary || len(d.Hashes) == 0 || rw.head < 0 {
			continue
		}
		i, ok := idx[d.Hashes[0]]
		if !ok || i <= rw.head || i+len(d.Hashes) >= len(r.Messages) {
			continue // the client no longer sends that history (it compacted itself)
		}
		match := true
		for j, h := range d.Hashes {
			if r.Messages[i+j].Hash != h || rw.removed[i+j] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		text, err := summary(d.Key)
		if err != nil {
			return nil, fmt.Errorf("summary decision %d: %w", d.Seq, err)
		}
		for j := range d.Hashes {
			rw.removed[i+j] = true
		}
		rw.sumTexts = append(rw.sumTexts, text)
	}
	body := r.Body
	ss, err := shrinksOf(ds)
	if err != nil {
		return nil, err
	}
	var headStr []byte // the head's string content, cut
	if len(ss) > 0 {
		rw.delta = make([]int, len(r.Messages))
		rw.shrunk = map[string]bool{}
		for i, m := range r.Messages {
			if rw.removed[i] {
				continue
			}
			for _, v := range cutValues(body, m) {
				h := valueHash(body, v.sp)
				repl, ok := ss[h]
				if !ok {
					continue
				}
				rw.shrunk[h] = true
				rw.delta[i] += len(repl) - (v.sp.e - v.sp.s)
				if v.str && i == rw.head && len(rw.sumTexts) > 0 {
					headStr = repl // appendText writes it
					continue
				}
				rw.splices = append(rw.splices, splice{s: v.sp.s, e: v.sp.e, repl: repl})
			}
		}
	}
	// Removed runs of messages: cut from the first's start to the start of
	// the next kept message (its separator goes with it).
	for i := 0; i < len(r.Messages); {
		if !rw.removed[i] {
			i++
			continue
		}
		j := i
		for j < len(r.Messages) && rw.removed[j] {
			j++
		}
		rw.splices = append(rw.splices, splice{s: r.Messages[i].Span.s, e: r.Messages[j].Span.s})
		i = j
	}
	if len(rw.sumTexts) > 0 {
		part := "text"
		switch {
		case isResponses(r):
			part = "input_text" // the Responses API's part for a user's text
		case r.Provider == providerGemini:
			part = "" // a Gemini part has no type: {"text":…}
		}
		sp, err := appendText(body, r.Messages[rw.head], headStr, rw.sumTexts, part)
		if err != nil {
			return nil, err
		}
		rw.splices = append(rw.splices, sp)
	}
	if len(cs) > 0 {
		for i, m := range r.Messages {
			if rw.removed[i] {
				continue
			}
			for _, b := range m.Blocks {
				text, ok := cs[b.Hash]
				if !ok || !b.Content.ok() {
					continue
				}
				rw.splices = append(rw.splices, splice{s: b.Content.s, e: b.Content.e, repl: jsonString(text)})
				rw.cleared = append(rw.cleared, b.Hash)
			}
		}
	}
	sort.Slice(rw.splices, func(a, b int) bool { return rw.splices[a].s < rw.splices[b].s })
	rw.size = len(body)
	for _, x := range rw.splices {
		rw.size += len(x.repl) - (x.e - x.s)
	}
	return rw, nil
}

// isResponses reports whether r is a Responses API request: its messages
// are the items of "input".
func isResponses(r *request) bool {
	if r.Provider != providerOpenAI || !r.MsgsSpan.ok() {
		return false
	}
	before := bytes.TrimRight(r.Body[:r.MsgsSpan.s], " \t\r\n:")
	return bytes.HasSuffix(before, kInputItems)
}

// appendText appends text blocks to message m's content: into the list
// before its closing bracket, or, for string content, as a list of the
// original string (or cut, when the string was cut) and the new blocks.
func appendText(body []byte, m message, cut []byte, texts []string, part string) (splice, error) {
	var add bytes.Buffer
	open := `{"type":"` + part + `","text":`
	if part == "" {
		open = `{"text":`
	}
	for _, t := range texts {
		add.WriteString("," + open)
		add.Write(jsonString(t))
		add.WriteString(`}`)
	}
	c := m.Content
	if !c.ok() {
		return splice{}, fmt.Errorf("the first user message has no content to carry the summary")
	}
	if m.Str {
		var b bytes.Buffer
		b.WriteString("[" + open)
		if cut != nil {
			b.Write(cut)
		} else {
			b.Write(body[c.s:c.e])
		}
		b.WriteString(`}`)
		b.Write(add.Bytes())
		b.WriteString(`]`)
		return splice{s: c.s, e: c.e, repl: b.Bytes()}, nil
	}
	if len(bytes.TrimSpace(body[c.s+1:c.e-1])) == 0 { // an empty list
		return splice{s: c.s, e: c.e, repl: append([]byte("["), add.Bytes()[1:]...)}, nil
	}
	at := c.e - 1 // the closing bracket
	return splice{s: at, e: at, repl: add.Bytes()}, nil
}

// view builds the Decider's view of r as rewritten by rw, for a request
// with budget b. The values the shrink rung may cut are listed only when
// the request is over the hard limit.
func view(r *request, rw *rewrite, cs clearSet, b compact.Budget, memo *callMemo) *View {
	v := &View{Provider: r.Provider, Budget: b, Tokens: estimate(r, rw), Head: -1, Requests: 1}
	withCuts := v.Tokens > b.Limit
	lastAssistant := -1
	prev := ""
	for i, m := range r.Messages {
		if m.Role == "assistant" && prev != "assistant" {
			v.Requests++ // a run of assistant items is one response
		}
		prev = m.Role
		if !rw.removed[i] && m.Role == "assistant" {
			lastAssistant = i
		}
	}
	for i, m := range r.Messages {
		if rw.removed[i] {
			continue
		}
		if i == rw.head || v.Head >= 0 && pinnedItem(m) {
			// A summarized run starts after the head, and after any item
			// that must not be summarized (Codex's compaction items: what
			// they hold is encrypted, so no summary could carry it).
			v.Head = len(v.Messages)
		}
		mi := MessageInfo{Role: m.Role, Hash: m.Hash}
		size := m.Bytes
		if rw.delta != nil {
			size += rw.delta[i]
		}
		if i == rw.head {
			for _, t := range rw.sumTexts {
				size += len(t) + 30
			}
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case "tool_use":
				mi.Calls = append(mi.Calls, callInfo(r.Body, b, memo))
				continue
			case "tool_result":
			default:
				continue
			}
			if !b.Content.ok() {
				continue
			}
			n := b.Content.e - b.Content.s
			ri := ResultInfo{Hash: b.Hash, Tool: b.Name, Call: callInfo(r.Body, b, memo), Tokens: max(tokensOf(n)+imageAdjust(r.Body, b.Content), 1), Bytes: n, Consumed: i < lastAssistant}
			if t, ok := cs[b.Hash]; ok {
				ri.Cleared = true
				size -= n - (len(t) + 2)
				ri.Tokens = tokensOf(len(t) + 2)
			}
			mi.Results = append(mi.Results, ri)
		}
		if withCuts {
			for _, x := range cutValues(r.Body, m) {
				if h := valueHash(r.Body, x.sp); !rw.shrunk[h] {
					mi.Cuts = append(mi.Cuts, CutInfo{Hash: h, Tokens: tokensOf(x.sp.e - x.sp.s)})
				}
			}
		}
		mi.Tokens = max(tokensOf(max(size, 0))+imageAdjust(r.Body, m.Span), 1)
		v.Messages = append(v.Messages, mi)
	}
	return v
}

// estimate is the input tokens of r as rw rewrites it: a token per four
// bytes of JSON (which over-counts escapes, erring on the safe side of the
// window), images at their fixed cost.
func estimate(r *request, rw *rewrite) int {
	t := tokensOf(rw.size)
	for i, m := range r.Messages {
		if !rw.removed[i] {
			t += imageAdjust(r.Body, m.Span)
		}
	}
	return t
}

// callInfo is the tool call b makes (a tool_use) or answers (a
// tool_result).
func callInfo(body []byte, b block, memo *callMemo) CallInfo {
	c := CallInfo{Name: b.Name, memo: memo}
	if b.Input.ok() {
		c.Input = body[b.Input.s:b.Input.e]
	}
	return c
}

// placeholderText is what the model sees instead of a cleared result: the
// tool, its key argument, its size, and how to get it back — the recall
// tool when the client offers one, otherwise by running the tool again.
func placeholderText(b block, body []byte, recallTool string) string {
	text := textOf(body, b.Content)
	lines := strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
	tool := b.Name
	if tool == "" {
		tool = "tool"
	}
	arg := keyArg(body, b.Input)
	var sb strings.Builder
	sb.WriteString("[cleared by ctxkit: ")
	sb.WriteString(tool)
	if arg != "" {
		sb.WriteString(" ")
		sb.WriteString(strconv.Quote(textfmt.Clip(arg, 80)))
	}
	fmt.Fprintf(&sb, ", %d lines", lines)
	if recallTool != "" {
		fmt.Fprintf(&sb, " — call %s with id %q to get it back]", recallTool, b.Hash)
		return sb.String()
	}
	switch strings.ToLower(tool) {
	case "read", "read_file", "view", "cat":
		sb.WriteString(" — read the file again if you need it")
	case "bash", "shell", "exec", "run", "exec_command":
		sb.WriteString(" — run the command again if you need its output")
	default:
		sb.WriteString(" — call the tool again if you need it")
	}
	fmt.Fprintf(&sb, " (recall id %s)]", b.Hash)
	return sb.String()
}

// keyArg is the argument that names what a tool call acted on.
func keyArg(body []byte, input span) string {
	if !input.ok() {
		return ""
	}
	raw := body[input.s:input.e]
	if raw[0] == '"' { // OpenAI: arguments are a JSON string
		s := str(body, input)
		raw = []byte(s)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "cmd", "file_path", "path", "pattern", "url", "query", "description"} {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// recallToolOf is the name of a recall tool among the client's tools.
func recallToolOf(tools []string) string {
	for _, t := range tools {
		if t == "recall" || strings.HasSuffix(t, "__recall") {
			return t
		}
	}
	return ""
}

// pinnedItem reports whether m is an opaque item a summary may not
// replace: one that is neither the user's nor the assistant's (Codex's
// compaction item), as the parsers mark it.
func pinnedItem(m message) bool {
	return m.Role == "system" && len(m.Blocks) == 1 && m.Blocks[0].Type == blockOpaque
}
