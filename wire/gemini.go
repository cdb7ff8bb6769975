package wire

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/jsonerr"
	"github.com/ctxkit/ctxkit/llm"
)

// The Gemini API's generateContent request (v1beta), decoded into
// ctxkit's model: contents of role "user" or "model" (the assistant),
// parts of text (a thought part is thinking, its thoughtSignature the
// block's signature), inline data (an image), functionCall (tool_use) and functionResponse
// (tool_result); a function call's thoughtSignature is its tool_use's
// Signature. Calls without the API's optional id are named by their
// tool and rank in the turn, and so are responses, so the k-th response
// of a tool answers the k-th call of it in the turn before. The body does
// not name the model (the URL does).

// GeminiPart is a part of the Gemini API's Content, as the API, Gemini
// CLI's session files and this package's codec read and write it: one of
// text (a thought when Thought is set), inline data, file data, a
// function call or a function response, with the thoughtSignature the
// API put on it.
type GeminiPart struct {
	Text             *string                 `json:"text,omitempty"`
	Thought          bool                    `json:"thought,omitempty"`
	InlineData       *GeminiBlob             `json:"inlineData,omitempty"`
	FileData         *GeminiFile             `json:"fileData,omitempty"`
	FunctionCall     *GeminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *GeminiFunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string                  `json:"thoughtSignature,omitempty"`
}

// Result is the text a function response gave the model: its output, or
// its error (isErr), else its JSON compacted.
func (r *GeminiFunctionResponse) Result() (text string, isErr bool) {
	var v struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	_ = json.Unmarshal(r.Response, &v)
	switch {
	case v.Error != nil:
		return *v.Error, true
	case v.Output != nil:
		return *v.Output, false
	}
	c, err := raw(r.Response)
	if err != nil {
		return string(r.Response), false
	}
	return string(c), false
}

// GeminiBlob is inline data: base64 bytes of a MIME type.
type GeminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// GeminiFile is data by reference: a URI of a MIME type.
type GeminiFile struct {
	MimeType string `json:"mimeType"`
	URI      string `json:"fileUri"`
}

// GeminiFunctionCall is a model's call of a declared function; ID is
// optional in the API.
type GeminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// GeminiFunctionResponse is a function's result, Response a JSON object
// (Gemini CLI's: {"output": …} or {"error": …}).
type GeminiFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gContentIn struct {
	Role  string       `json:"role"`
	Parts []GeminiPart `json:"parts"`
}

type gRequestIn struct {
	Contents          []gContentIn `json:"contents"`
	SystemInstruction *gContentIn  `json:"systemInstruction"`
	Tools             []struct {
		Decls []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			JSONSchema  json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

// DecodeGemini parses a Gemini generateContent request body.
func DecodeGemini(data []byte) (*llm.Request, error) {
	var in gRequestIn
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, jsonerr.What(err))
	}
	req := &llm.Request{MaxTokens: in.GenerationConfig.MaxOutputTokens}
	if si := in.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			if p.Text != nil {
				req.System = append(req.System, conv.NewText(conv.SourceSystem, *p.Text))
			}
		}
	}
	for _, t := range in.Tools {
		for _, d := range t.Decls {
			schema := d.JSONSchema
			if len(schema) == 0 {
				schema = d.Parameters
			}
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			req.Tools = append(req.Tools, conv.Tool{Name: d.Name, Description: d.Description, InputSchema: schema})
		}
	}
	for i, c := range in.Contents {
		m := conv.Message{Role: conv.RoleUser}
		switch c.Role {
		case "model":
			m.Role = conv.RoleAssistant
		case "user", "":
		default:
			return nil, fmt.Errorf("contents[%d]: %w: role %q", i, ErrUnknownType, c.Role)
		}
		calls, results := map[string]int{}, map[string]int{}
		for j, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = fmt.Sprintf("%s#%d", p.FunctionCall.Name, calls[p.FunctionCall.Name])
					calls[p.FunctionCall.Name]++
				}
				args := p.FunctionCall.Args
				if len(args) == 0 || string(args) == "null" {
					args = json.RawMessage(`{}`)
				}
				b := conv.NewToolUse(id, p.FunctionCall.Name, args)
				b.Signature = p.ThoughtSignature
				m.Blocks = append(m.Blocks, b)
			case p.FunctionResponse != nil:
				fr := p.FunctionResponse
				id := fr.ID
				if id == "" {
					id = fmt.Sprintf("%s#%d", fr.Name, results[fr.Name])
					results[fr.Name]++
				}
				text, isErr := fr.Result()
				m.Blocks = append(m.Blocks, conv.NewToolResult(id, fr.Name, text, isErr))
			case p.Text != nil && p.Thought:
				m.Blocks = append(m.Blocks, conv.NewThinking(*p.Text, p.ThoughtSignature))
			case p.Text != nil:
				m.Blocks = append(m.Blocks, newText(sourceOf(m.Role), *p.Text))
			case p.FileData != nil:
				m.Blocks = append(m.Blocks, conv.NewText(sourceOf(m.Role), fmt.Sprintf("[file %s (%s)]", p.FileData.URI, p.FileData.MimeType)))
			case p.InlineData != nil:
				b, err := ImageFromBase64(p.InlineData.MimeType, p.InlineData.Data, sourceOf(m.Role))
				if err != nil {
					return nil, fmt.Errorf("contents[%d].parts[%d]: %w", i, j, err)
				}
				m.Blocks = append(m.Blocks, b)
			default:
				return nil, fmt.Errorf("contents[%d].parts[%d]: %w: a part of no known kind", i, j, ErrUnknownType)
			}
		}
		req.Messages = append(req.Messages, m)
	}
	fillNames(req.Messages)
	return req, nil
}

