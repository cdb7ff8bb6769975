package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// The Anthropic side: request parsing, the real API's validation rules,
// token counting with explicit prompt caching, and JSON or SSE answers.

type aBlock struct {
	path string
	typ  string
	raw  json.RawMessage
	f    map[string]json.RawMessage
}

func (b *aBlock) str(key string) (string, bool) {
	v, ok := b.f[key]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

type aMessage struct {
	path   string
	role   string
	blocks []aBlock
	// perTurn: the message carries output_config (per-turn control,
	// accepted only under its beta).
	perTurn bool
}

type aRequest struct {
	model     string
	maxTokens int
	stream    bool
	system    []aBlock
	tools     []aBlock
	messages  []aMessage
	autoCache json.RawMessage
}

var anthropicTopLevel = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "system": true, "tools": true,
	"tool_choice": true, "stream": true, "temperature": true, "top_p": true, "top_k": true,
	"stop_sequences": true, "metadata": true, "thinking": true, "cache_control": true,
	"service_tier": true, "container": true, "mcp_servers": true, "output_config": true,
	"context_management": true, "diagnostics": true, "inference_geo": true, "speed": true,
}

// blockFields lists the fields each known block type may carry; a block
// type not listed is unknown to the API.
var blockFields = map[string][]string{
	"text":              {"type", "text", "cache_control", "citations"},
	"image":             {"type", "source", "cache_control", "transformations"},
	"document":          {"type", "source", "cache_control", "citations", "context", "title"},
	"search_result":     {"type", "source", "title", "content", "cache_control", "citations"},
	"tool_use":          {"type", "id", "name", "input", "cache_control", "caller", "toolset_name"},
	"tool_result":       {"type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"},
	"thinking":          {"type", "thinking", "signature"},
	"redacted_thinking": {"type", "data"},
	"tool_reference":    {"type", "tool_name", "cache_control"}, // in a tool search's tool_result
}

var toolFields = []string{"type", "name", "description", "input_schema", "cache_control", "strict",
	"defer_loading", "eager_input_streaming", "input_examples", "allowed_callers"}

const expectedTags = "'text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'"

func parseBlock(path string, raw json.RawMessage) (aBlock, string) {
	b := aBlock{path: path, raw: raw}
	if err := json.Unmarshal(raw, &b.f); err != nil || b.f == nil {
		return b, path + ": Input should be a valid dictionary"
	}
	t, ok := b.str("type")
	if !ok {
		return b, path + ".type: Field required"
	}
	b.typ = t
	return b, ""
}

// parseContent reads a content field: a string (shorthand for one text
// block) or a list of blocks.
func parseContent(path string, raw json.RawMessage) ([]aBlock, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		tb, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		b, _ := parseBlock(path+".0", tb)
		return []aBlock{b}, ""
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, path + ": Input should be a valid list"
	}
	out := make([]aBlock, 0, len(list))
	for i, r := range list {
		b, msg := parseBlock(fmt.Sprintf("%s.%d", path, i), r)
		if msg != "" {
			return nil, msg
		}
		out = append(out, b)
	}
	return out, ""
}

