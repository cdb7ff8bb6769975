package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// The OpenAI Responses API side (POST /v1/responses), as Codex CLI uses
// it: stateless requests (store:false) that resend the whole history as
// input items every turn, reasoning carried between turns as encrypted
// items the server issued and verifies, automatic prefix caching, and
// the API's server-sent events.

var responsesTopLevel = map[string]bool{
	"model": true, "input": true, "instructions": true, "tools": true, "tool_choice": true,
	"parallel_tool_calls": true, "reasoning": true, "store": true, "stream": true, "stream_options": true,
	"include": true, "prompt_cache_key": true, "prompt_cache_retention": true, "client_metadata": true,
	"text": true, "max_output_tokens": true, "max_tool_calls": true, "metadata": true,
	"previous_response_id": true, "conversation": true, "service_tier": true, "truncation": true, "user": true,
	"temperature": true, "top_p": true, "top_logprobs": true, "safety_identifier": true, "background": true,
	"context_management": true, "prompt": true,
}

// Item types the server accepts in input, and whether each is an output
// item a reasoning item may precede.
var responsesItems = map[string]bool{
	"message": true, "function_call": true, "function_call_output": false, "custom_tool_call": true,
	"custom_tool_call_output": false, "reasoning": false, "compaction": false, "web_search_call": true,
	"local_shell_call": true, "local_shell_call_output": false, "tool_search_call": true,
	"tool_search_output": false, "image_generation_call": true, "item_reference": false,
}

// EncryptedContent is the encrypted_content the server gives a reasoning
// item (or a compaction item) whose text is text, and the only one it
// accepts back for it: content changed in any way is refused, as the real
// API refuses content it cannot decrypt. Tests that build reasoning items
// by hand seal them with it.
func EncryptedContent(text string) string {
	h := sha256.Sum256([]byte("llmtest reasoning\x00" + text))
	return "gAAAAB" + base64.RawURLEncoding.EncodeToString(append(h[:16], text...))
}

// openEncrypted returns the text sealed in enc, or false.
func openEncrypted(enc string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(enc, "gAAAAB"))
	if !strings.HasPrefix(enc, "gAAAAB") || err != nil || len(raw) < 16 {
		return "", false
	}
	text := string(raw[16:])
	return text, EncryptedContent(text) == enc
}

type rItem struct {
	path string
	typ  string
	f    map[string]json.RawMessage
}

func (it *rItem) str(key string) string {
	var s string
	json.Unmarshal(it.f[key], &s)
	return s
}

// text is the item's text: a message's text parts, a call's arguments or
// input, an output's text, a reasoning item's summary.
func (it *rItem) text() string {
	switch it.typ {
	case "message":
		return partsText(it.f["content"])
	case "function_call":
		return it.str("name") + " " + it.str("arguments")
	case "custom_tool_call":
		return it.str("name") + " " + it.str("input")
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		return partsText(it.f["output"])
	case "reasoning":
		var sum []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(it.f["summary"], &sum)
		var sb strings.Builder
		for _, s := range sum {
			sb.WriteString(s.Text)
		}
		return sb.String()
	}
	return string(canonical(mustJSON(it.f)))
}

// partsText is a string, or the text of a list of content parts.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

type rRequest struct {
	model        string
	stream       bool
	instructions string
	include      []string
	tools        []map[string]json.RawMessage
	items        []rItem
}

