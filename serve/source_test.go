package serve

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// TestUserTextSourceAsWire: the proxy tells a client's own context from
// its user's words as wire's decoders and the importers do, so the engine
// behind it sees the rounds and the user's words the replay sees (a
// format error counted as the user's words opened a round the replay did
// not, and the proxy cleared where the engine's replay did not).
func TestUserTextSourceAsWire(t *testing.T) {
	const texts = `"<environment_context>\n<cwd>/r</cwd>\n</environment_context>"`
	cases := []struct {
		name   string
		parse  func([]byte) (*request, error)
		decode func([]byte) (*llm.Request, error)
		body   string
	}{
		{"anthropic", parseAnthropic, wire.DecodeAnthropic,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":"Fix it"},{"type":"text","text":"<system-reminder>todo</system-reminder>"},{"type":"text","text":"Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},{"type":"text","text":"<returncode>0</returncode>"}]}]}`},
		{"chat", parseChat, wire.DecodeOpenAI,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":%s},{"type":"text","text":"Fix it"},{"type":"text","text":"<session_context>cli</session_context>"}]}]}`},
		{"responses", parseResponses, wire.DecodeResponses,
			`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":%s},{"type":"input_text","text":"# AGENTS.md instructions for /r"},{"type":"input_text","text":"Fix it"}]}]}`},
		{"gemini", func(b []byte) (*request, error) { return parseGemini(b, "gemini-2.5-pro") }, wire.DecodeGemini,
			`{"contents":[{"role":"user","parts":[{"text":%s},{"text":"<hook_context>ok</hook_context>"},{"text":"Fix it"}]}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(strings.ReplaceAll(tc.body, "%s", texts))
			want, err := tc.decode(body)
			if err != nil {
				t.Fatal(err)
			}
			req, err := tc.parse(body)
			if err != nil {
				t.Fatal(err)
			}
			var got []conv.Source
			for _, msg := range req.Messages {
				for _, p := range partsOf(body, msg) {
					b := convBlock(body, msg, p, roleOf(msg.Role))
					got = append(got, b.Meta.Source)
				}
			}
			var wantSrc []conv.Source
			for _, m := range want.Messages {
				for _, b := range m.Blocks {
					wantSrc = append(wantSrc, b.Meta.Source)
				}
			}
			if len(got) != len(wantSrc) {
				t.Fatalf("proxy sees %v, wire decodes %v", got, wantSrc)
			}
			for i := range got {
				if got[i] != wantSrc[i] {
					t.Errorf("part %d: proxy says %q, wire %q", i, got[i], wantSrc[i])
				}
			}
			if got[0] != conv.SourceHook {
				t.Errorf("the client's environment context is %q, want hook", got[0])
			}
		})
	}
}