func parseAnthropic(body []byte, cfg Config) (*aRequest, string) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, "There was an issue with your request body: " + err.Error()
	}
	for _, k := range sortedKeys(top) {
		if !anthropicTopLevel[k] {
			return nil, k + ": Extra inputs are not permitted"
		}
	}
	req := &aRequest{}
	if v, ok := top["model"]; !ok || json.Unmarshal(v, &req.model) != nil || req.model == "" {
		return nil, "model: Field required"
	}
	v, ok := top["max_tokens"]
	if !ok {
		return nil, "max_tokens: Field required"
	}
	if json.Unmarshal(v, &req.maxTokens) != nil || req.maxTokens < 0 {
		return nil, "max_tokens: Input should be a valid integer, greater than or equal to 0"
	}
	if req.maxTokens > cfg.MaxOutput {
		return nil, fmt.Sprintf("max_tokens: %d > %d, which is the maximum allowed number of output tokens for %s", req.maxTokens, cfg.MaxOutput, req.model)
	}
	if v, ok := top["stream"]; ok && json.Unmarshal(v, &req.stream) != nil {
		return nil, "stream: Input should be a valid boolean"
	}
	req.autoCache = top["cache_control"]
	if v, ok := top["system"]; ok {
		bs, msg := parseContent("system", v)
		if msg != "" {
			return nil, msg
		}
		req.system = bs
	}
	if v, ok := top["tools"]; ok {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return nil, "tools: Input should be a valid list"
		}
		for i, r := range list {
			b := aBlock{path: fmt.Sprintf("tools.%d", i), raw: r, typ: "tool"}
			if json.Unmarshal(r, &b.f) != nil || b.f == nil {
				return nil, b.path + ": Input should be a valid dictionary"
			}
			req.tools = append(req.tools, b)
		}
	}
	v, ok = top["messages"]
	if !ok {
		return nil, "messages: Field required"
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(v, &msgs) != nil {
		return nil, "messages: Input should be a valid list"
	}
	for i, m := range msgs {
		am := aMessage{path: fmt.Sprintf("messages.%d", i)}
		for _, k := range sortedKeys(m) {
			switch k {
			case "role", "content":
			case "output_config":
				am.perTurn = true
			default:
				return nil, am.path + "." + k + ": Extra inputs are not permitted"
			}
		}
		if json.Unmarshal(m["role"], &am.role) != nil {
			return nil, am.path + ".role: Field required"
		}
		c, ok := m["content"]
		if !ok {
			return nil, am.path + ".content: Field required"
		}
		bs, msg := parseContent(am.path+".content", c)
		if msg != "" {
			return nil, msg
		}
		am.blocks = bs
		req.messages = append(req.messages, am)
	}
	return req, ""
}

// Signature is the signature the server gives a thinking block, and the
// only one it accepts back for that text: a thinking block changed in any
// way is refused, as the real API refuses it. Tests that build thinking
// blocks by hand sign them with it.
func Signature(thinking string) string {
	h := sha256.Sum256([]byte("llmtest thinking\x00" + thinking))
	return "sig_" + base64.RawURLEncoding.EncodeToString(h[:])
}

type cacheCounter struct {
	n       int
	sawLong bool // a 5m breakpoint has been seen, so 1h ones may not follow
}

// checkCacheControl validates one cache_control object at path.
func (cc *cacheCounter) check(path string, raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var v struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	var extra map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil || json.Unmarshal(raw, &extra) != nil {
		return path + ".cache_control: Input should be a valid dictionary"
	}
	for k := range extra {
		if k != "type" && k != "ttl" {
			return path + ".cache_control." + k + ": Extra inputs are not permitted"
		}
	}
	if v.Type != "ephemeral" {
		return path + ".cache_control.type: Input should be 'ephemeral'"
	}
	switch v.TTL {
	case "", "5m":
		cc.sawLong = true
	case "1h":
		if cc.sawLong {
			return "A cache_control block with ttl='1h' must not come after a block with ttl='5m'. Note that blocks are processed in the following order: `tools`, `system`, `messages`."
		}
	default:
		return path + ".cache_control.ttl: Input should be '5m' or '1h'"
	}
	cc.n++
	return ""
}

