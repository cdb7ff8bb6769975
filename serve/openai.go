package serve

import (
	"bytes"
	"crypto/sha256"
	"fmt"
)

var (
	kArguments  = []byte(`"arguments"`)
	kCallID     = []byte(`"call_id"`)
	kOutput     = []byte(`"output"`)
	kInputItems = []byte(`"input"`)
	kPrevResp   = []byte(`"previous_response_id"`)
	kMaxOutput  = []byte(`"max_output_tokens"`)
)

// parseTop reads the top-level object of an OpenAI body, calling f for
// the members it does not handle itself; the elements of the array under
// the key items go to *spans as it is read.
func parseTop(body []byte, r *request, items []byte, spans *[]span, f func(key []byte, val span) error) error {
	top := span{skipWS(body, 0), len(body)}
	if top.s >= len(body) || body[top.s] != '{' {
		return fmt.Errorf("%w: the body is not a JSON object", errSyntax)
	}
	return membersScan(body, top, arrayOf(body, items, spans), func(key []byte, val span) error {
		switch {
		case bytes.Equal(key, kModel):
			r.Model = str(body, val)
		case bytes.Equal(key, kStream):
			r.Stream = string(body[val.s:val.e]) == "true"
		case bytes.Equal(key, kMaxTokens), bytes.Equal(key, kMaxCompl), bytes.Equal(key, kMaxOutput):
			fmt.Sscan(string(body[val.s:val.e]), &r.MaxOut)
			r.MaxSpan = val
		case bytes.Equal(key, kCacheKey):
			r.CacheKey = str(body, val)
		case bytes.Equal(key, kTools):
			r.ToolsSpan = val
			return toolNames(body, val, &r.Tools)
		default:
			return f(key, val)
		}
		return nil
	})
}

func hashSpan(body []byte, sp span) (string, error) {
	h := sha256.New()
	if err := hashValue(h, body, sp); err != nil {
		return "", err
	}
	return sum(h), nil
}

// parseChat reads a chat completions request body. Tool messages become
// messages of role "tool" with one tool_result block; an assistant's
// tool_calls become tool_use blocks.
func parseChat(body []byte) (*request, error) { return (*parseCache)(nil).chat(body) }

// chat is parseChat reusing pc's parse of every message seen before.
func (pc *parseCache) chat(body []byte) (*request, error) {
	r := &request{Body: body, Provider: providerOpenAI, API: "chat"}
	var spans []span // the messages
	err := parseTop(body, r, kMessages, &spans, func(key []byte, val span) error {
		if bytes.Equal(key, kMessages) {
			r.MsgsSpan = val
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !r.MsgsSpan.ok() || body[r.MsgsSpan.s] != '[' {
		return nil, fmt.Errorf("%w: no messages array", errSyntax)
	}
	r.Messages, err = pc.messages(kindChat, body, spans, parseChatMessage)
	return r, err
}

// parseChatMessage reads one chat completions message.
func parseChatMessage(body []byte, msp span) (message, error) {
	m := message{Span: msp, Bytes: msp.e - msp.s}
	if body[msp.s] != '{' {
		return m, fmt.Errorf("%w: a message is not an object", errSyntax)
	}
	var toolCalls span
	var callID string
	if err := members(body, msp, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kRole):
			m.Role = str(body, v)
		case bytes.Equal(k, kContent):
			m.Content = v
		case bytes.Equal(k, kToolCalls):
			toolCalls = v
		case bytes.Equal(k, kToolCallID):
			callID = str(body, v)
		}
		return nil
	}); err != nil {
		return m, err
	}
	m.Str = m.Content.ok() && body[m.Content.s] == '"'
	var err error
	if m.Hash, err = hashSpan(body, msp); err != nil {
		return m, err
	}
	if toolCalls.ok() && body[toolCalls.s] == '[' {
		if err := elems(body, toolCalls, func(_ int, c span) error {
			b := block{Span: c, Type: "tool_use"}
			if body[c.s] != '{' {
				return nil
			}
			members(body, c, func(k []byte, v span) error {
				switch {
				case bytes.Equal(k, kID):
					b.ToolUseID = str(body, v)
				case bytes.Equal(k, kFunction) && body[v.s] == '{':
					members(body, v, func(k2 []byte, v2 span) error {
						switch {
						case bytes.Equal(k2, kName):
							b.Name = str(body, v2)
						case bytes.Equal(k2, kArguments):
							b.Input = v2
						}
						return nil
					})
				}
				return nil
			})
			m.Blocks = append(m.Blocks, b)
			return nil
		}); err != nil {
			return m, err
		}
	}
	if m.Role == "tool" && m.Content.ok() {
		m.Blocks = append(m.Blocks, block{Span: msp, Type: "tool_result", Hash: m.Hash, ToolUseID: callID, Content: m.Content})
	}
	return m, nil
}