// Encoding shapes, in the order Gemini CLI writes them.
type (
	gRequest struct {
		Contents          []gContent         `json:"contents"`
		SystemInstruction *gContent          `json:"systemInstruction,omitempty"`
		Tools             []gTool            `json:"tools,omitempty"`
		GenerationConfig  *gGenerationConfig `json:"generationConfig,omitempty"`
	}
	gContent struct {
		Role  string       `json:"role"`
		Parts []GeminiPart `json:"parts"`
	}
	gTool struct {
		Decls []gDecl `json:"functionDeclarations"`
	}
	gDecl struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"parametersJsonSchema"`
	}
	gGenerationConfig struct {
		MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
	}
)

// EncodeGemini returns req as a Gemini generateContent request body (the
// model goes in the URL). Text is a text part, thinking a thought part
// with its signature, a tool_use a functionCall part carrying the
// block's Signature as its thoughtSignature, a tool_result a
// functionResponse part whose response is {"output": text} ({"error":
// text} for an error), a base64 image inline data. Redacted thinking has
// no Gemini form and is dropped, as EncodeOpenAI drops it.
func EncodeGemini(req *llm.Request) ([]byte, error) {
	out := gRequest{Contents: []gContent{}}
	if len(req.System) > 0 {
		si := &gContent{Role: "user"}
		for i := range req.System {
			b := &req.System[i]
			if b.Type != conv.TypeText && b.Type != conv.TypeSummary {
				return nil, fmt.Errorf("system[%d]: %w: %q block in the system prompt", i, ErrUnknownType, b.Type)
			}
			t := textOf(b)
			si.Parts = append(si.Parts, GeminiPart{Text: &t})
		}
		out.SystemInstruction = si
	}
	if len(req.Tools) > 0 {
		var t gTool
		for _, tool := range req.Tools {
			schema := tool.InputSchema
			if len(schema) == 0 {
				schema = defaultSchema
			}
			t.Decls = append(t.Decls, gDecl{Name: tool.Name, Description: tool.Description, Schema: schema})
		}
		out.Tools = []gTool{t}
	}
	if req.MaxTokens > 0 {
		out.GenerationConfig = &gGenerationConfig{MaxOutputTokens: req.MaxTokens}
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		c := gContent{Role: "user"}
		if m.Role == conv.RoleAssistant {
			c.Role = "model"
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			switch b.Type {
			case conv.TypeText, conv.TypeSummary:
				t := textOf(b)
				c.Parts = append(c.Parts, GeminiPart{Text: &t})
			case conv.TypeThinking:
				t := b.Text
				c.Parts = append(c.Parts, GeminiPart{Text: &t, Thought: true, ThoughtSignature: b.Signature})
			case conv.TypeToolUse:
				c.Parts = append(c.Parts, GeminiPart{FunctionCall: &GeminiFunctionCall{ID: b.ToolUseID, Name: b.Name, Args: b.Input}, ThoughtSignature: b.Signature})
			case conv.TypeToolResult:
				key := "output"
				if b.IsError {
					key = "error"
				}
				resp, err := jsonenc.Marshal(map[string]string{key: b.ResultText()})
				if err != nil {
					return nil, fmt.Errorf("messages[%d].content[%d]: %w", i, j, err)
				}
				c.Parts = append(c.Parts, GeminiPart{FunctionResponse: &GeminiFunctionResponse{ID: b.ToolUseID, Name: b.Name, Response: resp}})
			case conv.TypeRedactedThinking:
			case conv.TypeImage:
				s := ImageSourceOf(b)
				if s.Data == "" {
					return nil, fmt.Errorf("messages[%d].content[%d]: %w: an image without inline data", i, j, ErrUnknownType)
				}
				c.Parts = append(c.Parts, GeminiPart{InlineData: &GeminiBlob{MimeType: s.MediaType, Data: s.Data}})
			default:
				return nil, fmt.Errorf("messages[%d].content[%d]: %w: %q block", i, j, ErrUnknownType, b.Type)
			}
		}
		out.Contents = append(out.Contents, c)
	}
	data, err := jsonenc.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("wire: encode gemini request: %w", err)
	}
	return data, nil
}
