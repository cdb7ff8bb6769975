package wire

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
	"github.com/ctxkit/ctxkit/llm"
)

type codec struct {
	name   string
	encode func(*llm.Request) ([]byte, error)
	decode func([]byte) (*llm.Request, error)
	openai bool
}

var codecs = []codec{
	{"anthropic", EncodeAnthropic, DecodeAnthropic, false},
	{"openai", EncodeOpenAI, DecodeOpenAI, true},
}

// agentCodecs are the formats of the agent CLIs' own APIs, which carry
// less than Messages (no cache_control, no images in results, no opaque
// reasoning for Gemini): re-encoding and decoding them must still agree.
var agentCodecs = []codec{
	{"responses", func(r *llm.Request) ([]byte, error) { return EncodeResponses(r, ResponsesOptions{}) }, DecodeResponses, true},
	{"gemini", EncodeGemini, DecodeGemini, true},
}

// roundTrip is the property: a canonical request survives encode and
// decode exactly, and encoding is deterministic.
func roundTrip(c codec) func(*rapid.T) {
	return func(t *rapid.T) {
		req := genRequest(t, c.openai)
		data, err := c.encode(req)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := c.encode(req)
		if err != nil || !bytes.Equal(data, again) {
			t.Fatalf("encoding twice gave different bytes")
		}
		back, err := c.decode(data)
		if err != nil {
			t.Fatalf("decode: %v\n%s", err, data)
		}
		if d := cmp.Diff(req, back); d != "" {
			t.Fatalf("decode(encode(r)) != r (-want +got):\n%s\nbody: %s", d, data)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) { rapid.Check(t, roundTrip(c)) })
	}
}

func FuzzRoundTripAnthropic(f *testing.F) { f.Fuzz(rapid.MakeFuzz(roundTrip(codecs[0]))) }
func FuzzRoundTripOpenAI(f *testing.F)    { f.Fuzz(rapid.MakeFuzz(roundTrip(codecs[1]))) }

// TestReencodeConversations runs the generator conv's own tests use (every
// block kind, hooks, structured results, images in results): whatever a
// codec drops, decoding keeps everything it wrote, so encoding the decoded
// request gives the same bytes.
func TestReencodeConversations(t *testing.T) {
	for _, c := range append(codecs, agentCodecs...) {
		t.Run(c.name, func(t *testing.T) {
			for seed := range 300 {
				data := make([]byte, 64)
				for i := range data {
					data[i] = byte(seed*31 + i*i*7 + seed>>3)
				}
				cv := convtest.Valid(convtest.NewChoices(data), convtest.Options{Request: seed%2 == 0})
				req := &llm.Request{Model: "m", MaxTokens: 1024, System: cv.System, Tools: cv.Tools, Messages: cv.Messages}
				first, err := c.encode(req)
				if err != nil {
					t.Fatalf("seed %d: encode: %v", seed, err)
				}
				back, err := c.decode(first)
				if err != nil {
					t.Fatalf("seed %d: decode: %v", seed, err)
				}
				second, err := c.encode(back)
				if err != nil {
					t.Fatalf("seed %d: re-encode: %v", seed, err)
				}
				if !bytes.Equal(first, second) {
					t.Fatalf("seed %d: re-encoding changed the body\nfirst:  %s\nsecond: %s", seed, first, second)
				}
				if c.openai {
					continue
				}
				// Anthropic keeps the structure: same messages, same blocks.
				decoded := &conv.Conversation{System: back.System, Tools: back.Tools, Messages: back.Messages}
				if vs := conv.Check(decoded); len(vs) > 0 {
					t.Fatalf("seed %d: decoded conversation breaks invariants: %v", seed, vs)
				}
			}
		})
	}
}

// FuzzDecode feeds arbitrary bytes to both decoders: they must not panic,
// and whatever they accept must re-encode to a body that decodes to the
// same request.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"a","content":"[tool error]\nboom"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"b":1,"a":2}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"<summary turns=\"1-2\">\nx\n</summary>"}]}]}]}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"message","role":"developer","content":"d"},{"type":"reasoning","summary":[],"encrypted_content":"gAAAAB"},{"type":"custom_tool_call","name":"apply_patch","input":"x","call_id":"c"},{"type":"custom_tool_call_output","call_id":"c","output":"ok"}]}`))
	f.Add([]byte(`{"input":[{"role":"user","content":[{"type":"input_image","image_url":{"url":"data:image/png;base64,AA=="}}]},{"type":"function_call_output","call_id":"c","output":{"content":[{"type":"input_text","text":"x"}],"success":false}},{"type":"web_search_call","id":"w"}]}`))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"s"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"e"}}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range append(codecs, agentCodecs...) {
			req, err := c.decode(data)
			if err != nil {
				continue
			}
			body, err := c.encode(req)
			if err != nil {
				continue // decodable but not encodable (e.g. a tool_use inside a result list)
			}
			back, err := c.decode(body)
			if err != nil {
				t.Fatalf("%s: own output does not decode: %v\n%s", c.name, err, body)
			}
			body2, err := c.encode(back)
			if err != nil || !bytes.Equal(body, body2) {
				t.Fatalf("%s: encode(decode(encode(x))) differs: %v\n%s\n%s", c.name, err, body, body2)
			}
		}
	})
}
