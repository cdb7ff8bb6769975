package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// probeSize is how much of a file the line-based probe looks at.
const probeSize = 1 << 20

// detect names the format of the file at path from its content: first the
// JSONL records of Claude Code, then the shape of the (first) JSON
// document.
func detect(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, probeSize)
	head, err := br.Peek(probeSize)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return "", err
	}
	whole := err == io.EOF
	if bytes.HasPrefix(head, sqliteMagic) {
		return FormatOpencode, nil // the only SQLite store read
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(head, bom), " \t\r\n")
	if len(text) == 0 {
		return "", ErrEmpty
	}
	if isClaudeCode(head, whole) {
		return FormatClaudeCode, nil
	}
	// A whole file holding one JSON number, string or null is JSON too,
	// just not a session.
	isJSON := text[0] == '{' || text[0] == '[' || whole && json.Valid(text)
	if !whole && bytes.IndexByte(head, '\n') < 0 {
		// The first line is longer than the probe: read it whole, up to
		// the line limit, and look at it alone.
		line, err := firstLine(br)
		if err != nil {
			return "", err
		}
		if isClaudeCode(line, true) {
			return FormatClaudeCode, nil
		}
		if isCodex(line, true) {
			return FormatCodex, nil
		}
	}
	if isCodex(head, whole) {
		return FormatCodex, nil
	}
	if isGeminiLog(head, whole) {
		return FormatGeminiCLI, nil
	}
	if !isJSON {
		return "", fmt.Errorf("%w: the file is not JSON (supported: %s)", ErrUnknownFormat, strings.Join(Formats(), ", "))
	}
	return detectDocument(path)
}

// firstLine reads the first line of br, up to MaxLine bytes.
func firstLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for len(line) <= MaxLine {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case err == nil, err == io.EOF:
			return line, nil
		case err != bufio.ErrBufferFull:
			return nil, err
		}
	}
	return line, nil
}

// isClaudeCode reports whether any of the first whole lines is a Claude
// Code session record, so that a damaged first line does not hide the
// format.
func isClaudeCode(head []byte, whole bool) bool {
	for i := 0; i < 50 && len(head) > 0; i++ {
		line, rest, found := bytes.Cut(head, []byte{'\n'})
		if !found && !whole {
			return false // an incomplete line
		}
		head = rest
		var rec map[string]json.RawMessage
		if json.Unmarshal(bytes.TrimPrefix(line, bom), &rec) != nil {
			continue
		}
		if _, ok := rec["type"]; !ok {
			return false
		}
		for _, k := range []string{"sessionId", "uuid", "parentUuid", "leafUuid", "messageId"} {
			if _, ok := rec[k]; ok {
				return true
			}
		}
		return false
	}
	return false
}

// codexTypes are the record types of a Codex CLI rollout.
var codexTypes = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true}

// isCodex reports whether the first whole line is a Codex CLI rollout
// record ({timestamp, type, payload}), or the session line of a rollout from
// before that wrapper ({id, timestamp, instructions}) followed by a response
// item.
func isCodex(head []byte, whole bool) bool {
	var recs []map[string]json.RawMessage
	for len(recs) < 5 && len(head) > 0 {
		line, rest, found := bytes.Cut(head, []byte{'\n'})
		if !found && !whole {
			break
		}
		head = rest
		var rec map[string]json.RawMessage
		if json.Unmarshal(bytes.TrimPrefix(line, bom), &rec) != nil {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			return false
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return false
	}
	var typ string
	_ = json.Unmarshal(recs[0]["type"], &typ)
	if _, ok := recs[0]["payload"]; ok && codexTypes[typ] {
		return true
	}
	_, id := recs[0]["id"]
	_, ts := recs[0]["timestamp"]
	if !id || !ts || recs[0]["type"] != nil {
		return false
	}
	for _, rec := range recs[1:] {
		typ = ""
		_ = json.Unmarshal(rec["type"], &typ)
		if typ == "message" || typ == "reasoning" || typ == "function_call" {
			return true
		}
	}
	return false
}

// isGeminiLog reports whether the first whole line is the metadata line
// of a Gemini CLI session log ({sessionId, projectHash, …}).
func isGeminiLog(head []byte, whole bool) bool {
	line, _, found := bytes.Cut(head, []byte{'\n'})
	if !found && !whole {
		return false
	}
	var rec map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimPrefix(line, bom), &rec) != nil {
		return false
	}
	_, session := rec["sessionId"]
	_, project := rec["projectHash"]
	return session && project
}

// docProbe is what detectDocument learns from walking the first document.
type docProbe struct {
	keys      map[string]bool
	infoKeys  map[string]bool
	history   map[string]json.RawMessage // first history element, when an object
	histPair  bool                       // first history element is an [action, observation] pair
	gemini    bool                       // a Gemini API content entry ({role, parts})
	cline     bool                       // a message with Cline's or Roo Code's own fields
	openai    bool                       // a message only OpenAI chat has
	anthropic bool                       // a content block only Anthropic has
	topArray  bool
}

