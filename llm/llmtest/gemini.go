package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// The Gemini API side (generativelanguage v1beta), as Gemini CLI uses it:
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent
// (?alt=sse) and :countTokens, the key in x-goog-api-key or ?key=.
// Contents alternate between "user" and "model" turns; a model turn's
// functionCall parts are answered, as many, by the functionResponse parts
// of the user turn right after it. The server signs the first function
// call of each answer (and the text of an answer without calls) with a
// thoughtSignature, verifies every signature that comes back against its
// part, and refuses a function call of the current turn that lost its
// signature, as Gemini 3 models do. Prompt caching is implicit: the
// longest cached prefix is read, like OpenAI's.

var geminiTopLevel = map[string]bool{
	"contents": true, "systemInstruction": true, "system_instruction": true, "tools": true, "toolConfig": true,
	"tool_config": true, "generationConfig": true, "generation_config": true, "safetySettings": true,
	"safety_settings": true, "cachedContent": true, "cached_content": true, "labels": true,
}

var geminiPartData = []string{"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"}

var geminiPartFields = map[string]bool{"thought": true, "thoughtSignature": true, "videoMetadata": true, "partMetadata": true, "mediaResolution": true}

// ThoughtSignature is the thoughtSignature the server gives a part whose
// function call (canonical JSON of name and args) or text is content, and
// the only one it accepts back on it.
func ThoughtSignature(content []byte) string {
	h := sha256.Sum256(append([]byte("llmtest thought\x00"), content...))
	return base64.StdEncoding.EncodeToString(h[:24])
}

// CallSignature is the thoughtSignature the server gives a function call
// of name with args, and the only one it accepts back on that call.
func CallSignature(name string, args []byte) string {
	return ThoughtSignature(append([]byte(name+"\x00"), canonical(args)...))
}

type gPart map[string]json.RawMessage

// signed is what a part's signature covers.
func (p gPart) signed() []byte {
	if fc, ok := p["functionCall"]; ok {
		var c struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		json.Unmarshal(fc, &c)
		return append([]byte(c.Name+"\x00"), canonical(c.Args)...)
	}
	var t string
	json.Unmarshal(p["text"], &t)
	return []byte(t)
}

func (p gPart) text() string {
	var t string
	json.Unmarshal(p["text"], &t)
	return t
}

type gContent struct {
	path  string
	role  string
	parts []gPart
}

func (c *gContent) count(field string) int {
	n := 0
	for _, p := range c.parts {
		if _, ok := p[field]; ok {
			n++
		}
	}
	return n
}

type gRequest struct {
	model    string
	method   string
	stream   bool
	system   string
	tools    []string
	contents []gContent
	raw      map[string]json.RawMessage
}

type gError struct {
	code int
	msg  string
}

