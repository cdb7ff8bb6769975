package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Gemini API (generativelanguage, v1beta), as Gemini CLI speaks it:
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent
// (?alt=sse) and :countTokens. A request's contents are turns of role
// "user" or "model", each a list of parts: text, a functionCall, a
// functionResponse (the user turn right after a model turn with calls
// answers them), inline data. Parts may carry a thoughtSignature, which
// must come back byte-identical on the part it came on; such a part is
// sealed (never cut). The model is in the path, the key in the
// x-goog-api-key header (or ?key=): both go upstream as they came, and
// neither is logged nor stored.

const providerGemini = "gemini"

var (
	kContents          = []byte(`"contents"`)
	kSystemInstruction = []byte(`"systemInstruction"`)
	kSystemInstrSnake  = []byte(`"system_instruction"`)
	kGenerationConfig  = []byte(`"generationConfig"`)
	kMaxOutputTokens   = []byte(`"maxOutputTokens"`)
	kCachedContent     = []byte(`"cachedContent"`)
	kParts             = []byte(`"parts"`)
	kFunctionCall      = []byte(`"functionCall"`)
	kFunctionResponse  = []byte(`"functionResponse"`)
	kFunctionDecls     = []byte(`"functionDeclarations"`)
	kArgs              = []byte(`"args"`)
	kResponse          = []byte(`"response"`)
	kThoughtSignature  = []byte(`"thoughtSignature"`)
	kThought           = []byte(`"thought"`)
	kInlineData        = []byte(`"inlineData"`)
)

// geminiModelKey carries the model named in a Gemini request's path to
// its parser (the body does not name it).
type geminiModelKey struct{}

// geminiCall splits the last path segment of a Gemini route,
// "gemini-2.5-pro:streamGenerateContent", into model and method.
func geminiCall(seg string) (model, method string, ok bool) {
	i := strings.LastIndexByte(seg, ':')
	if i <= 0 {
		return "", "", false
	}
	return seg[:i], seg[i+1:], true
}

// gemini serves POST /v1beta/models/{call}: generateContent and
// streamGenerateContent go through the engine; anything else
// (countTokens, embedContent) goes upstream as it came.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	model, method, ok := geminiCall(r.PathValue("call"))
	if !ok || method != "generateContent" && method != "streamGenerateContent" {
		s.passthrough(w, r) // the proxy key checked and swapped, as for any request
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), geminiModelKey{}, model))
	s.engine(providerGemini, "gemini")(w, r)
}

