package wire

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"pgregory.net/rapid"
)

// TestSDKsAcceptBodies parses encoded bodies with the official SDKs' request
// types and marshals them back: every field we write is one the SDK knows,
// in the shape it expects, or it would be lost or rejected on the way.
func TestSDKsAcceptBodies(t *testing.T) {
	sdk := map[string]func() any{
		"anthropic": func() any { return new(anthropic.MessageNewParams) },
		"openai":    func() any { return new(openai.ChatCompletionNewParams) },
	}
	check := func(t interface{ Fatalf(string, ...any) }, name string, body []byte) {
		p := sdk[name]()
		if err := json.Unmarshal(body, p); err != nil {
			t.Fatalf("%s SDK rejects the body: %v\n%s", name, err, body)
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s SDK cannot marshal it: %v", name, err)
		}
		var want, got map[string]any
		_ = json.Unmarshal(body, &want)
		_ = json.Unmarshal(again, &got)
		sdkForms(want)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s SDK changed the body (-ours +sdk):\n%s", name, d)
		}
	}
	for name, req := range goldenRequests() {
		for _, c := range codecs {
			body, err := c.encode(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(name+"/"+c.name, func(t *testing.T) { check(t, c.name, body) })
		}
	}
	for _, c := range codecs {
		t.Run("random/"+c.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				body, err := c.encode(genRequest(rt, c.openai))
				if err != nil {
					rt.Fatalf("encode: %v", err)
				}
				check(rt, c.name, body)
			})
		})
	}
}

// sdkForms rewrites body into the equivalent forms the SDK types marshal:
// a tool result's string content as one text block, no empty model.
func sdkForms(body map[string]any) {
	if body["model"] == "" {
		delete(body, "model")
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			b, _ := b.(map[string]any)
			if s, ok := b["content"].(string); ok && b["type"] == "tool_result" {
				b["content"] = []any{map[string]any{"type": "text", "text": s}}
			}
		}
	}
}