func allowedFields(b *aBlock, fields []string) string {
	for _, k := range sortedKeys(b.f) {
		ok := false
		for _, f := range fields {
			if k == f {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Sprintf("%s.%s.%s: Extra inputs are not permitted", b.path, b.typ, k)
		}
	}
	return ""
}

// toolNamePattern reports whether s matches ^[a-zA-Z0-9_-]{1,128}$.
func toolNamePattern(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// validateAnthropic applies the Messages API's rules to a parsed request
// and returns the first broken one, worded as the API words it.
func validateAnthropic(req *aRequest) string {
	var cc cacheCounter
	names := map[string]bool{}
	for i := range req.tools {
		t := &req.tools[i]
		if typ, ok := t.str("type"); ok && typ != "custom" {
			continue // a server tool (web_search_…): not ours to check
		}
		t.typ = "custom"
		if msg := allowedFields(t, toolFields); msg != "" {
			return msg
		}
		name, ok := t.str("name")
		if !ok {
			return t.path + ".custom.name: Field required"
		}
		if !toolNamePattern(name) {
			return t.path + ".custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
		}
		if names[name] {
			return "tools: Tool names must be unique."
		}
		names[name] = true
		var schema map[string]json.RawMessage
		if json.Unmarshal(t.f["input_schema"], &schema) != nil || schema == nil {
			return t.path + ".custom.input_schema: Field required"
		}
		var typ string
		if json.Unmarshal(schema["type"], &typ) != nil || typ != "object" {
			return t.path + ".custom.input_schema.type: Input should be 'object'"
		}
		if msg := cc.check(t.path+".custom", t.f["cache_control"]); msg != "" {
			return msg
		}
	}
	for i := range req.system {
		b := &req.system[i]
		if b.typ != "text" {
			return b.path + ".type: Input should be 'text'"
		}
		if msg := allowedFields(b, blockFields["text"]); msg != "" {
			return msg
		}
		text, ok := b.str("text")
		if !ok {
			return b.path + ".text: Field required"
		}
		if text == "" {
			return "system: text content blocks must be non-empty"
		}
		if isBlank(text) {
			return "system: text content blocks must contain non-whitespace text"
		}
		if msg := cc.check(b.path, b.f["cache_control"]); msg != "" {
			return msg
		}
	}
	if len(req.messages) == 0 {
		return "messages: at least one message is required"
	}
	usesTools := false
	toolUseIDs := map[string]bool{}
	prevRole := ""
	for i := range req.messages {
		m := &req.messages[i]
		if m.role == "system" && i > 0 {
			// A mid-conversation system message: instructions or tool
			// changes between turns, outside the alternation.
			if msg := checkSystemMessage(req, i); msg != "" {
				return msg
			}
			continue
		}
		if m.role != "user" && m.role != "assistant" {
			return m.path + ".role: Input should be 'user', 'assistant' or 'system'"
		}
		if i == 0 && m.role != "user" {
			return `messages: first message must use the "user" role`
		}
		if m.role == prevRole {
			return fmt.Sprintf(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, m.role)
		}
		prevRole = m.role
		if len(m.blocks) == 0 && !(m.role == "assistant" && i == len(req.messages)-1) {
			return m.path + ": all messages must have non-empty content except for the optional final assistant message"
		}
		for j := range m.blocks {
			b := &m.blocks[j]
			fields, known := blockFields[b.typ]
			if !known {
				return fmt.Sprintf("%s: Input tag '%s' found using 'type' does not match any of the expected tags: %s", b.path, b.typ, expectedTags)
			}
			if msg := allowedFields(b, fields); msg != "" {
				return msg
			}
			if msg := checkBlock(b, m.role, i, toolUseIDs); msg != "" {
				return msg
			}
			if b.typ == "tool_use" || b.typ == "tool_result" {
				usesTools = true
			}
			if msg := cc.check(b.path+"."+b.typ, b.f["cache_control"]); msg != "" {
				return msg
			}
			if b.typ == "tool_result" {
				if nested, ok := b.f["content"]; ok {
					inner, _ := parseContent(b.path+".tool_result.content", nested)
					for k := range inner {
						if msg := cc.check(inner[k].path+"."+inner[k].typ, inner[k].f["cache_control"]); msg != "" {
							return msg
						}
					}
				}
			}
		}
		if msg := checkPairing(req, i); msg != "" {
			return msg
		}
	}
	if usesTools && len(req.tools) == 0 {
		return "Requests which include `tool_use` or `tool_result` blocks must define tools."
	}
	if req.autoCache != nil {
		if msg := cc.check("", req.autoCache); msg != "" {
			return strings.TrimPrefix(msg, ".")
		}
	}
	if cc.n > 4 {
		return fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", cc.n)
	}
	last := &req.messages[len(req.messages)-1]
	if last.role == "assistant" && len(last.blocks) > 0 {
		lb := &last.blocks[len(last.blocks)-1]
		if t, ok := lb.str("text"); ok && lb.typ == "text" && strings.TrimRight(t, " \t\n\r") != t {
			return "messages: final assistant content cannot end with trailing whitespace"
		}
	}
	return ""
}

// checkSystemMessage checks a system message inside messages (the
// mid-conversation system messages of the Messages API): text blocks and
// tool_addition / tool_removal blocks that name a tool declared in tools,
// never between a tool_use and its tool_result, a removal only right
// before an assistant message or last.
func checkSystemMessage(req *aRequest, i int) string {
	m := &req.messages[i]
	if len(m.blocks) == 0 {
		return m.path + ": system messages must have non-empty content"
	}
	if prev := &req.messages[i-1]; prev.role == "assistant" {
		for j := range prev.blocks {
			if prev.blocks[j].typ == "tool_use" {
				return m.path + ": a system message cannot come between `tool_use` blocks and their `tool_result` blocks"
			}
		}
	}
	declared := map[string]bool{}
	for k := range req.tools {
		n, _ := req.tools[k].str("name")
		declared[n] = true
	}
	for j := range m.blocks {
		b := &m.blocks[j]
		switch b.typ {
		case "text":
			if t, _ := b.str("text"); isBlank(t) {
				return b.path + ": text content blocks must contain non-whitespace text"
			}
		case "tool_addition", "tool_removal":
			var ref struct {
				Type     string `json:"type"`
				ToolName string `json:"tool_name"`
			}
			json.Unmarshal(b.f["tool"], &ref)
			if ref.Type == "tool_reference" && !declared[ref.ToolName] {
				return fmt.Sprintf("%s.tool: tool '%s' is not defined in tools", b.path, ref.ToolName)
			}
			if b.typ == "tool_removal" && i+1 < len(req.messages) && req.messages[i+1].role != "assistant" {
				return b.path + ": a tool_removal must come immediately before an assistant message or last"
			}
		default:
			return fmt.Sprintf("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'tool_addition', 'tool_removal'", b.path, b.typ)
		}
	}
	return ""
}

// checkBlock applies the per-type rules to block b of message i.
func checkBlock(b *aBlock, role string, i int, toolUseIDs map[string]bool) string {
	switch b.typ {
	case "text":
		text, ok := b.str("text")
		if !ok {
			return b.path + ".text.text: Field required"
		}
		if text == "" {
			return "messages: text content blocks must be non-empty"
		}
		if isBlank(text) {
			return "messages: text content blocks must contain non-whitespace text"
		}
	case "image":
		return checkImage(b)
	case "tool_use":
		if role != "assistant" {
			return b.path + ": tool_use blocks may only appear in assistant messages"
		}
		id, ok := b.str("id")
		if !ok {
			return b.path + ".tool_use.id: Field required"
		}
		if !toolNamePattern(id) {
			return b.path + ".tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
		}
		if toolUseIDs[id] {
			return b.path + ": `tool_use` ids must be unique"
		}
		toolUseIDs[id] = true
		name, ok := b.str("name")
		if !ok || !toolNamePattern(name) {
			return b.path + ".tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(b.f["input"], &in) != nil || in == nil {
			return b.path + ".tool_use.input: Input should be a valid dictionary"
		}
	case "tool_result":
		if role != "user" {
			return b.path + ": tool_result blocks may only appear in user messages"
		}
		if _, ok := b.str("tool_use_id"); !ok {
			return b.path + ".tool_result.tool_use_id: Field required"
		}
		if v, ok := b.f["is_error"]; ok {
			var e bool
			if json.Unmarshal(v, &e) != nil {
				return b.path + ".tool_result.is_error: Input should be a valid boolean"
			}
		}
		if c, ok := b.f["content"]; ok {
			inner, msg := parseContent(b.path+".tool_result.content", c)
			if msg != "" {
				return msg
			}
			var s string
			isString := json.Unmarshal(c, &s) == nil
			for k := range inner {
				ib := &inner[k]
				switch ib.typ {
				case "text":
					if isString {
						continue // an empty string result is allowed
					}
					if msg := allowedFields(ib, blockFields["text"]); msg != "" {
						return msg
					}
					t, ok := ib.str("text")
					if !ok {
						return ib.path + ".text.text: Field required"
					}
					if t == "" {
						return "messages: text content blocks must be non-empty"
					}
					if isBlank(t) {
						return "messages: text content blocks must contain non-whitespace text"
					}
				case "image":
					if msg := checkImage(ib); msg != "" {
						return msg
					}
				case "document", "search_result", "tool_reference": // tool_reference: tool search's answer
				default:
					return fmt.Sprintf("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'", ib.path, ib.typ)
				}
			}
		}
	case "thinking":
		if role != "assistant" {
			return b.path + ": thinking blocks may only appear in assistant messages"
		}
		t, ok := b.str("thinking")
		if !ok {
			return b.path + ".thinking.thinking: Field required"
		}
		sig, ok := b.str("signature")
		if !ok {
			return b.path + ".thinking.signature: Field required"
		}
		if sig != Signature(t) {
			return b.path + ": Invalid `signature` in `thinking` block"
		}
	case "redacted_thinking":
		if role != "assistant" {
			return b.path + ": redacted_thinking blocks may only appear in assistant messages"
		}
		if d, ok := b.str("data"); !ok || d == "" {
			return b.path + ".redacted_thinking.data: Field required"
		}
	}
	return ""
}

func checkImage(b *aBlock) string {
	var src struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if json.Unmarshal(b.f["source"], &src) != nil {
		return b.path + ".image.source: Field required"
	}
	switch src.Type {
	case "base64":
		switch src.MediaType {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return b.path + ".image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
		}
		if src.Data == "" {
			return b.path + ".image.source.base64.data: Field required"
		}
		if _, err := base64.StdEncoding.DecodeString(src.Data); err != nil {
			return b.path + ".image.source.base64.data: Invalid base64 data"
		}
	case "url":
		if src.URL == "" {
			return b.path + ".image.source.url.url: Field required"
		}
	case "file":
	default:
		return b.path + ".image.source: Input tag '" + src.Type + "' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'"
	}
	return ""
}

// checkPairing applies the tool-pairing rules between message i and its
// neighbours, as the API states them.
func checkPairing(req *aRequest, i int) string {
	m := &req.messages[i]
	if m.role == "assistant" {
		var ids []string
		for j := range m.blocks {
			if m.blocks[j].typ == "tool_use" {
				id, _ := m.blocks[j].str("id")
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return ""
		}
		answered := map[string]bool{}
		leading := 0
		if i+1 < len(req.messages) {
			next := &req.messages[i+1]
			for j := range next.blocks {
				if next.blocks[j].typ != "tool_result" {
					break
				}
				leading++
			}
			for j := range next.blocks {
				if next.blocks[j].typ == "tool_result" {
					id, _ := next.blocks[j].str("tool_use_id")
					answered[id] = true
				}
			}
			var missing []string
			for _, id := range ids {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) == 0 && leading < len(ids) {
				return fmt.Sprintf("%s: Did not find %d `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", next.path, len(ids))
			}
			if len(missing) == 0 {
				return ""
			}
			return fmt.Sprintf("%s: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", m.path, strings.Join(missing, ", "))
		}
		return fmt.Sprintf("%s: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", m.path, strings.Join(ids, ", "))
	}
	calls := map[string]bool{}
	if i > 0 {
		prev := &req.messages[i-1]
		for j := range prev.blocks {
			if prev.blocks[j].typ == "tool_use" {
				id, _ := prev.blocks[j].str("id")
				calls[id] = true
			}
		}
	}
	seen := map[string]bool{}
	for j := range m.blocks {
		b := &m.blocks[j]
		if b.typ != "tool_result" {
			continue
		}
		id, _ := b.str("tool_use_id")
		if !calls[id] {
			return fmt.Sprintf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", b.path, id)
		}
		if seen[id] {
			return fmt.Sprintf("%s: each tool_use must have a single result. Found multiple `tool_result` blocks with id: %s", b.path, id)
		}
		seen[id] = true
	}
	return ""
}

// positions lays the request out for the cache: tools, system, messages.
func (req *aRequest) positions() []position {
	var ps []position
	add := func(section string, first bool, b *aBlock, tokens int) {
		key := []byte(section + "\x00")
		if first {
			key = append([]byte("\x01"), key...)
		}
		key = append(key, canonical(b.raw)...)
		p := position{key: key, tokens: tokens, ttl: 5 * time.Minute}
		if cc := b.f["cache_control"]; cc != nil {
			p.breakpoint = true
			var v struct {
				TTL string `json:"ttl"`
			}
			if json.Unmarshal(cc, &v) == nil && v.TTL == "1h" {
				p.ttl = time.Hour
			}
		}
		ps = append(ps, p)
	}
	for i := range req.tools {
		t := &req.tools[i]
		name, _ := t.str("name")
		desc, _ := t.str("description")
		add("tool", false, t, toolTokens+Tokens(name+" "+desc+" "+string(canonical(t.f["input_schema"]))))
	}
	for i := range req.system {
		b := &req.system[i]
		text, _ := b.str("text")
		add("system", false, b, blockTokens+Tokens(text))
	}
	for i := range req.messages {
		m := &req.messages[i]
		for j := range m.blocks {
			n := blockTokens + aBlockTokens(&m.blocks[j])
			if j == 0 {
				n += messageTokens
			}
			add(m.role, j == 0, &m.blocks[j], n)
		}
	}
	if req.autoCache != nil {
		// Automatic caching: the breakpoint goes on the last block that can
		// carry one.
		for i := len(ps) - 1; i >= 0; i-- {
			if !strings.Contains(string(ps[i].key), `"type":"thinking"`) && !strings.Contains(string(ps[i].key), `"type":"redacted_thinking"`) {
				ps[i].breakpoint = true
				break
			}
		}
	}
	return ps
}

func aBlockTokens(b *aBlock) int {
	switch b.typ {
	case "text":
		t, _ := b.str("text")
		return Tokens(t)
	case "tool_use":
		name, _ := b.str("name")
		return Tokens(name + " " + string(canonical(b.f["input"])))
	case "tool_result":
		c, ok := b.f["content"]
		if !ok {
			return 0
		}
		inner, _ := parseContent("", c)
		n := 0
		for k := range inner {
			n += blockTokens + aBlockTokens(&inner[k])
		}
		return n
	case "thinking":
		t, _ := b.str("thinking")
		return Tokens(t)
	case "redacted_thinking":
		d, _ := b.str("data")
		return Tokens(d)
	case "image":
		return imageTokens
	}
	return Tokens(string(b.raw))
}

// convMessages decodes the request's messages into ctxkit's model.
func (req *aRequest) convMessages() []conv.Message {
	out := make([]conv.Message, 0, len(req.messages))
	for i := range req.messages {
		m := &req.messages[i]
		cm := conv.Message{Role: conv.Role(m.role)}
		for j := range m.blocks {
			cm.Blocks = append(cm.Blocks, aConvBlock(&m.blocks[j]))
		}
		out = append(out, cm)
	}
	return out
}

func aConvBlock(b *aBlock) conv.Block {
	cb := conv.Block{Type: conv.Type(b.typ), CacheControl: b.f["cache_control"]}
	switch b.typ {
	case "text":
		cb.Text, _ = b.str("text")
	case "tool_use":
		cb.ToolUseID, _ = b.str("id")
		cb.Name, _ = b.str("name")
		cb.Input = b.f["input"]
	case "tool_result":
		cb.ToolUseID, _ = b.str("tool_use_id")
		json.Unmarshal(b.f["is_error"], &cb.IsError)
		if c, ok := b.f["content"]; ok {
			var s string
			if json.Unmarshal(c, &s) == nil {
				cb.Text = s
			} else {
				inner, _ := parseContent("", c)
				for k := range inner {
					cb.Content = append(cb.Content, aConvBlock(&inner[k]))
				}
			}
		}
	case "thinking":
		cb.Text, _ = b.str("thinking")
		cb.Signature, _ = b.str("signature")
	case "redacted_thinking":
		cb.Data, _ = b.str("data")
	case "image":
		cb.ImageSource = b.f["source"]
	}
	return cb
}

func (req *aRequest) systemText() string {
	var parts []string
	for i := range req.system {
		t, _ := req.system[i].str("text")
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n")
}

func (req *aRequest) toolNames() []string {
	var names []string
	for i := range req.tools {
		n, _ := req.tools[i].str("name")
		names = append(names, n)
	}
	return names
}

// Wire shapes of the answers.

type aUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
}

type aMessageOut struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        aUsage            `json:"usage"`
}

type sseEvent struct {
	name string
	data any
}

func anthropicError(typ, msg, reqID string) obj {
	return obj{{"type", "error"}, {"error", obj{{"type", typ}, {"message", msg}}}, {"request_id", reqID}}
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request, c *Call) {
	reqID := fmt.Sprintf("req_llmtest%06d", c.N)
	h := http.Header{"Request-Id": {reqID}}
	fail := func(status int, typ, msg string) {
		s.finish(c, status, msg)
		writeJSON(w, status, h, anthropicError(typ, msg, reqID))
	}
	if s.cfg.APIKey != "" && r.Header.Get("X-Api-Key") != s.cfg.APIKey {
		fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		msg := "anthropic-version: header is required"
		s.reject(c, msg)
		writeJSON(w, http.StatusBadRequest, h, anthropicError("invalid_request_error", msg, reqID))
		return
	}
	req, msg := parseAnthropic(c.Body, s.cfg)
	if msg == "" {
		s.mu.Lock()
		c.Model, c.Stream, c.System, c.Tools, c.Messages = req.model, req.stream, req.systemText(), req.toolNames(), req.convMessages()
		c.MaxTokens = req.maxTokens
		s.mu.Unlock()
		msg = validateAnthropic(req)
		for i := range req.messages {
			if msg == "" && req.messages[i].perTurn && !strings.Contains(r.Header.Get("Anthropic-Beta"), "per-turn-control-") {
				msg = req.messages[i].path + ".output_config: Extra inputs are not permitted"
			}
		}
	}
	if msg != "" {
		s.reject(c, msg)
		writeJSON(w, http.StatusBadRequest, h, anthropicError("invalid_request_error", msg, reqID))
		return
	}
	ps := req.positions()
	prompt, over, answerOver := s.overWindow(c, ps, req.maxTokens)
	if over {
		fail(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, s.cfg.Window))
		return
	}
	if answerOver {
		// The window holds the prompt and the answer: the API refuses a
		// request whose max_tokens could not fit after its prompt.
		fail(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("input length and `max_tokens` exceed context limit: %d + %d > %d, decrease input length or `max_tokens` and try again", prompt, req.maxTokens, s.cfg.Window))
		return
	}
	reply := s.next(c)
	f := reply.Fault
	if f != nil {
		switch f.Kind {
		case RateLimited, Overloaded:
			if f.RetryAfter > 0 {
				h.Set("Retry-After", retryAfter(f.RetryAfter))
			}
			if f.Kind == RateLimited {
				fail(http.StatusTooManyRequests, "rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.")
			} else {
				fail(529, "overloaded_error", "Overloaded")
			}
			return
		case ServerError:
			fail(http.StatusInternalServerError, "api_error", "Internal server error")
			return
		case Unauthorized:
			fail(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
			return
		case Forbidden:
			fail(http.StatusForbidden, "permission_error", "Your API key does not have permission to use the specified resource.")
			return
		case Slow:
			if !wait(r, f.Delay) {
				return
			}
		}
	}

	s.mu.Lock()
	read, w5, w1, input := s.anth.explicitUsage(s.cfg.Now(), req.model, ps, s.cfg.MinCacheable)
	s.mu.Unlock()
	blocks, stop, output := anthropicContent(reply, c.N)
	if ru := reply.Usage; ru != nil {
		read, w5, w1, input, output = ru.CacheRead, ru.CacheWrite, 0, ru.Input, ru.Output
	}
	u := aUsage{InputTokens: input, CacheCreationInputTokens: w5 + w1, CacheReadInputTokens: read, OutputTokens: output, ServiceTier: "standard"}
	u.CacheCreation.Ephemeral5m, u.CacheCreation.Ephemeral1h = w5, w1
	status := http.StatusOK
	errMsg := ""
	if f != nil && f.Kind == StreamError {
		errMsg = "Overloaded"
	}
	s.mu.Lock()
	c.Status, c.Error, c.Prompt = status, errMsg, prompt
	c.Usage = llm.Usage{Input: input, Output: output, CacheWrite: w5 + w1, CacheRead: read}
	s.mu.Unlock()

	id := fmt.Sprintf("msg_llmtest%06d", c.N)
	if !req.stream {
		if f != nil {
			switch f.Kind {
			case CutStream, Truncate:
				panic(http.ErrAbortHandler)
			case StreamError:
				writeJSON(w, 529, h, anthropicError("overloaded_error", "Overloaded", reqID))
				return
			case Stall:
				if !wait(r, f.Delay) {
					return
				}
			}
		}
		var content []json.RawMessage
		for _, b := range blocks {
			content = append(content, b.full)
		}
		writeJSON(w, http.StatusOK, h, aMessageOut{ID: id, Type: "message", Role: "assistant", Model: req.model,
			Content: content, StopReason: &stop, Usage: u})
		return
	}
	start := u
	start.OutputTokens = 1
	evs := []sseEvent{{"message_start", obj{{"type", "message_start"}, {"message", aMessageOut{
		ID: id, Type: "message", Role: "assistant", Model: req.model, Content: []json.RawMessage{}, Usage: start}}}}}
	for i, b := range blocks {
		evs = append(evs, sseEvent{"content_block_start", obj{{"type", "content_block_start"}, {"index", i}, {"content_block", b.start}}})
		if i == 0 {
			evs = append(evs, sseEvent{"ping", obj{{"type", "ping"}}})
		}
		for _, d := range b.deltas(s.cfg.Chunk) {
			evs = append(evs, sseEvent{"content_block_delta", obj{{"type", "content_block_delta"}, {"index", i}, {"delta", d}}})
		}
		evs = append(evs, sseEvent{"content_block_stop", obj{{"type", "content_block_stop"}, {"index", i}}})
	}
	evs = append(evs,
		sseEvent{"message_delta", obj{{"type", "message_delta"},
			{"delta", obj{{"stop_reason", stop}, {"stop_sequence", nil}}},
			{"usage", obj{{"input_tokens", u.InputTokens}, {"cache_creation_input_tokens", u.CacheCreationInputTokens},
				{"cache_read_input_tokens", u.CacheReadInputTokens}, {"output_tokens", u.OutputTokens}}}}},
		sseEvent{"message_stop", obj{{"type", "message_stop"}}})
	streamEvents(w, r, h, evs, f, sseEvent{"error", anthropicError("overloaded_error", "Overloaded", reqID)})
}

// aOutBlock is one content block of an answer: its full form, its
// content_block_start form, and what its deltas carry.
type aOutBlock struct {
	full  json.RawMessage
	start any
	kind  string // text, thinking, tool_use
	text  string // text, thinking, or the tool input
	sig   string
}

func (b aOutBlock) deltas(n int) []any {
	var ds []any
	switch b.kind {
	case "text":
		for _, p := range chunks(b.text, n) {
			ds = append(ds, obj{{"type", "text_delta"}, {"text", p}})
		}
	case "thinking":
		for _, p := range chunks(b.text, n) {
			ds = append(ds, obj{{"type", "thinking_delta"}, {"thinking", p}})
		}
		ds = append(ds, obj{{"type", "signature_delta"}, {"signature", b.sig}})
	case "tool_use":
		ds = append(ds, obj{{"type", "input_json_delta"}, {"partial_json", ""}})
		for _, p := range chunks(b.text, n) {
			ds = append(ds, obj{{"type", "input_json_delta"}, {"partial_json", p}})
		}
	}
	return ds
}

// anthropicContent turns a reply into content blocks, the stop reason and
// the output token count.
func anthropicContent(r Reply, n int) ([]aOutBlock, string, int) {
	var out []aOutBlock
	output := 0
	if r.Thinking != "" {
		sig := Signature(r.Thinking)
		full, _ := json.Marshal(obj{{"type", "thinking"}, {"thinking", r.Thinking}, {"signature", sig}})
		out = append(out, aOutBlock{full: full, start: obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}},
			kind: "thinking", text: r.Thinking, sig: sig})
		output += blockTokens + Tokens(r.Thinking)
	}
	if r.Text != "" {
		full, _ := json.Marshal(obj{{"type", "text"}, {"text", r.Text}})
		out = append(out, aOutBlock{full: full, start: obj{{"type", "text"}, {"text", ""}}, kind: "text", text: r.Text})
		output += blockTokens + Tokens(r.Text)
	}
	for i, call := range r.Calls {
		id := call.ID
		if id == "" {
			id = fmt.Sprintf("toolu_llmtest%04d_%d", n, i+1)
		}
		input := call.Input
		if input == "" {
			input = "{}"
		}
		fullInput := json.RawMessage(input)
		if !json.Valid(fullInput) {
			fullInput = json.RawMessage("{}")
		}
		full, _ := json.Marshal(obj{{"type", "tool_use"}, {"id", id}, {"name", call.Name}, {"input", fullInput}})
		out = append(out, aOutBlock{full: full, start: obj{{"type", "tool_use"}, {"id", id}, {"name", call.Name}, {"input", obj{}}},
			kind: "tool_use", text: input})
		output += blockTokens + Tokens(call.Name+" "+input)
	}
	stop := r.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(r.Calls) > 0 {
			stop = "tool_use"
		}
	}
	return out, stop, max(output, 1)
}

// streamEvents writes evs as server-sent events, applying fault f: cut the
// connection, send errEv, or stall after the first f.Events events.
func streamEvents(w http.ResponseWriter, r *http.Request, h http.Header, evs []sseEvent, f *Fault, errEv sseEvent) {
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, ev := range evs {
		if f != nil && i == f.events() {
			switch f.Kind {
			case CutStream:
				panic(http.ErrAbortHandler)
			case Truncate:
				return
			case StreamError:
				writeEvent(w, errEv)
				if fl != nil {
					fl.Flush()
				}
				return
			case Stall:
				if !wait(r, f.Delay) {
					return
				}
			}
		}
		writeEvent(w, ev)
		if fl != nil {
			fl.Flush()
		}
	}
}

func writeEvent(w http.ResponseWriter, ev sseEvent) {
	var data []byte
	if raw, ok := ev.data.(rawData); ok {
		data = []byte(raw)
	} else {
		data, _ = json.Marshal(ev.data)
	}
	if ev.name != "" {
		fmt.Fprintf(w, "event: %s\n", ev.name)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
}

func writeJSON(w http.ResponseWriter, status int, h http.Header, v any) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
