package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

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
		sp, err := appendText(body, r.Messages[rw.head], r.Provider, rw.sumTexts)
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

// appendText appends text blocks to message m's content: into the list
// before its closing bracket, or, for string content, as a list of the
// original string and the new blocks.
func appendText(body []byte, m message, provider string, texts []string) (splice, error) {
	var add bytes.Buffer
	for _, t := range texts {
		add.WriteString(`,{"type":"text","text":`)
		add.Write(jsonString(t))
		add.WriteString(`}`)
	}
	c := m.Content
	if !c.ok() {
		return splice{}, fmt.Errorf("the first user message has no content to carry the summary")
	}
	if m.Str {
		var b bytes.Buffer
		b.WriteString(`[{"type":"text","text":`)
		b.Write(body[c.s:c.e])
		b.WriteString(`}`)
		b.Write(add.Bytes())
		b.WriteString(`]`)
		return splice{s: c.s, e: c.e, repl: b.Bytes()}, nil
	}
	if len(m.Blocks) == 0 {
		return splice{s: c.s, e: c.e, repl: append([]byte("["), add.Bytes()[1:]...)}, nil
	}
	at := c.e - 1 // the closing bracket
	return splice{s: at, e: at, repl: add.Bytes()}, nil
}

// view builds the Decider's view of r as rewritten by rw.
func view(r *request, rw *rewrite, cs clearSet, window int) *View {
	v := &View{Window: window, Tokens: tokensOf(rw.size)}
	placeholders := map[string]int{}
	for h, t := range cs {
		placeholders[h] = len(t) + 2
	}
	lastAssistant := -1
	for i, m := range r.Messages {
		if !rw.removed[i] && m.Role == "assistant" {
			lastAssistant = i
		}
	}
	for i, m := range r.Messages {
		if rw.removed[i] {
			continue
		}
		if i == rw.head {
			v.Head = len(v.Messages)
		}
		mi := MessageInfo{Role: m.Role, Hash: m.Hash}
		size := m.Bytes
		if i == rw.head {
			for _, t := range rw.sumTexts {
				size += len(t) + 30
			}
		}
		for _, b := range m.Blocks {
			if b.Type != "tool_result" || !b.Content.ok() {
				continue
			}
			ri := ResultInfo{Hash: b.Hash, Tool: b.Name, Tokens: tokensOf(b.Content.e - b.Content.s), Consumed: i < lastAssistant}
			if n, ok := placeholders[b.Hash]; ok {
				ri.Cleared = true
				size -= (b.Content.e - b.Content.s) - n
				ri.Tokens = tokensOf(n)
			}
			mi.Results = append(mi.Results, ri)
		}
		mi.Tokens = tokensOf(size)
		v.Messages = append(v.Messages, mi)
	}
	return v
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
