package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/jsonerr"
)

// Sentinel errors, wrapped with the location of the problem.
var (
	// ErrUnknownType: a block, content part, tool or role of a type the
	// codec does not know.
	ErrUnknownType = errors.New("wire: unknown type")
	// ErrInvalid: the body is not valid JSON or not shaped like a request.
	ErrInvalid = errors.New("wire: invalid request")
)

// raw returns r compacted, nil for an absent or null value. Compacting keeps
// key order and escapes, so re-encoding never changes what the model saw.
func raw(r json.RawMessage) (json.RawMessage, error) {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || string(r) == "null" {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// present returns r without surrounding space, nil for an absent or null
// value; unlike raw it leaves the bytes alone, for content that is decoded
// right away.
func present(r json.RawMessage) json.RawMessage {
	r = bytes.TrimSpace(r)
	if string(r) == "null" {
		return nil
	}
	return r
}

// textOrList decodes a content field that is absent (nothing comes back),
// a string (one text block said by src) or a list of items, named by noun
// in the error when it is neither; prefix starts the error of a string
// that does not decode.
func textOrList[T any](data json.RawMessage, src conv.Source, prefix, noun string) (text []conv.Block, items []T, err error) {
	data = present(data)
	if len(data) == 0 {
		return nil, nil, nil
	}
	if data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, nil, fmt.Errorf("%w: %s%s", ErrInvalid, prefix, jsonerr.What(err))
		}
		return []conv.Block{newText(src, s)}, nil, nil
	}
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, nil, fmt.Errorf("%w: content is neither a string nor a list of %s: %s", ErrInvalid, noun, jsonerr.What(err))
	}
	return nil, items, nil
}

// isObject reports whether compact JSON r is an object.
func isObject(r json.RawMessage) bool { return len(r) > 0 && r[0] == '{' }

// summaryRE matches the text form of a summary block (see the package doc).
var summaryRE = regexp.MustCompile(`(?s)\A<summary(?: turns="(\d+)-(\d+)")?( merged="true")?>\n(.*)\n</summary>\z`)

// summaryText is the text a summary block is sent as.
func summaryText(b *conv.Block) string {
	var sb strings.Builder
	sb.WriteString("<summary")
	if b.Span != nil {
		fmt.Fprintf(&sb, ` turns="%d-%d"`, b.Span.First, b.Span.Last)
	}
	if b.Merged {
		sb.WriteString(` merged="true"`)
	}
	sb.WriteString(">\n")
	sb.WriteString(b.Text)
	sb.WriteString("\n</summary>")
	return sb.String()
}

// textOf is the text a text or summary block is sent as.
func textOf(b *conv.Block) string {
	if b.Type == conv.TypeSummary {
		return summaryText(b)
	}
	return b.Text
}

// newText decodes a text block said by src: a summary when it has the
// summary form (tool output never is one), a reminder when user text
// starts with <system-reminder>.
func newText(src conv.Source, text string) conv.Block {
	if m := summaryRE.FindStringSubmatch(text); m != nil && src != conv.SourceTool {
		var span conv.Span
		if m[1] != "" {
			span.First, _ = strconv.Atoi(m[1])
			span.Last, _ = strconv.Atoi(m[2])
		}
		b := conv.NewSummary(m[4], span)
		if m[1] == "" {
			b.Span = nil
		}
		b.Merged = m[3] != ""
		return b
	}
	return Text(src, text)
}

// Text is a text block said by src, where the source of user-side text is
// read off its opening (UserSource): the one rule by which the decoders,
// the proxy and the importers tell who wrote it.
func Text(src conv.Source, text string) conv.Block {
	if src == conv.SourceUser {
		src = UserSource(text)
	}
	return conv.NewText(src, text)
}

// injected are the openings of the user-side text the clients write
// themselves, as their sources write it: Codex's environment context,
// user instructions and AGENTS.md, shell commands the user ran and turn
// notices (codex-rs); Gemini CLI's session and hook context (it tells
// them from typed input by the same openings); Claude Code's caveat
// before local command output (a record it flags isMeta); the format
// error mini-swe-agent's default template answers a malformed step with;
// OpenHands' recalled context, each part in its tag (ConversationMemory,
// additional_info.j2 and microagent_info.j2: the repository, its
// instructions, the runtime, the conversation's instructions, a
// microagent's knowledge).
var injected = []string{
	"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<user_shell_command>",
	"<turn_aborted>", "<permissions instructions>",
	"<session_context>", "<hook_context>",
	"<local-command-caveat>",
	"Please always provide EXACTLY ONE action in triple backticks",
	"<REPOSITORY_INFO>", "<REPOSITORY_INSTRUCTIONS>", "<RUNTIME_INFORMATION>", "<CONVERSATION_INSTRUCTIONS>", "<EXTRA_INFO>",
}

// toolOutput are the openings of tool output a text-action agent sends as
// a user message: mini-swe-agent's observation template.
var toolOutput = []string{"<returncode>"}

// UserSource is the source of text in a user message as a client sent it:
// SourceReminder for a <system-reminder>, SourceHook for text a client
// injects itself (the openings above), SourceTool for a text-action
// agent's observation, else SourceUser — the user's
// words, which open a round and which a compaction keeps verbatim. The
// proxy reads requests and the importers read recordings by this one
// rule, so both give the engine the same conversation.
func UserSource(text string) conv.Source {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "<system-reminder>") {
		return conv.SourceReminder
	}
	for _, tag := range injected {
		if strings.HasPrefix(t, tag) {
			return conv.SourceHook
		}
	}
	for _, tag := range toolOutput {
		if strings.HasPrefix(t, tag) {
			return conv.SourceTool
		}
	}
	return conv.SourceUser
}

// sourceOf is the source of a decoded block in a message of role r.
func sourceOf(r conv.Role) conv.Source {
	if r == conv.RoleAssistant {
		return conv.SourceAssistant
	}
	return conv.SourceUser
}

// fillNames sets each tool result's Name from the tool_use it answers.
func fillNames(ms []conv.Message) {
	names := make(map[string]string)
	for i := range ms {
		for j := range ms[i].Blocks {
			b := &ms[i].Blocks[j]
			switch b.Type {
			case conv.TypeToolUse:
				names[b.ToolUseID] = b.Name
			case conv.TypeToolResult:
				if b.Name == "" {
					b.Name = names[b.ToolUseID]
				}
			}
		}
	}
}

// defaultSchema is sent for a tool that has no schema: both providers
// require one.
var defaultSchema = json.RawMessage(`{"type":"object"}`)
