package proxy

import (
	"encoding/json"
	"net/http"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/wire"
)

// codexModel is the model Codex CLI 0.169 asks for by default.
const codexModel = "gpt-5.1-codex"

// codexClient is Codex CLI on the OpenAI Responses API, as 0.169 sends
// it: stateless (store false, the whole history as input every turn),
// the system prompt as developer messages inside input, streamed,
// prompt_cache_key the session, encrypted reasoning asked for and every
// reasoning item sent back with its encrypted content, freeform tools
// (apply_patch) as custom tools, no max_output_tokens.
type codexClient struct{}

func (codexClient) api() llmtest.API { return llmtest.Responses }

// echo seals the recorded reasoning as the stand-in seals what it
// issued: a reasoning item's encrypted content is opaque, so the stand-in
// reseals the recorded ciphertext (three quarters of it, so the sealed
// text is as long as the recording's); thinking with a summary is sealed
// over its text. Reasoning not directly followed by an output item in the
// same response (an interrupted turn) is left out, as the API refuses it.
func (codexClient) echo(m *conv.Message) {
	if m.Role != conv.RoleAssistant {
		return
	}
	out := m.Blocks[:0]
	for j := range m.Blocks {
		b := m.Blocks[j]
		switch b.Type {
		case conv.TypeThinking, conv.TypeRedactedThinking:
			if j+1 >= len(m.Blocks) || !isOutput(m.Blocks[j+1].Type) {
				continue
			}
			if b.Type == conv.TypeThinking {
				b.Signature = llmtest.EncryptedContent(b.Text)
			} else {
				b.Data = llmtest.EncryptedContent(b.Data[:len(b.Data)*3/4])
			}
		}
		out = append(out, b)
	}
	m.Blocks = out
}

// isOutput reports whether a block is one a Responses model outputs after
// its reasoning: text or a call.
func isOutput(t conv.Type) bool { return t == conv.TypeText || t == conv.TypeToolUse }

func (codexClient) encode(req *llm.Request, session string) (string, []byte, error) {
	r := *req
	r.Model, r.MaxTokens = codexModel, 0
	body, err := wire.EncodeResponses(&r, wire.ResponsesOptions{
		Developer: true, Stream: true, Include: []string{"reasoning.encrypted_content"}, CacheKey: session,
		Parallel: true, Reasoning: json.RawMessage(`{"effort":"medium","summary":"auto"}`),
	})
	return "/v1/responses", body, err
}

func (codexClient) header(h http.Header, key, session string) {
	h.Set("Authorization", "Bearer "+key)
	h.Set("Accept", "text/event-stream")
	h.Set("Originator", "codex_exec")
	h.Set("Session-Id", session)
	h.Set("X-Codex-Window-Id", session+":0")
}

func (codexClient) decode(body []byte) (*llm.Request, error) { return wire.DecodeResponses(body) }
