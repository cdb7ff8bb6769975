package proxy

import (
	"net/http"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/wire"
)

// geminiModel is the model the Gemini replay asks for.
const geminiModel = "gemini-2.5-pro"

// geminiClient is Gemini CLI on the Gemini API, as 0.61 sends it:
// :streamGenerateContent?alt=sse with the key in x-goog-api-key, the
// system prompt as systemInstruction, tools as functionDeclarations with
// parametersJsonSchema, thoughts not sent back, and the thoughtSignature
// the API put on the first function call of each answer sent back on it.
type geminiClient struct{}

func (geminiClient) api() llmtest.API { return llmtest.Gemini }

// echo drops the thoughts (Gemini CLI keeps them out of its history) and
// signs the first call of each answer as the stand-in signs it. An
// answer that was only thoughts keeps them, signed, so that the turn is
// not empty.
func (geminiClient) echo(m *conv.Message) {
	if m.Role != conv.RoleAssistant {
		return
	}
	var out []conv.Block
	for _, b := range m.Blocks {
		if b.Type != conv.TypeThinking && b.Type != conv.TypeRedactedThinking {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeRedactedThinking {
				b.Type, b.Text, b.Data = conv.TypeThinking, "", ""
			}
			b.Signature = llmtest.ThoughtSignature([]byte(b.Text))
			out = append(out, b)
		}
	}
	for j := range out {
		if b := &out[j]; b.Type == conv.TypeToolUse {
			b.Signature = llmtest.CallSignature(b.Name, b.Input)
			break
		}
	}
	m.Blocks = out
}

func (geminiClient) encode(req *llm.Request, _ string) (string, []byte, error) {
	r := *req
	r.MaxTokens = 0
	body, err := wire.EncodeGemini(&r)
	return "/v1beta/models/" + geminiModel + ":streamGenerateContent?alt=sse", body, err
}

func (geminiClient) header(h http.Header, key, _ string) {
	h.Set("X-Goog-Api-Key", key)
	h.Set("User-Agent", "GeminiCLI/0.61.0 (linux; x64)")
}

func (geminiClient) decode(body []byte) (*llm.Request, error) { return wire.DecodeGemini(body) }