// geminiStatus is the canonical status name of an HTTP status in Google
// API errors.
func geminiStatus(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// parseGemini reads a generateContent request body for model.
func parseGemini(body []byte, model string) (*request, error) {
	return (*parseCache)(nil).gemini(body, model)
}

// gemini reads a generateContent request body, reusing pc's parse of
// every content seen before. A request that continues server-side state
// (cachedContent) is left alone.
func (pc *parseCache) gemini(body []byte, model string) (*request, error) {
	r := &request{Body: body, Provider: providerGemini, API: "gemini", Model: model}
	top := span{skipWS(body, 0), len(body)}
	if top.s >= len(body) || body[top.s] != '{' {
		return nil, fmt.Errorf("%w: the body is not a JSON object", errSyntax)
	}
	var spans []span
	untouched := false
	err := membersScan(body, top, arrayOf(body, kContents, &spans), func(key []byte, val span) error {
		switch {
		case bytes.Equal(key, kContents):
			r.MsgsSpan = val
		case bytes.Equal(key, kSystemInstruction), bytes.Equal(key, kSystemInstrSnake):
			r.System = val
		case bytes.Equal(key, kCachedContent):
			untouched = untouched || string(body[val.s:val.e]) != "null"
		case bytes.Equal(key, kGenerationConfig) && body[val.s] == '{':
			return members(body, val, func(k []byte, v span) error {
				if bytes.Equal(k, kMaxOutputTokens) {
					fmt.Sscan(string(body[v.s:v.e]), &r.MaxOut) // (the API does not refuse it for the window: no MaxSpan)
				}
				return nil
			})
		case bytes.Equal(key, kTools) && body[val.s] == '[':
			r.ToolsSpan = val
			return elems(body, val, func(_ int, t span) error {
				if body[t.s] != '{' {
					return nil
				}
				return members(body, t, func(k []byte, v span) error {
					if bytes.Equal(k, kFunctionDecls) {
						return toolNames(body, v, &r.Tools)
					}
					return nil
				})
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if untouched {
		return nil, errUntouched
	}
	if !r.MsgsSpan.ok() || body[r.MsgsSpan.s] != '[' {
		return nil, fmt.Errorf("%w: no contents array", errSyntax)
	}
	r.Messages, err = pc.messages(kindGemini, body, spans, parseGeminiContent)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// parseGeminiContent reads one content: its role ("model" is the
// assistant) and its parts as blocks.
func parseGeminiContent(body []byte, csp span) (message, error) {
	m := message{Span: csp, Bytes: csp.e - csp.s, Role: "user"}
	if body[csp.s] != '{' {
		return m, fmt.Errorf("%w: a content is not an object", errSyntax)
	}
	if err := members(body, csp, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kRole):
			if str(body, v) == "model" {
				m.Role = "assistant"
			}
		case bytes.Equal(k, kParts):
			m.Content = v
		}
		return nil
	}); err != nil {
		return m, err
	}
	h := sha256.New()
	h.Write([]byte(m.Role))
	h.Write([]byte{0})
	if m.Content.ok() && body[m.Content.s] == '[' {
		if err := elems(body, m.Content, func(_ int, psp span) error {
			b, err := parseGeminiPart(body, psp)
			if err != nil {
				return err
			}
			m.Blocks = append(m.Blocks, b)
			h.Write([]byte(b.Hash))
			return nil
		}); err != nil {
			return m, err
		}
	}
	// The API's call ids are optional: a call without one is named by its
	// tool and its rank among the turn's calls of that tool, and so is a
	// response, so the k-th response of a tool answers the k-th call of it
	// in the model turn before (link pairs them).
	var calls, results map[string]int
	for j := range m.Blocks {
		b := &m.Blocks[j]
		if b.ToolUseID != "" || b.Type != "tool_use" && b.Type != "tool_result" {
			continue
		}
		seen := &calls
		if b.Type == "tool_result" {
			seen = &results
		}
		if *seen == nil {
			*seen = map[string]int{}
		}
		b.ToolUseID = fmt.Sprintf("%s#%d", b.Name, (*seen)[b.Name])
		(*seen)[b.Name]++
	}
	m.Hash = sum(h)
	return m, nil
}

// parseGeminiPart reads one part. A functionResponse's Content is its
// response's "output" string (or "error", or "content"), the value a
// placeholder may replace; a response of another shape is never cleared.
func parseGeminiPart(body []byte, psp span) (block, error) {
	b := block{Span: psp, Type: "opaque"}
	if body[psp.s] != '{' {
		return b, fmt.Errorf("%w: a part is not an object", errSyntax)
	}
	thought := false
	if err := members(body, psp, func(k []byte, v span) error {
		switch {
		case bytes.Equal(k, kText):
			if b.Type == blockOpaque {
				b.Type = "text"
			}
		case bytes.Equal(k, kThought):
			thought = string(body[v.s:v.e]) == "true"
		case bytes.Equal(k, kThoughtSignature):
			b.Sealed = true
		case bytes.Equal(k, kInlineData):
			b.Type = "inline_data"
		case bytes.Equal(k, kFunctionCall) && body[v.s] == '{':
			b.Type = "tool_use"
			return members(body, v, func(k2 []byte, v2 span) error {
				switch {
				case bytes.Equal(k2, kID):
					b.ToolUseID = str(body, v2)
				case bytes.Equal(k2, kName):
					b.Name = str(body, v2)
				case bytes.Equal(k2, kArgs):
					b.Input = v2
				}
				return nil
			})
		case bytes.Equal(k, kFunctionResponse) && body[v.s] == '{':
			b.Type = "tool_result"
			return members(body, v, func(k2 []byte, v2 span) error {
				switch {
				case bytes.Equal(k2, kID):
					b.ToolUseID = str(body, v2)
				case bytes.Equal(k2, kName):
					b.Name = str(body, v2)
				case bytes.Equal(k2, kResponse) && body[v2.s] == '{':
					return members(body, v2, func(k3 []byte, v3 span) error {
						switch {
						case body[v3.s] != '"':
						case bytes.Equal(k3, kOutput):
							b.Content = v3
						case !b.Content.ok() && (string(k3) == `"error"` || string(k3) == `"content"`):
							b.Content = v3
						}
						return nil
					})
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return b, err
	}
	if thought && b.Type == "text" {
		b.Type = "thinking"
	}
	h := sha256.New()
	h.Write(body[psp.s:psp.e])
	b.Hash = sum(h)
	return b, nil
}

// geminiTranscriptBody is a generateContent request for the summary of
// req.Contents[idx...] as a transcript, when the client's own request
// cannot carry the instruction (another --summary-model, a prefix too
// long for the window).
func (s *Server) geminiTranscriptBody(req *request, idx []int, kw keptWords, target, window int) []byte {
	user := transcriptInstruction(target) + s.fitTranscript(transcript(req, idx, kw), window)
	body, _ := json.Marshal(map[string]any{
		"systemInstruction": map[string]any{"parts": []map[string]string{{"text": SummaryPrompt}}},
		"contents":          []map[string]any{{"role": "user", "parts": []map[string]string{{"text": user}}}},
		"generationConfig":  map[string]any{"maxOutputTokens": maxSummaryTokens},
	})
	return body
}