type probeMessage struct {
	Role       string          `json:"role"`
	Parts      json.RawMessage `json:"parts"`
	Ts         json.RawMessage `json:"ts"`
	ModelInfo  json.RawMessage `json:"modelInfo"`
	Metrics    json.RawMessage `json:"metrics"`
	IsSummary  json.RawMessage `json:"isSummary"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// detectDocument walks the first JSON document of the file, keeping only
// its top-level keys, what its messages say about their format, and the
// first history entry.
func detectDocument(path string) (string, error) {
	s, err := openStream(path, false)
	if err != nil {
		return "", err
	}
	defer s.Close()
	p := docProbe{keys: map[string]bool{}, infoKeys: map[string]bool{}}
	r := &run{path: path}
	messages := func() error {
		return s.array(func(int) error {
			var m probeMessage
			if err := s.decode(&m); err != nil {
				return err
			}
			p.look(&m)
			return nil
		})
	}
	t, err := s.dec.Token()
	if err != nil {
		return "", r.jsonErr(s, err)
	}
	switch t {
	case json.Delim('['):
		p.topArray = true
		for s.dec.More() {
			var m probeMessage
			if err := s.decode(&m); err != nil {
				return "", r.jsonErr(s, err)
			}
			p.look(&m)
		}
	case json.Delim('{'):
		for s.dec.More() {
			t, err := s.dec.Token()
			if err != nil {
				return "", r.jsonErr(s, err)
			}
			key, _ := t.(string)
			p.keys[key] = true
			switch key {
			case "messages":
				err = messages()
			case "info":
				err = s.object(func(k string) error { p.infoKeys[k] = true; return s.skip() })
			case "history":
				err = s.array(func(i int) error {
					if i > 0 {
						return s.skip()
					}
					var first json.RawMessage
					if err := s.decode(&first); err != nil {
						return err
					}
					p.histPair = bytes.HasPrefix(bytes.TrimSpace(first), []byte("["))
					_ = json.Unmarshal(first, &p.history)
					return nil
				})
			default:
				err = s.skip()
			}
			if err != nil {
				return "", r.jsonErr(s, err)
			}
		}
	default:
		return "", fmt.Errorf("%w: the file holds a JSON %s, not an object (supported: %s)", ErrUnknownFormat, jsonKind(t), strings.Join(Formats(), ", "))
	}
	if f := p.format(); f != "" {
		return f, nil
	}
	return "", fmt.Errorf("%w: a JSON document with keys %s (supported: %s)", ErrUnknownFormat, keyList(p.keys), strings.Join(Formats(), ", "))
}

// jsonKind names a JSON value the decoder returned as a token, as JSON
// names it.
func jsonKind(t json.Token) string {
	switch t.(type) {
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	default:
		return "null"
	}
}

func (p *docProbe) format() string {
	k := p.keys
	switch {
	case k["history"] && (k["trajectory"] || p.history["role"] != nil):
		return FormatSWEAgent
	case k["history"] && (p.history["source"] != nil || p.history["id"] != nil || p.history["tool_call_metadata"] != nil):
		return FormatOpenHands
	case k["history"] && (p.histPair || p.history["action"] != nil || p.history["observation"] != nil):
		return FormatOpenHandsResolver
	case k["messages"] && (k["trajectory_format"] || p.infoKeys["mini_version"]):
		return FormatMiniSWEAgent
	case k["messages"] && k["sessionId"] && k["projectHash"], p.topArray && p.gemini:
		return FormatGeminiCLI
	case p.topArray && p.cline:
		return FormatCline
	case k["id"] && k["title"] && k["version"] && k["time"], k["id"] && k["sessionID"] && k["role"] && k["time"]:
		return FormatOpencode // a session info or message file of the JSON storage
	case k["messages"] || p.topArray:
		return p.requestFormat()
	case k["contents"]:
		return FormatGemini // a generateContent request body
	}
	return ""
}

// look notes what only one of the request formats has in message m; only
// the verdict is kept, not the message.
func (p *docProbe) look(m *probeMessage) {
	if len(m.Parts) > 0 && (m.Role == "user" || m.Role == "model") {
		p.gemini = true
	}
	if len(m.Ts) > 0 || len(m.ModelInfo) > 0 || len(m.Metrics) > 0 || len(m.IsSummary) > 0 {
		p.cline = true
	}
	switch m.Role {
	case "system", "developer", "tool":
		p.openai = true
	}
	if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
		p.openai = true
	}
	var parts []struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	for _, part := range parts {
		switch part.Type {
		case "image_url", "input_audio", "file", "refusal":
			p.openai = true
		case "tool_use", "tool_result", "thinking", "redacted_thinking", "image":
			p.anthropic = true
		}
	}
}

// requestFormat tells an OpenAI chat body from an Anthropic one by what
// only one of them has; plain user/assistant strings read the same either
// way.
func (p *docProbe) requestFormat() string {
	switch {
	case p.keys["system"] || p.anthropic:
		return FormatAnthropic
	case p.openai || p.keys["max_completion_tokens"] || p.keys["response_format"]:
		return FormatOpenAI
	}
	return FormatAnthropic
}

func keyList(keys map[string]bool) string {
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	if len(ks) == 0 {
		return "(none)"
	}
	slices.Sort(ks)
	if len(ks) > 8 {
		ks = append(ks[:8], "…")
	}
	return strings.Join(ks, ", ")
}