// parseResponses reads a Responses API request body. A request that
// continues server-side state — previous_response_id, a stored
// conversation — or asks the upstream to compact it (a compaction_trigger
// item) is left alone (errUntouched). A stateless request (the
// whole history in input, as Codex sends it with store:false) is parsed
// item by item; encrypted reasoning and Codex's compaction items are
// opaque: they go upstream byte for byte.
func parseResponses(body []byte) (*request, error) { return (*parseCache)(nil).responses(body) }

var (
	kConversation = []byte(`"conversation"`)
	kInstructions = []byte(`"instructions"`)
)

// responses is parseResponses reusing pc's parse of every item seen before.
func (pc *parseCache) responses(body []byte) (*request, error) {
	r := &request{Body: body, Provider: providerOpenAI, API: "responses"}
	var input span
	var spans []span // the input items
	untouched := false
	err := parseTop(body, r, kInputItems, &spans, func(key []byte, val span) error {
		switch {
		case bytes.Equal(key, kInputItems):
			input = val
		case bytes.Equal(key, kPrevResp), bytes.Equal(key, kConversation):
			untouched = untouched || string(body[val.s:val.e]) != "null"
		case bytes.Equal(key, kInstructions):
			r.Instructions = val
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if untouched {
		return nil, errUntouched
	}
	if !input.ok() || body[input.s] != '[' {
		return r, nil // a string input: nothing to rewrite
	}
	if bytes.Contains(body[input.s:input.e], []byte(`"compaction_trigger"`)) {
		return nil, errUntouched // the upstream compacts this request itself
	}
	r.MsgsSpan = input
	r.Messages, err = pc.messages(kindResponses, body, spans, parseResponsesItem)
	for i, m := range r.Messages {
		if pinnedItem(m) {
			r.Fixed = i + 1
		}
	}
	return r, err
}

// parseResponsesItem reads one input item of a Responses API request: a
// message, a function or custom tool call (an assistant message with one
// tool_use block), a call's output (a tool message with one tool_result
// block), a reasoning item (an assistant message with one opaque block:
// it stays byte-identical and with the item after it, the output item it
// reasoned towards, since nothing ends a summarized run before an
// assistant item), a compaction item (opaque, of role "system"), or
// another output item (an assistant message, opaque).
func parseResponsesItem(body []byte, isp span) (message, error) {
	m := message{Span: isp, Bytes: isp.e - isp.s}
	if body[isp.s] != '{' {
		return m, fmt.Errorf("%w: an input item is not an object", errSyntax)
	}
	typ := "message"
	var callID, name string
	var args, output span
	if err := members(body, isp, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kType):
			typ = str(body, v)
		case bytes.Equal(k, kRole):
			m.Role = str(body, v)
		case bytes.Equal(k, kContent):
			m.Content = v
		case bytes.Equal(k, kCallID):
			callID = str(body, v)
		case bytes.Equal(k, kName):
			name = str(body, v)
		case bytes.Equal(k, kArguments), bytes.Equal(k, kInput) && body[v.s] == '"':
			args = v // a function call's arguments, a custom tool call's input
		case bytes.Equal(k, kOutput):
			output = v
		}
		return nil
	}); err != nil {
		return m, err
	}
	var err error
	if m.Hash, err = hashSpan(body, isp); err != nil {
		return m, err
	}
	m.Str = m.Content.ok() && body[m.Content.s] == '"'
	switch typ {
	case "message":
	case "function_call", "custom_tool_call":
		m.Role = "assistant"
		m.Blocks = append(m.Blocks, block{Span: isp, Type: "tool_use", ToolUseID: callID, Name: name, Input: args})
	case "function_call_output", "custom_tool_call_output":
		m.Role = "tool"
		if output.ok() && body[output.s] == '"' || output.ok() && body[output.s] == '[' {
			m.Blocks = append(m.Blocks, block{Span: isp, Type: "tool_result", Hash: m.Hash, ToolUseID: callID, Content: output})
		}
	case "compaction", "compaction_summary":
		m.Role, m.Content, m.Str = "system", span{}, false
		m.Blocks = append(m.Blocks, block{Span: isp, Type: blockOpaque, Hash: m.Hash})
	default: // reasoning and other output items
		m.Role, m.Content, m.Str = "assistant", span{}, false
		m.Blocks = append(m.Blocks, block{Span: isp, Type: blockOpaque, Hash: m.Hash})
	}
	return m, nil
}

// toolNames appends the names of the tools in the array at val to names:
// an Anthropic tool's "name" or an OpenAI tool's "function"."name".
func toolNames(body []byte, val span, names *[]string) error {
	if body[val.s] != '[' {
		return nil
	}
	return elems(body, val, func(_ int, t span) error {
		if body[t.s] != '{' {
			return nil
		}
		return members(body, t, func(k []byte, v span) error {
			switch {
			case bytes.Equal(k, kName):
				*names = append(*names, str(body, v))
			case bytes.Equal(k, kFunction) && body[v.s] == '{':
				return members(body, v, func(k2 []byte, v2 span) error {
					if bytes.Equal(k2, kName) {
						*names = append(*names, str(body, v2))
					}
					return nil
				})
			}
			return nil
		})
	})
}
