package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/toolresult"
)

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
func appendText(body []byte, m message, texts []string, part string) (splice, error) {
	var add bytes.Buffer
	open := `{"type":"` + part + `","text":`
	if part == "" {
		open = `{"text":` // a Gemini part has no type
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
		b.Write(body[c.s:c.e])
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

// recallToolOf is the name of the recall tool the client offers its
// model: one of its tools ("recall", or an MCP server's
// "mcp__<server>__recall"), or an MCP recall tool the client defers —
// Claude Code with tool search names deferred MCP tools only in the
// messages (a <system-reminder> listing them, a tool_reference), and its
// model loads one by name when it needs it. "" when there is none: the
// engine's texts then say "recall <id>".
func recallToolOf(req *request) string {
	for _, t := range req.Tools {
		if isRecallTool(t) {
			return t
		}
	}
	body := req.Body
	for at := 0; ; {
		i := bytes.Index(body[at:], kRecallSuffix)
		if i < 0 {
			return ""
		}
		end := at + i + len(kRecallSuffix)
		at = end
		if end < len(body) && isNameByte(body[end]) {
			continue // a longer name: mcp__x__recall_all
		}
		start := end - len(kRecallSuffix)
		for start > 0 && isNameByte(body[start-1]) {
			start--
		}
		if start > 0 && body[start-1] == '\\' {
			start++ // the letter of a JSON escape (a list's "\nmcp__…"), not the name's
		}
		if name := string(body[start:end]); strings.HasPrefix(name, "mcp__") && len(name) > len("mcp__")+len(kRecallSuffix) {
			return name
		}
	}
}

var kRecallSuffix = []byte("__" + toolresult.DefaultRecallTool)

// isRecallTool reports whether a client's tool named name is a recall
// tool: the agent's own name, or an MCP server's mcp__<server>__recall.
func isRecallTool(name string) bool {
	return name == toolresult.DefaultRecallTool || strings.HasSuffix(name, string(kRecallSuffix))
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
