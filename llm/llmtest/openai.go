package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// The OpenAI side: chat completions parsing, validation with the API's
// rules, automatic prefix caching, and JSON or SSE chunk answers.

type oMessage struct {
	path string
	role string
	f    map[string]json.RawMessage
}

func (m *oMessage) str(key string) (string, bool) {
	var s string
	if v, ok := m.f[key]; ok && json.Unmarshal(v, &s) == nil {
		return s, true
	}
	return "", false
}

type oToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

func (m *oMessage) toolCalls() []oToolCall {
	var calls []oToolCall
	json.Unmarshal(m.f["tool_calls"], &calls)
	return calls
}

// text is the message's text content: a string, or its text parts joined.
func (m *oMessage) text() string {
	c := m.f["content"]
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(c, &parts)
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

type oRequest struct {
	model        string
	stream       bool
	includeUsage bool
	maxTokens    int // max_tokens or max_completion_tokens, 0 when absent
	messages     []oMessage
	tools        []map[string]json.RawMessage
}

// oError is a validation failure as the API reports it.
type oError struct {
	msg, param, code string
}

var openaiTopLevel = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true, "stream": true,
	"stream_options": true, "tools": true, "tool_choice": true, "temperature": true, "top_p": true, "n": true,
	"stop": true, "presence_penalty": true, "frequency_penalty": true, "logit_bias": true, "logprobs": true,
	"top_logprobs": true, "user": true, "seed": true, "response_format": true, "parallel_tool_calls": true,
	"store": true, "metadata": true, "reasoning_effort": true, "service_tier": true, "prompt_cache_key": true,
	"prompt_cache_retention": true, "modalities": true, "audio": true, "prediction": true,
	"web_search_options": true, "safety_identifier": true, "verbosity": true, "functions": true, "function_call": true,
}

var messageFields = map[string][]string{
	"system":    {"role", "content", "name"},
	"developer": {"role", "content", "name"},
	"user":      {"role", "content", "name"},
	"assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call", "reasoning_content"},
	"tool":      {"role", "content", "tool_call_id"},
	"function":  {"role", "content", "name"},
}

