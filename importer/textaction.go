package importer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
)

// Text-action agents (mini-swe-agent, SWE-agent 0.x, early OpenHands) have
// no native tool calls: the model writes a command in a fenced block and
// the harness answers with its output in the next user message. Import
// turns each into a bash tool_use and its tool_result, so that tool-result
// compression and clearing apply to them as to any other tool.

// bashInput returns the input of the bash tool_use for command.
func bashInput(command string) json.RawMessage {
	return marshal(struct {
		Command string `json:"command"`
	}{command})
}

// marshal encodes a tool input the way a model writes it: compact, and
// without escaping <, > and & (which would also inflate token counts).
func marshal(v any) json.RawMessage {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// textParts joins a message content that is a string or a list of
// {type: text, text} parts.
func textParts(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of text parts: %w", err)
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" && p.Type != "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

// cutBlock returns text with the fenced block at loc (byte offsets)
// removed and the remaining pieces joined.
func cutBlock(text string, start, end int) string {
	before := strings.TrimSpace(text[:start])
	after := strings.TrimSpace(text[end:])
	switch {
	case before == "":
		return after
	case after == "":
		return before
	}
	return before + "\n\n" + after
}

// miniBashRE is mini-swe-agent's action_regex.
var miniBashRE = regexp.MustCompile("(?s)```bash\\s*\\n(.*?)\\n```")

// miniAction splits a mini-swe-agent response into its thought and its
// command. Like mini-swe-agent, it only takes a response with exactly one
// bash block as an action.
func miniAction(content string) (thought, command string, ok bool) {
	ms := miniBashRE.FindAllStringSubmatchIndex(content, -1)
	if len(ms) != 1 {
		return content, "", false
	}
	m := ms[0]
	return cutBlock(content, m[0], m[1]), content[m[2]:m[3]], true
}

var (
	returnCodeRE = regexp.MustCompile(`(?s)\A\s*<returncode>(-?\d+)</returncode>\s*`)
	outputRE     = regexp.MustCompile(`(?s)\A<output>\n?(.*?)\n?</output>\s*\z`)
	elidedRE     = regexp.MustCompile(`(?s)<elided_chars>\s*(.*?)\s*</elided_chars>`)
)

// miniObservation unwraps mini-swe-agent's observation template
// (<returncode>N</returncode><output>…</output>, or for long output a
// <warning> and <output_head>/<elided_chars>/<output_tail>) into the
// output text with the exit code on a last line. Text that does not
// follow the template (a timeout notice, the final submission) is kept
// as is, with code -1.
func miniObservation(s string) (text string, code int) {
	m := returnCodeRE.FindStringSubmatch(s)
	if m == nil {
		return s, -1
	}
	code, _ = strconv.Atoi(m[1])
	rest := s[len(m[0]):]
	if o := outputRE.FindStringSubmatch(rest); o != nil {
		rest = o[1]
	} else {
		rest = elidedRE.ReplaceAllString(rest, "[… $1 …]")
		rest = strings.NewReplacer(
			"<warning>\n", "[warning] ", "</warning>", "",
			"<output_head>\n", "", "</output_head>", "",
			"<output_tail>\n", "", "</output_tail>", "",
			"<output>\n", "", "</output>", "",
		).Replace(rest)
		rest = strings.TrimSpace(rest)
	}
	if rest == "" {
		return fmt.Sprintf("[exit code %d]", code), code
	}
	return fmt.Sprintf("%s\n[exit code %d]", rest, code), code
}

// fencedRE matches a fenced block at the end of a SWE-agent response.
var fencedRE = regexp.MustCompile("(?s)```[a-zA-Z]*\\n(.*?)\\n?```\\s*\\z")

// sweAction splits a SWE-agent text response into thought and command:
// the recorded thought and action when present, else the last fenced
// block.
func sweAction(content, thought, action string) (string, string, bool) {
	action = strings.TrimRight(action, "\n")
	if strings.TrimSpace(action) != "" {
		if strings.TrimSpace(thought) == "" {
			if loc := fencedRE.FindStringIndex(content); loc != nil {
				thought = cutBlock(content, loc[0], loc[1])
			} else {
				thought = content
			}
		}
		return strings.TrimSpace(thought), action, true
	}
	if m := fencedRE.FindStringSubmatchIndex(content); m != nil {
		return cutBlock(content, m[0], m[1]), content[m[2]:m[3]], true
	}
	return content, "", false
}

// textStep adds one text-action step: the assistant's thought and, when it
// acted, a bash call. It returns the call's id ("" when it did not act).
func (b *builder) textStep(thought, command string, acted bool) string {
	var bs []conv.Block
	if strings.TrimSpace(thought) != "" {
		bs = append(bs, conv.NewText(conv.SourceAssistant, thought))
	}
	id := ""
	if acted {
		call := b.call("", "bash", bashInput(command))
		id = call.ToolUseID
		bs = append(bs, call)
	}
	if len(bs) == 0 { // an empty response: Repair drops it and says so
		bs = append(bs, conv.NewText(conv.SourceAssistant, thought))
	}
	b.assistant(bs...)
	return id
}

// observation adds the answer to the last step: the result of its call,
// or, when it made none, harness feedback (a format error) as injected
// text.
func (b *builder) observation(callID, text string, isError bool) {
	if callID == "" {
		b.user(conv.NewText(conv.SourceHook, text))
		return
	}
	b.user(b.result(callID, text, isError))
}
