package serve

import (
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/wire"
)

// TestFixedPartsDecoded: the engine behind the proxy counts a request's
// system prompt and tool schemas as the provider reads them — decoded, as
// wire decodes the whole request and as the bench bills it — not as their
// JSON, whose escapes and keys made it count more than was billed (at a
// 16k window the proxy compacted a request before the replay did). A
// Responses request's instructions count too.
func TestFixedPartsDecoded(t *testing.T) {
	prompt := `You are a coding agent.\n\nRules:\n- Quote \"paths\" exactly.\n- Use tabs:\tlike this.`
	for _, tc := range []struct {
		api    string
		body   string
		parse  func([]byte) (*request, error)
		decode func([]byte) (*llm.Request, error)
	}{
		{"messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"system":[{"type":"text","text":"` + prompt + `","cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"Bash","description":"Run a command.","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],` +
			`"messages":[{"role":"user","content":"hi"}]}`, parseAnthropic, wire.DecodeAnthropic},
		{"chat", `{"model":"gpt-4.1","messages":[{"role":"system","content":"` + prompt + `"},{"role":"user","content":"hi"}],` +
			`"tools":[{"type":"function","function":{"name":"bash","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`, parseChat, wire.DecodeOpenAI},
		{"responses", `{"model":"gpt-5","instructions":"` + prompt + `","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>\nsandbox\n</permissions instructions>"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],` +
			`"tools":[{"type":"function","name":"shell","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"array"}}}}]}`, parseResponses, wire.DecodeResponses},
		{"gemini", `{"systemInstruction":{"parts":[{"text":"` + prompt + `"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"run_shell_command","description":"Run a command.","parameters":{"type":"object"}}]}]}`,
			func(b []byte) (*request, error) { return parseGemini(b, "gemini-2.5-pro") }, wire.DecodeGemini},
	} {
		t.Run(tc.api, func(t *testing.T) {
			req, err := tc.parse([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			whole, err := tc.decode([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			sys, tools, err := fixedParts(req)
			if err != nil {
				t.Fatal(err)
			}
			if len(sys) == 0 || len(tools) != 1 {
				t.Fatalf("%d system blocks, %d tools", len(sys), len(tools))
			}
			if !reflect.DeepEqual(texts(sys), texts(whole.System)) || !reflect.DeepEqual(tools, whole.Tools) {
				t.Errorf("fixed parts %q %+v, the whole request's %q %+v", texts(sys), tools, texts(whole.System), whole.Tools)
			}
			counter := tokens.NewEstimator()
			m := mirror{c: &conv.Conversation{}}
			m.setFixed(req)
			got := m.c.Tokens(counter)
			want := (&conv.Conversation{System: whole.System, Tools: whole.Tools}).Tokens(counter)
			if got.System != want.System || got.Tools != want.Tools {
				t.Errorf("the engine counts system %d, tools %d; the request decoded: %d, %d", got.System, got.Tools, want.System, want.Tools)
			}
		})
	}
}

func texts(bs []conv.Block) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Text)
	}
	return out
}