func parseOpenAI(body []byte, cfg Config) (*oRequest, *oError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &oError{msg: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"}
	}
	for _, k := range sortedKeys(top) {
		if !openaiTopLevel[k] {
			return nil, &oError{msg: "Unrecognized request argument supplied: " + k}
		}
	}
	req := &oRequest{}
	if json.Unmarshal(top["model"], &req.model) != nil || req.model == "" {
		return nil, &oError{msg: "you must provide a model parameter"}
	}
	if v, ok := top["stream"]; ok && json.Unmarshal(v, &req.stream) != nil {
		return nil, &oError{msg: "Invalid type for 'stream': expected a boolean.", param: "stream"}
	}
	if v, ok := top["stream_options"]; ok {
		if !req.stream {
			return nil, &oError{msg: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: "stream_options"}
		}
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		json.Unmarshal(v, &so)
		req.includeUsage = so.IncludeUsage
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if v, ok := top[k]; ok {
			var n int
			if json.Unmarshal(v, &n) != nil || n < 1 {
				return nil, &oError{msg: fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1.", k), param: k, code: "integer_below_min_value"}
			}
			if n > cfg.MaxOutput {
				return nil, &oError{msg: fmt.Sprintf("%s is too large: %d. This model supports at most %d completion tokens, whereas you provided %d.", k, n, cfg.MaxOutput, n), param: k, code: "invalid_value"}
			}
			req.maxTokens = n
		}
	}
	if v, ok := top["tools"]; ok {
		if json.Unmarshal(v, &req.tools) != nil {
			return nil, &oError{msg: "Invalid type for 'tools': expected an array of objects.", param: "tools"}
		}
	}
	var msgs []map[string]json.RawMessage
	if v, ok := top["messages"]; !ok || json.Unmarshal(v, &msgs) != nil {
		return nil, &oError{msg: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"}
	}
	for i, f := range msgs {
		m := oMessage{path: fmt.Sprintf("messages.[%d]", i), f: f}
		m.role, _ = m.str("role")
		req.messages = append(req.messages, m)
	}
	return req, nil
}

func validateOpenAI(req *oRequest) *oError {
	if len(req.tools) > 128 {
		return &oError{msg: fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length %d instead.", len(req.tools)), param: "tools", code: "array_above_max_length"}
	}
	for i, t := range req.tools {
		var typ string
		json.Unmarshal(t["type"], &typ)
		if typ != "function" {
			return &oError{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' and 'custom'.", typ), param: fmt.Sprintf("tools[%d].type", i), code: "invalid_value"}
		}
		var fn struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		json.Unmarshal(t["function"], &fn)
		if !toolNamePattern(fn.Name) || len(fn.Name) > 64 {
			return &oError{msg: fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i), param: fmt.Sprintf("tools[%d].function.name", i), code: "invalid_value"}
		}
		if fn.Parameters != nil {
			var obj map[string]json.RawMessage
			if json.Unmarshal(fn.Parameters, &obj) != nil {
				return &oError{msg: fmt.Sprintf("Invalid type for 'tools[%d].function.parameters': expected an object.", i), param: fmt.Sprintf("tools[%d].function.parameters", i), code: "invalid_type"}
			}
		}
	}
	if len(req.messages) == 0 {
		return &oError{msg: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array"}
	}
	pending := map[string]bool{} // tool calls not answered yet
	var pendingOrder []string
	pendingFrom := -1
	for i := range req.messages {
		m := &req.messages[i]
		fields, ok := messageFields[m.role]
		if !ok {
			return &oError{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.role), param: m.path + ".role", code: "invalid_value"}
		}
		for _, k := range sortedKeys(m.f) {
			if !containsStr(fields, k) {
				return &oError{msg: fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected) - '%s'", k, plainPath(m.path)), param: m.path}
			}
		}
		if m.role != "tool" && len(pending) > 0 {
			var ids []string
			for _, id := range pendingOrder {
				if pending[id] {
					ids = append(ids, id)
				}
			}
			return &oError{msg: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", "), param: fmt.Sprintf("messages.[%d].role", pendingFrom)}
		}
		switch m.role {
		case "tool":
			id, ok := m.str("tool_call_id")
			if !ok {
				return &oError{msg: fmt.Sprintf("Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'."), param: m.path + ".tool_call_id", code: "missing_required_parameter"}
			}
			if pendingFrom < 0 || !pending[id] {
				return &oError{msg: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: m.path + ".role"}
			}
			delete(pending, id)
			if e := checkOpenAIContent(m, false); e != nil {
				return e
			}
		case "assistant":
			calls := m.toolCalls()
			if _, has := m.f["tool_calls"]; has && len(calls) == 0 {
				return &oError{msg: fmt.Sprintf("Invalid 'messages[%d].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.", i), param: m.path + ".tool_calls", code: "empty_array"}
			}
			c, hasContent := m.f["content"]
			if (!hasContent || string(c) == "null") && len(calls) == 0 {
				return &oError{msg: "Invalid value for 'content': expected a string, got null.", param: m.path + ".content", code: "invalid_value"}
			}
			if hasContent && string(c) != "null" {
				if e := checkOpenAIContent(m, false); e != nil {
					return e
				}
			}
			pending, pendingOrder, pendingFrom = map[string]bool{}, nil, -1
			for j, call := range calls {
				if call.ID == "" {
					return &oError{msg: fmt.Sprintf("Missing required parameter: 'messages[%d].tool_calls[%d].id'.", i, j), param: fmt.Sprintf("messages.[%d].tool_calls.[%d].id", i, j), code: "missing_required_parameter"}
				}
				var args string
				if json.Unmarshal(call.Function.Arguments, &args) != nil {
					return &oError{msg: fmt.Sprintf("Invalid type for 'messages[%d].tool_calls[%d].function.arguments': expected a string, but got an object instead.", i, j), param: fmt.Sprintf("messages.[%d].tool_calls.[%d].function.arguments", i, j), code: "invalid_type"}
				}
				if !toolNamePattern(call.Function.Name) {
					return &oError{msg: fmt.Sprintf("Invalid 'messages[%d].tool_calls[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i, j), param: fmt.Sprintf("messages.[%d].tool_calls.[%d].function.name", i, j), code: "invalid_value"}
				}
				pending[call.ID] = true
				pendingOrder = append(pendingOrder, call.ID)
				pendingFrom = i
			}
		default:
			if e := checkOpenAIContent(m, m.role == "user"); e != nil {
				return e
			}
		}
	}
	if len(pending) > 0 {
		var ids []string
		for _, id := range pendingOrder {
			if pending[id] {
				ids = append(ids, id)
			}
		}
		return &oError{msg: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", "), param: fmt.Sprintf("messages.[%d].role", pendingFrom)}
	}
	return nil
}

// checkOpenAIContent checks a message's content: a string, or a list of
// parts (images only in user messages).
func checkOpenAIContent(m *oMessage, images bool) *oError {
	c, ok := m.f["content"]
	if !ok || string(c) == "null" {
		return &oError{msg: "Invalid value for 'content': expected a string, got null.", param: m.path + ".content", code: "invalid_value"}
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return nil
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(c, &parts) != nil {
		return &oError{msg: "Invalid type for 'content': expected one of a string or array of objects.", param: m.path + ".content", code: "invalid_type"}
	}
	for k, p := range parts {
		var typ string
		json.Unmarshal(p["type"], &typ)
		allowed := []string{"type", "text"}
		switch {
		case typ == "text":
		case typ == "image_url" && images:
			allowed = []string{"type", "image_url"}
		default:
			return &oError{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text'%s.", typ, map[bool]string{true: ", 'image_url', 'input_audio', 'refusal', 'audio', and 'file'", false: ""}[images]), param: fmt.Sprintf("%s.content.[%d].type", m.path, k), code: "invalid_value"}
		}
		for _, key := range sortedKeys(p) {
			if !containsStr(allowed, key) {
				return &oError{msg: fmt.Sprintf("Additional properties are not allowed ('%s' was unexpected) - '%s.content.%d'", key, plainPath(m.path), k), param: fmt.Sprintf("%s.content.[%d]", m.path, k)}
			}
		}
	}
	return nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// positions lays the request out for the automatic cache: tools, then
// each message.
func (req *oRequest) positions() []position {
	var ps []position
	for _, t := range req.tools {
		raw, _ := json.Marshal(t)
		ps = append(ps, position{key: append([]byte("tool\x00"), canonical(raw)...), tokens: toolTokens + Tokens(string(canonical(t["function"])))})
	}
	for i := range req.messages {
		m := &req.messages[i]
		raw, _ := json.Marshal(m.f)
		n := messageTokens + Tokens(m.text())
		for _, c := range m.toolCalls() {
			var args string
			json.Unmarshal(c.Function.Arguments, &args)
			n += blockTokens + Tokens(c.Function.Name+" "+args)
		}
		ps = append(ps, position{key: append([]byte(m.role+"\x00"), canonical(raw)...), tokens: n})
	}
	return ps
}

// convMessages decodes the messages into ctxkit's model: system messages
// are left out (see systemText), tool messages become tool_result blocks
// at the head of the following user message.
func (req *oRequest) convMessages() []conv.Message {
	var out []conv.Message
	var results []conv.Block
	flush := func() {
		if results != nil {
			out = append(out, conv.Message{Role: conv.RoleUser, Blocks: results})
			results = nil
		}
	}
	for i := range req.messages {
		m := &req.messages[i]
		switch m.role {
		case "tool":
			id, _ := m.str("tool_call_id")
			results = append(results, conv.Block{Type: conv.TypeToolResult, ToolUseID: id, Text: m.text()})
		case "user":
			blocks := results
			results = nil
			if t := m.text(); t != "" {
				blocks = append(blocks, conv.Block{Type: conv.TypeText, Text: t})
			}
			out = append(out, conv.Message{Role: conv.RoleUser, Blocks: blocks})
		case "assistant":
			flush()
			cm := conv.Message{Role: conv.RoleAssistant}
			if t := m.text(); t != "" {
				cm.Blocks = append(cm.Blocks, conv.Block{Type: conv.TypeText, Text: t})
			}
			for _, c := range m.toolCalls() {
				var args string
				json.Unmarshal(c.Function.Arguments, &args)
				cm.Blocks = append(cm.Blocks, conv.Block{Type: conv.TypeToolUse, ToolUseID: c.ID, Name: c.Function.Name, Input: json.RawMessage(args)})
			}
			out = append(out, cm)
		}
	}
	flush()
	return out
}

func (req *oRequest) systemText() string {
	var parts []string
	for i := range req.messages {
		if r := req.messages[i].role; r == "system" || r == "developer" {
			parts = append(parts, req.messages[i].text())
		}
	}
	return strings.Join(parts, "\n")
}

func (req *oRequest) toolNames() []string {
	var names []string
	for _, t := range req.tools {
		var fn struct {
			Name string `json:"name"`
		}
		json.Unmarshal(t["function"], &fn)
		names = append(names, fn.Name)
	}
	return names
}

func openaiError(msg, typ, param, code string) obj {
	var p, c any
	if param != "" {
		p = param
	}
	if code != "" {
		c = code
	}
	return obj{{"error", obj{{"message", msg}, {"type", typ}, {"param", p}, {"code", c}}}}
}

type oUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// openaiStart begins an answer on an OpenAI endpoint (chat completions,
// Responses): the request id header, the error writer, and the
// API key check, which answers 401 itself when the key is wrong (ok false).
func (s *Server) openaiStart(w http.ResponseWriter, r *http.Request, c *Call) (h http.Header, fail func(status int, msg, typ, param, code string), ok bool) {
	h = http.Header{"X-Request-Id": {fmt.Sprintf("req_llmtest%06d", c.N)}}
	fail = func(status int, msg, typ, param, code string) {
		s.finish(c, status, msg)
		writeJSON(w, status, h, openaiError(msg, typ, param, code))
	}
	if s.cfg.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		fail(http.StatusUnauthorized, "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "", "invalid_api_key")
		return h, fail, false
	}
	return h, fail, true
}

func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request, c *Call) {
	h, fail, ok := s.openaiStart(w, r, c)
	if !ok {
		return
	}
	req, e := parseOpenAI(c.Body, s.cfg)
	if e == nil {
		s.mu.Lock()
		c.Model, c.Stream, c.System, c.Tools, c.Messages = req.model, req.stream, req.systemText(), req.toolNames(), req.convMessages()
		c.MaxTokens = req.maxTokens
		s.mu.Unlock()
		e = validateOpenAI(req)
	}
	if e != nil {
		s.reject(c, e.msg)
		writeJSON(w, http.StatusBadRequest, h, openaiError(e.msg, "invalid_request_error", e.param, e.code))
		return
	}
	ps := req.positions()
	prompt, over, answerOver := s.overWindow(c, ps, req.maxTokens)
	if over {
		fail(http.StatusBadRequest, fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.cfg.Window, prompt),
			"invalid_request_error", "messages", "context_length_exceeded")
		return
	}
	if answerOver {
		// The window holds the messages and the completion.
		fail(http.StatusBadRequest, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", s.cfg.Window, prompt+req.maxTokens, prompt, req.maxTokens),
			"invalid_request_error", "messages", "context_length_exceeded")
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
	cached := 0
	if !s.cfg.NoCache {
		cached = s.oai.automaticUsage(s.cfg.Now(), req.model, ps, s.cfg.MinCached, s.cfg.CacheStep)
	}
	s.mu.Unlock()
	var u oUsage
	u.PromptTokens = prompt
	u.PromptTokensDetails.CachedTokens = cached
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(reply.Calls) > 0 {
			stop = "tool_use"
		}
	}
	fr := finishReason(stop)
	type outCall struct {
		id, name, args string
	}
	var calls []outCall
	output := 0
	if reply.Thinking != "" {
		u.CompletionTokensDetails.ReasoningTokens = Tokens(reply.Thinking)
		output += blockTokens + Tokens(reply.Thinking)
	}
	if reply.Text != "" {
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
		calls = append(calls, outCall{id, call.Name, args})
		output += blockTokens + Tokens(call.Name+" "+args)
	}
	u.CompletionTokens = max(output, 1)
	if ru := reply.Usage; ru != nil {
		prompt, cached = ru.Prompt(), ru.CacheRead
		u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens = prompt, cached, ru.Output
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	errMsg := ""
	if f != nil && f.Kind == StreamError {
		errMsg = "The server is overloaded or not ready yet."
	}
	s.mu.Lock()
	c.Status, c.Error, c.Prompt = http.StatusOK, errMsg, prompt
	c.Usage = llm.Usage{Input: prompt - cached, Output: u.CompletionTokens, CacheRead: cached}
	s.mu.Unlock()

	id := fmt.Sprintf("chatcmpl-llmtest%06d", c.N)
	created := s.cfg.Now().Unix()
	if !req.stream {
		if f != nil {
			switch f.Kind {
			case CutStream, Truncate:
				panic(http.ErrAbortHandler)
			case StreamError:
				writeJSON(w, http.StatusServiceUnavailable, h, openaiError("The server is overloaded or not ready yet.", "server_error", "", ""))
				return
			case Stall:
				if !wait(r, f.Delay) {
					return
				}
			}
		}
		var content any
		if reply.Text != "" {
			content = reply.Text
		}
		msg := obj{{"role", "assistant"}, {"content", content}, {"refusal", nil}}
		if reply.Thinking != "" {
			msg = append(msg, kv{"reasoning_content", reply.Thinking})
		}
		if len(calls) > 0 {
			var tcs []obj
			for _, c := range calls {
				tcs = append(tcs, obj{{"id", c.id}, {"type", "function"}, {"function", obj{{"name", c.name}, {"arguments", c.args}}}})
			}
			msg = append(msg, kv{"tool_calls", tcs})
		}
		writeJSON(w, http.StatusOK, h, obj{{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", req.model},
			{"choices", []obj{{{"index", 0}, {"message", msg}, {"logprobs", nil}, {"finish_reason", fr}}}},
			{"usage", u}, {"system_fingerprint", "fp_llmtest"}})
		return
	}
	chunk := func(delta obj, finish any) sseEvent {
		ch := obj{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", req.model},
			{"system_fingerprint", "fp_llmtest"},
			{"choices", []obj{{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}}}
		if req.includeUsage {
			ch = append(ch, kv{"usage", nil})
		}
		return sseEvent{data: ch}
	}
	evs := []sseEvent{chunk(obj{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}, nil)}
	for _, p := range chunks(reply.Thinking, s.cfg.Chunk) {
		evs = append(evs, chunk(obj{{"reasoning_content", p}}, nil))
	}
	for _, p := range chunks(reply.Text, s.cfg.Chunk) {
		evs = append(evs, chunk(obj{{"content", p}}, nil))
	}
	for i, c := range calls {
		evs = append(evs, chunk(obj{{"tool_calls", []obj{{{"index", i}, {"id", c.id}, {"type", "function"},
			{"function", obj{{"name", c.name}, {"arguments", ""}}}}}}}, nil))
		for _, p := range chunks(c.args, s.cfg.Chunk) {
			evs = append(evs, chunk(obj{{"tool_calls", []obj{{{"index", i}, {"function", obj{{"arguments", p}}}}}}}, nil))
		}
	}
	evs = append(evs, chunk(obj{}, fr))
	if req.includeUsage {
		evs = append(evs, sseEvent{data: obj{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", req.model},
			{"system_fingerprint", "fp_llmtest"}, {"choices", []obj{}}, {"usage", u}}})
	}
	evs = append(evs, sseEvent{data: rawData("[DONE]")})
	streamEvents(w, r, h, evs, f, sseEvent{data: openaiError("The server is overloaded or not ready yet.", "server_error", "", "")})
}

// rawData is event data written as is, not as JSON.
type rawData string

// plainPath writes "messages.[2]" as "messages.2", as schema errors do.
func plainPath(p string) string {
	return strings.NewReplacer(".[", ".", "]", "").Replace(p)
}

// openaiFault answers fault f as the OpenAI APIs do, through fail for the
// error statuses; it reports whether the response is still to be sent
// (no fault that ends the request, or a Slow one waited out).
func openaiFault(w http.ResponseWriter, r *http.Request, h http.Header, f *Fault, model string, fail func(status int, msg, typ, param, code string)) bool {
	switch f.Kind {
	case RateLimited:
		if f.RetryAfter > 0 {
			h.Set("Retry-After", retryAfter(f.RetryAfter))
		}
		fail(http.StatusTooManyRequests, fmt.Sprintf("Rate limit reached for %s in organization org-llmtest on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.", model), "requests", "", "rate_limit_exceeded")
	case Overloaded:
		if f.RetryAfter > 0 {
			h.Set("Retry-After", retryAfter(f.RetryAfter))
		}
		fail(http.StatusServiceUnavailable, "The server is overloaded or not ready yet.", "server_error", "", "")
	case ServerError:
		fail(http.StatusInternalServerError, "The server had an error while processing your request. Sorry about that!", "server_error", "", "")
	case Unauthorized:
		fail(http.StatusUnauthorized, "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "", "invalid_api_key")
	case Forbidden:
		fail(http.StatusForbidden, "You are not allowed to sample from this model", "invalid_request_error", "", "model_not_found")
	case Slow:
		return wait(r, f.Delay)
	default:
		return true
	}
	return false
}