func parseResponses(body []byte, cfg Config) (*rRequest, *oError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &oError{msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"}
	}
	for _, k := range sortedKeys(top) {
		if !responsesTopLevel[k] {
			return nil, &oError{msg: fmt.Sprintf("Unknown parameter: '%s'.", k), param: k, code: "unknown_parameter"}
		}
	}
	req := &rRequest{}
	if json.Unmarshal(top["model"], &req.model) != nil || req.model == "" {
		return nil, &oError{msg: "Missing required parameter: 'model'.", param: "model", code: "missing_required_parameter"}
	}
	if v, ok := top["stream"]; ok && json.Unmarshal(v, &req.stream) != nil {
		return nil, &oError{msg: "Invalid type for 'stream': expected a boolean, but got a string instead.", param: "stream", code: "invalid_type"}
	}
	if v, ok := top["instructions"]; ok && string(v) != "null" && json.Unmarshal(v, &req.instructions) != nil {
		return nil, &oError{msg: "Invalid type for 'instructions': expected a string.", param: "instructions", code: "invalid_type"}
	}
	json.Unmarshal(top["include"], &req.include)
	if v, ok := top["max_output_tokens"]; ok {
		var n int
		if json.Unmarshal(v, &n) != nil || n < 16 {
			return nil, &oError{msg: "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16.", param: "max_output_tokens", code: "integer_below_min_value"}
		}
		if n > cfg.MaxOutput {
			return nil, &oError{msg: fmt.Sprintf("max_output_tokens is too large: %d. This model supports at most %d output tokens.", n, cfg.MaxOutput), param: "max_output_tokens", code: "invalid_value"}
		}
	}
	if v, ok := top["tools"]; ok && json.Unmarshal(v, &req.tools) != nil {
		return nil, &oError{msg: "Invalid type for 'tools': expected an array of objects.", param: "tools", code: "invalid_type"}
	}
	if v, ok := top["previous_response_id"]; ok && string(v) != "null" {
		var id string
		json.Unmarshal(v, &id)
		return nil, &oError{msg: fmt.Sprintf("Previous response with id '%s' not found.", id), param: "previous_response_id", code: "previous_response_not_found"}
	}
	raw, ok := top["input"]
	if !ok {
		return nil, &oError{msg: "Missing required parameter: 'input'.", param: "input", code: "missing_required_parameter"}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		req.items = []rItem{{path: "input", typ: "message", f: map[string]json.RawMessage{"role": json.RawMessage(`"user"`), "content": raw}}}
		return req, nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, &oError{msg: "Invalid type for 'input': expected one of a string or array of input items.", param: "input", code: "invalid_type"}
	}
	for i, f := range items {
		it := rItem{path: fmt.Sprintf("input[%d]", i), f: f, typ: "message"}
		if v, ok := f["type"]; ok {
			json.Unmarshal(v, &it.typ)
		}
		req.items = append(req.items, it)
	}
	return req, nil
}