func parseGemini(r *http.Request, body []byte) (*gRequest, *gError) {
	seg := strings.TrimPrefix(r.URL.Path, "/v1beta/models/")
	i := strings.LastIndexByte(seg, ':')
	if i <= 0 {
		return nil, &gError{http.StatusNotFound, "Requested entity was not found."}
	}
	req := &gRequest{model: seg[:i], method: seg[i+1:]}
	switch req.method {
	case "generateContent", "countTokens":
	case "streamGenerateContent":
		req.stream = true
	default:
		return nil, &gError{http.StatusNotFound, fmt.Sprintf("Method %s not found.", req.method)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &gError{http.StatusBadRequest, "Invalid JSON payload received. Unexpected token."}
	}
	if req.method == "countTokens" {
		if g, ok := top["generateContentRequest"]; ok {
			top = nil
			json.Unmarshal(g, &top)
		} else {
			delete(top, "model")
		}
	}
	req.raw = top
	for _, k := range sortedKeys(top) {
		if !geminiTopLevel[k] {
			return nil, &gError{http.StatusBadRequest, fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", k)}
		}
	}
	for _, k := range []string{"systemInstruction", "system_instruction"} {
		if v, ok := top[k]; ok {
			var si struct {
				Parts []gPart `json:"parts"`
			}
			json.Unmarshal(v, &si)
			var ts []string
			for _, p := range si.Parts {
				ts = append(ts, p.text())
			}
			req.system = strings.Join(ts, "\n")
		}
	}
	var tools []struct {
		Decls []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	}
	json.Unmarshal(top["tools"], &tools)
	for _, t := range tools {
		for _, d := range t.Decls {
			req.tools = append(req.tools, d.Name)
		}
	}
	var contents []struct {
		Role  string  `json:"role"`
		Parts []gPart `json:"parts"`
	}
	if v, ok := top["contents"]; ok && json.Unmarshal(v, &contents) != nil {
		return nil, &gError{http.StatusBadRequest, "Invalid JSON payload received. Unknown name \"contents\": Proto field is not repeating, cannot start list."}
	}
	for i, c := range contents {
		req.contents = append(req.contents, gContent{path: fmt.Sprintf("contents[%d]", i), role: c.Role, parts: c.Parts})
	}
	return req, nil
}

func validateGemini(req *gRequest) *gError {
	bad := func(msg string) *gError { return &gError{http.StatusBadRequest, msg} }
	if len(req.contents) == 0 {
		return bad("* GenerateContentRequest.contents: contents is not specified\n")
	}
	current := 0 // the current turn starts after the last user text
	for i := range req.contents {
		c := &req.contents[i]
		if c.role == "" {
			c.role = "user"
		}
		if c.role != "user" && c.role != "model" {
			return bad("Please use a valid role: user, model.")
		}
		if len(c.parts) == 0 {
			return bad(fmt.Sprintf("* GenerateContentRequest.%s.parts: contents.parts must not be empty.\n", c.path))
		}
		for j, p := range c.parts {
			n := 0
			for k := range p {
				switch {
				case containsStr(geminiPartData, k):
					n++
				case !geminiPartFields[k]:
					return bad(fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s.parts[%d]': Cannot find field.", k, c.path, j))
				}
			}
			if n != 1 {
				return bad(fmt.Sprintf("* GenerateContentRequest.%s.parts[%d].data: required oneof field 'data' must have one initialized field\n", c.path, j))
			}
			if sig, ok := p["thoughtSignature"]; ok {
				var s string
				json.Unmarshal(sig, &s)
				if s != ThoughtSignature(p.signed()) {
					return bad("Unable to submit request because Thought signature is not valid.. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini")
				}
			}
		}
		if c.role == "user" && c.count("functionResponse") == 0 {
			current = i + 1
		}
		calls := c.count("functionCall")
		results := c.count("functionResponse")
		if results > 0 && (i == 0 || req.contents[i-1].role != "model" || req.contents[i-1].count("functionCall") == 0) {
			return bad("Please ensure that function response turn comes immediately after a function call turn.")
		}
		if results > 0 && results != req.contents[i-1].count("functionCall") {
			return bad("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		}
		if calls > 0 && c.role != "model" {
			return bad("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
		}
		if calls > 0 && i+1 < len(req.contents) && req.contents[i+1].count("functionResponse") == 0 {
			return bad("Please ensure that function response turn comes immediately after a function call turn.")
		}
	}
	for i := current; i < len(req.contents); i++ {
		c := &req.contents[i]
		if c.role != "model" {
			continue
		}
		for j, p := range c.parts {
			if _, ok := p["functionCall"]; !ok {
				continue
			}
			if _, ok := p["thoughtSignature"]; !ok {
				var fc struct {
					Name string `json:"name"`
				}
				json.Unmarshal(p["functionCall"], &fc)
				return bad(fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", fc.Name, j+1))
			}
			break // only the first call of a turn is signed
		}
	}
	return nil
}

// positions lays the request out for the implicit cache: system
// instruction, tools, then each content.
func (req *gRequest) positions() []position {
	var ps []position
	if req.system != "" {
		ps = append(ps, position{key: []byte("system\x00" + req.system), tokens: messageTokens + Tokens(req.system)})
	}
	if t, ok := req.raw["tools"]; ok {
		raw := canonical(t)
		ps = append(ps, position{key: append([]byte("tools\x00"), raw...), tokens: toolTokens + Tokens(string(raw))})
	}
	for i := range req.contents {
		c := &req.contents[i]
		raw, _ := json.Marshal(c.parts)
		n := messageTokens
		for _, p := range c.parts {
			switch {
			case p["text"] != nil:
				n += blockTokens + Tokens(p.text())
			case p["inlineData"] != nil:
				n += imageTokens
			default:
				n += blockTokens + Tokens(string(canonical(mustJSON(p))))
			}
		}
		ps = append(ps, position{key: append([]byte(c.role+"\x00"), canonical(raw)...), tokens: n})
	}
	return ps
}

// convMessages decodes the contents into ctxkit's model.
func (req *gRequest) convMessages() []conv.Message {
	var out []conv.Message
	for i := range req.contents {
		c := &req.contents[i]
		m := conv.Message{Role: conv.RoleUser}
		if c.role == "model" {
			m.Role = conv.RoleAssistant
		}
		for _, p := range c.parts {
			var f struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Args     json.RawMessage `json:"args"`
				Response json.RawMessage `json:"response"`
			}
			switch {
			case p["functionCall"] != nil:
				json.Unmarshal(p["functionCall"], &f)
				m.Blocks = append(m.Blocks, conv.Block{Type: conv.TypeToolUse, ToolUseID: f.ID, Name: f.Name, Input: f.Args})
			case p["functionResponse"] != nil:
				json.Unmarshal(p["functionResponse"], &f)
				var r struct {
					Output string `json:"output"`
				}
				json.Unmarshal(f.Response, &r)
				text := r.Output
				if text == "" {
					text = string(f.Response)
				}
				m.Blocks = append(m.Blocks, conv.Block{Type: conv.TypeToolResult, ToolUseID: f.ID, Name: f.Name, Text: text})
			case p["text"] != nil:
				if string(p["thought"]) == "true" {
					m.Blocks = append(m.Blocks, conv.Block{Type: conv.TypeThinking, Text: p.text()})
				} else {
					m.Blocks = append(m.Blocks, conv.Block{Type: conv.TypeText, Text: p.text()})
				}
			}
		}
		out = append(out, m)
	}
	return out
}

func geminiError(code int, msg string) obj {
	status := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[code]
	return obj{{"error", obj{{"code", code}, {"message", msg}, {"status", status}}}}
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, c *Call) {
	h := http.Header{}
	fail := func(code int, msg string) {
		s.finish(c, code, msg)
		writeJSON(w, code, h, geminiError(code, msg))
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if s.cfg.APIKey != "" && key != s.cfg.APIKey {
		fail(http.StatusBadRequest, "API key not valid. Please pass a valid API key.")
		return
	}
	req, e := parseGemini(r, c.Body)
	if e == nil {
		s.mu.Lock()
		c.Model, c.Stream, c.System, c.Tools, c.Messages = req.model, req.stream, req.system, req.tools, req.convMessages()
		s.mu.Unlock()
		e = validateGemini(req)
	}
	if e != nil {
		if e.code == http.StatusBadRequest {
			s.reject(c, e.msg)
		} else {
			s.finish(c, e.code, e.msg)
		}
		writeJSON(w, e.code, h, geminiError(e.code, e.msg))
		return
	}
	ps := req.positions()
	prompt, over, _ := s.overWindow(c, ps, 0) // Gemini does not refuse maxOutputTokens for the window
	if req.method == "countTokens" {
		s.finish(c, http.StatusOK, "")
		writeJSON(w, http.StatusOK, h, obj{{"totalTokens", prompt}})
		return
	}
	if over {
		fail(http.StatusBadRequest, fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", prompt, s.cfg.Window))
		return
	}
	reply := s.next(c)
	f := reply.Fault
	if f != nil {
		switch f.Kind {
		case RateLimited:
			fail(http.StatusTooManyRequests, "Resource has been exhausted (e.g. check quota).")
			return
		case Overloaded:
			fail(http.StatusServiceUnavailable, "The model is overloaded. Please try again later.")
			return
		case ServerError:
			fail(http.StatusInternalServerError, "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting")
			return
		case Unauthorized, Forbidden:
			fail(http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
			return
		case Slow:
			if !wait(r, f.Delay) {
				return
			}
		}
	}
	s.mu.Lock()
	if s.gem == nil {
		s.gem = newPrefixCache()
	}
	cached := s.gem.automaticUsage(s.cfg.Now(), req.model, ps, s.cfg.MinCached, 1)
	s.mu.Unlock()

	var parts []obj
	thoughts, output := 0, 0
	if reply.Thinking != "" {
		parts = append(parts, obj{{"text", reply.Thinking}, {"thought", true}})
		thoughts = Tokens(reply.Thinking)
	}
	if reply.Text != "" {
		p := obj{{"text", reply.Text}}
		if len(reply.Calls) == 0 {
			p = append(p, kv{"thoughtSignature", ThoughtSignature([]byte(reply.Text))})
		}
		parts = append(parts, p)
		output += Tokens(reply.Text)
	}
	for i, call := range reply.Calls {
		args := call.Input
		if args == "" {
			args = "{}"
		}
		fc := obj{{"name", call.Name}, {"args", json.RawMessage(args)}}
		if call.ID != "" {
			fc = append(obj{{"id", call.ID}}, fc...)
		}
		p := obj{{"functionCall", fc}}
		if i == 0 {
			p = append(p, kv{"thoughtSignature", CallSignature(call.Name, []byte(args))})
		}
		parts = append(parts, p)
		output += blockTokens + Tokens(call.Name+" "+args)
	}
	output = max(output, 1)
	if ru := reply.Usage; ru != nil {
		prompt, cached, output, thoughts = ru.Prompt(), ru.CacheRead, ru.Output, 0
	}
	usage := obj{{"promptTokenCount", prompt}, {"candidatesTokenCount", output}, {"totalTokenCount", prompt + output + thoughts}}
	if cached > 0 {
		usage = append(usage, kv{"cachedContentTokenCount", cached})
	}
	if thoughts > 0 {
		usage = append(usage, kv{"thoughtsTokenCount", thoughts})
	}
	s.mu.Lock()
	c.Status, c.Prompt = http.StatusOK, prompt
	c.Usage = llm.Usage{Input: prompt - cached, Output: output + thoughts, CacheRead: cached}
	s.mu.Unlock()
	finish := "STOP"
	if reply.StopReason == "max_tokens" {
		finish = "MAX_TOKENS"
	}
	respID := fmt.Sprintf("llmtest%06d", c.N)
	chunk := func(ps []obj, last bool) obj {
		cand := obj{{"content", obj{{"parts", ps}, {"role", "model"}}}}
		if last {
			cand = append(cand, kv{"finishReason", finish})
		}
		cand = append(cand, kv{"index", 0})
		o := obj{{"candidates", []obj{cand}}}
		if last {
			o = append(o, kv{"usageMetadata", usage})
		}
		return append(o, kv{"modelVersion", req.model}, kv{"responseId", respID})
	}
	if !req.stream {
		writeJSON(w, http.StatusOK, h, chunk(parts, true))
		return
	}
	var evs []sseEvent
	for i, p := range parts {
		evs = append(evs, sseEvent{data: chunk([]obj{p}, i == len(parts)-1)})
	}
	if len(evs) == 0 {
		evs = append(evs, sseEvent{data: chunk([]obj{{{"text", ""}}}, true)})
	}
	if r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse the API streams one JSON array of the chunks.
		var all []any
		for _, ev := range evs {
			all = append(all, ev.data)
		}
		writeJSON(w, http.StatusOK, h, all)
		return
	}
	streamEvents(w, r, h, evs, f, sseEvent{data: geminiError(http.StatusServiceUnavailable, "The model is overloaded. Please try again later.")})
}