func validateResponses(req *rRequest) *oError {
	for i, t := range req.tools {
		var typ, name string
		json.Unmarshal(t["type"], &typ)
		json.Unmarshal(t["name"], &name)
		if (typ == "function" || typ == "custom") && (!toolNamePattern(name) || len(name) > 64) {
			return &oError{msg: fmt.Sprintf("Invalid 'tools[%d].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i), param: fmt.Sprintf("tools[%d].name", i), code: "invalid_value"}
		}
	}
	calls := map[string]int{} // call_id → the index of the call not yet answered
	var order []string
	for i := range req.items {
		it := &req.items[i]
		follows, known := responsesItems[it.typ]
		if !known {
			return &oError{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'message', 'reasoning', 'function_call', 'function_call_output', 'custom_tool_call', 'custom_tool_call_output', 'compaction' and others.", it.typ), param: it.path + ".type", code: "invalid_value"}
		}
		_ = follows
		switch it.typ {
		case "message":
			role := it.str("role")
			if !slices.Contains([]string{"user", "assistant", "system", "developer"}, role) {
				return &oError{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", role), param: it.path + ".role", code: "invalid_value"}
			}
			if _, ok := it.f["content"]; !ok {
				return &oError{msg: fmt.Sprintf("Missing required parameter: '%s.content'.", it.path), param: it.path + ".content", code: "missing_required_parameter"}
			}
		case "function_call", "custom_tool_call":
			id := it.str("call_id")
			if id == "" {
				return &oError{msg: fmt.Sprintf("Missing required parameter: '%s.call_id'.", it.path), param: it.path + ".call_id", code: "missing_required_parameter"}
			}
			calls[id] = i
			order = append(order, id)
		case "function_call_output", "custom_tool_call_output":
			id := it.str("call_id")
			if _, ok := calls[id]; !ok {
				return &oError{msg: fmt.Sprintf("No tool call found for function call output with call_id %s.", id), param: "input", code: ""}
			}
			delete(calls, id)
			if _, ok := it.f["output"]; !ok {
				return &oError{msg: fmt.Sprintf("Missing required parameter: '%s.output'.", it.path), param: it.path + ".output", code: "missing_required_parameter"}
			}
		case "reasoning", "compaction":
			if enc, ok := it.f["encrypted_content"]; ok && string(enc) != "null" {
				var s string
				json.Unmarshal(enc, &s)
				if _, ok := openEncrypted(s); !ok {
					return &oError{msg: fmt.Sprintf("The encrypted content for item %s could not be verified. Reason: Encrypted content could not be decrypted or parsed.", itemName(it)), param: it.path + ".encrypted_content", code: "invalid_encrypted_content"}
				}
			} else if it.typ == "compaction" {
				return &oError{msg: fmt.Sprintf("Missing required parameter: '%s.encrypted_content'.", it.path), param: it.path + ".encrypted_content", code: "missing_required_parameter"}
			}
			if it.typ == "reasoning" {
				next := i + 1
				if next >= len(req.items) || !isOutputItem(&req.items[next]) {
					return &oError{msg: fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", itemName(it)), param: "input", code: ""}
				}
			}
		}
	}
	for _, id := range order {
		if _, ok := calls[id]; ok {
			return &oError{msg: fmt.Sprintf("No tool output found for function call %s.", id), param: "input", code: ""}
		}
	}
	return nil
}

// isOutputItem reports whether it is an item a model outputs after its
// reasoning: an assistant message or a call.
func isOutputItem(it *rItem) bool {
	if it.typ == "message" {
		return it.str("role") == "assistant"
	}
	return responsesItems[it.typ]
}

func itemName(it *rItem) string {
	if id := it.str("id"); id != "" {
		return id
	}
	return it.path
}

// positions lays the request out for the automatic cache: instructions,
// tools, then each input item.
func (req *rRequest) positions() []position {
	var ps []position
	if req.instructions != "" {
		ps = append(ps, position{key: []byte("instructions\x00" + req.instructions), tokens: messageTokens + Tokens(req.instructions)})
	}
	for _, t := range req.tools {
		raw := canonical(mustJSON(t))
		ps = append(ps, position{key: append([]byte("tool\x00"), raw...), tokens: toolTokens + Tokens(string(raw))})
	}
	for i := range req.items {
		it := &req.items[i]
		ps = append(ps, position{key: append([]byte("item\x00"), canonical(mustJSON(it.f))...), tokens: messageTokens + Tokens(it.text())})
	}
	return ps
}

// convMessages decodes the items into ctxkit's model: consecutive output
// items make one assistant message, outputs are tool_result blocks of a
// user message; system and developer messages are left out (systemText).
func (req *rRequest) convMessages() []conv.Message {
	var out []conv.Message
	add := func(role conv.Role, b conv.Block) {
		if n := len(out); n > 0 && out[n-1].Role == role && (role == conv.RoleAssistant || b.Type == conv.TypeToolResult || out[n-1].Blocks[len(out[n-1].Blocks)-1].Type == conv.TypeToolResult) {
			out[n-1].Blocks = append(out[n-1].Blocks, b)
			return
		}
		out = append(out, conv.Message{Role: role, Blocks: []conv.Block{b}})
	}
	for i := range req.items {
		it := &req.items[i]
		switch it.typ {
		case "message":
			switch it.str("role") {
			case "user":
				add(conv.RoleUser, conv.Block{Type: conv.TypeText, Text: it.text()})
			case "assistant":
				add(conv.RoleAssistant, conv.Block{Type: conv.TypeText, Text: it.text()})
			}
		case "reasoning":
			add(conv.RoleAssistant, conv.Block{Type: conv.TypeThinking, Text: it.text(), Signature: it.str("encrypted_content")})
		case "function_call":
			add(conv.RoleAssistant, conv.Block{Type: conv.TypeToolUse, ToolUseID: it.str("call_id"), Name: it.str("name"), Input: json.RawMessage(it.str("arguments"))})
		case "custom_tool_call":
			add(conv.RoleAssistant, conv.Block{Type: conv.TypeToolUse, ToolUseID: it.str("call_id"), Name: it.str("name"), Input: mustJSON(it.str("input"))})
		case "function_call_output", "custom_tool_call_output":
			add(conv.RoleUser, conv.Block{Type: conv.TypeToolResult, ToolUseID: it.str("call_id"), Text: it.text()})
		}
	}
	return out
}

func (req *rRequest) systemText() string {
	parts := []string{}
	if req.instructions != "" {
		parts = append(parts, req.instructions)
	}
	for i := range req.items {
		if it := &req.items[i]; it.typ == "message" && (it.str("role") == "system" || it.str("role") == "developer") {
			parts = append(parts, it.text())
		}
	}
	return strings.Join(parts, "\n")
}

// toolKinds maps each function or custom tool's name to its type.
func (req *rRequest) toolKinds() (names []string, kinds map[string]string) {
	kinds = map[string]string{}
	for _, t := range req.tools {
		var typ, name string
		json.Unmarshal(t["type"], &typ)
		json.Unmarshal(t["name"], &name)
		if name == "" {
			continue
		}
		names = append(names, name)
		kinds[name] = typ
	}
	return names, kinds
}

type rUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request, c *Call) {
	h, fail, ok := s.openaiStart(w, r, c)
	if !ok {
		return
	}
	req, e := parseResponses(c.Body, s.cfg)
	var kinds map[string]string
	if e == nil {
		var names []string
		names, kinds = req.toolKinds()
		s.mu.Lock()
		c.Model, c.Stream, c.System, c.Tools, c.Messages = req.model, req.stream, req.systemText(), names, req.convMessages()
		s.mu.Unlock()
		e = validateResponses(req)
	}
	if e != nil {
		s.reject(c, e.msg)
		writeJSON(w, http.StatusBadRequest, h, openaiError(e.msg, "invalid_request_error", e.param, e.code))
		return
	}
	ps := req.positions()
	prompt, over, _ := s.overWindow(c, ps, 0) // max_output_tokens is not checked against the window here
	if over {
		fail(http.StatusBadRequest, "Your input exceeds the context window of this model. Please adjust your input and try again.", "invalid_request_error", "input", "context_length_exceeded")
		return
	}
	reply := s.next(c)
	f := reply.Fault
	if f != nil {
		if !openaiFault(w, r, h, f, req.model, fail) {
			return
		}
	}
	s.mu.Lock()
	cached := s.oai.automaticUsage(s.cfg.Now(), req.model, ps, s.cfg.MinCached, s.cfg.CacheStep)
	s.mu.Unlock()

	var u rUsage
	u.InputTokens = prompt
	u.InputTokensDetails.CachedTokens = cached
	var items []obj
	output := 0
	encrypted := slices.Contains(req.include, "reasoning.encrypted_content")
	if reply.Thinking != "" {
		rs := obj{{"id", fmt.Sprintf("rs_llmtest%06d", c.N)}, {"type", "reasoning"},
			{"summary", []obj{{{"type", "summary_text"}, {"text", reply.Thinking}}}}}
		if encrypted {
			rs = append(rs, kv{"encrypted_content", EncryptedContent(reply.Thinking)})
		}
		items = append(items, rs)
		u.OutputTokensDetails.ReasoningTokens = Tokens(reply.Thinking)
		output += blockTokens + Tokens(reply.Thinking)
	}
	if reply.Text != "" {
		items = append(items, obj{{"id", fmt.Sprintf("msg_llmtest%06d", c.N)}, {"type", "message"}, {"status", "completed"}, {"role", "assistant"},
			{"content", []obj{{{"type", "output_text"}, {"text", reply.Text}, {"annotations", []any{}}}}}})
		output += blockTokens + Tokens(reply.Text)
	}
	for i, call := range reply.Calls {
		id := call.ID
		if id == "" {
			id = fmt.Sprintf("call_llmtest%04d_%d", c.N, i+1)
		}
		args := call.Input
		if args == "" {
			args = "{}"
		}
		itemID := fmt.Sprintf("fc_llmtest%06d_%d", c.N, i+1)
		if kinds[call.Name] == "custom" {
			items = append(items, obj{{"id", itemID}, {"type", "custom_tool_call"}, {"status", "completed"}, {"call_id", id}, {"name", call.Name}, {"input", args}})
		} else {
			items = append(items, obj{{"id", itemID}, {"type", "function_call"}, {"status", "completed"}, {"call_id", id}, {"name", call.Name}, {"arguments", args}})
		}
		output += blockTokens + Tokens(call.Name+" "+args)
	}
	u.OutputTokens = max(output, 1)
	if ru := reply.Usage; ru != nil {
		prompt, cached = ru.Prompt(), ru.CacheRead
		u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens = prompt, cached, ru.Output
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	s.mu.Lock()
	c.Status, c.Prompt = http.StatusOK, prompt
	c.Usage = llm.Usage{Input: prompt - cached, Output: u.OutputTokens, CacheRead: cached}
	s.mu.Unlock()

	id := fmt.Sprintf("resp_llmtest%06d", c.N)
	created := s.cfg.Now().Unix()
	response := func(status string, output []obj, usage any) obj {
		if output == nil {
			output = []obj{}
		}
		return obj{{"id", id}, {"object", "response"}, {"created_at", created}, {"status", status}, {"model", req.model},
			{"output", output}, {"parallel_tool_calls", true}, {"store", false}, {"usage", usage}}
	}
	if !req.stream {
		writeJSON(w, http.StatusOK, h, response("completed", items, u))
		return
	}
	var evs []sseEvent
	ev := func(typ string, fields ...kv) {
		o := obj{{"type", typ}, {"sequence_number", len(evs)}}
		evs = append(evs, sseEvent{name: typ, data: append(o, fields...)})
	}
	ev("response.created", kv{"response", response("in_progress", nil, nil)})
	ev("response.in_progress", kv{"response", response("in_progress", nil, nil)})
	for i, it := range items {
		ev("response.output_item.added", kv{"output_index", i}, kv{"item", it})
		var typ, text, itemID string
		for _, f := range it {
			switch f.k {
			case "type":
				typ = f.v.(string)
			case "id":
				itemID = f.v.(string)
			}
		}
		switch typ {
		case "message":
			text = reply.Text
			for _, p := range chunks(text, s.cfg.Chunk) {
				ev("response.output_text.delta", kv{"item_id", itemID}, kv{"output_index", i}, kv{"content_index", 0}, kv{"delta", p})
			}
			ev("response.output_text.done", kv{"item_id", itemID}, kv{"output_index", i}, kv{"content_index", 0}, kv{"text", text})
		case "reasoning":
			for _, p := range chunks(reply.Thinking, s.cfg.Chunk) {
				ev("response.reasoning_summary_text.delta", kv{"item_id", itemID}, kv{"output_index", i}, kv{"summary_index", 0}, kv{"delta", p})
			}
			ev("response.reasoning_summary_text.done", kv{"item_id", itemID}, kv{"output_index", i}, kv{"summary_index", 0}, kv{"text", reply.Thinking})
		}
		ev("response.output_item.done", kv{"output_index", i}, kv{"item", it})
	}
	ev("response.completed", kv{"response", response("completed", items, u)})
	streamEvents(w, r, h, evs, f, sseEvent{name: "error", data: obj{{"type", "error"}, {"code", "server_error"}, {"message", "The server is overloaded or not ready yet."}, {"param", nil}}})
}
