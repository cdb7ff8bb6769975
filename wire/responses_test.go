package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// agentRequest is a request with what an agent's history holds: system,
// a function tool and a freeform one, text, encrypted reasoning, calls of
// both and their outputs, an error.
func agentRequest() *llm.Request {
	return &llm.Request{
		Model:  "m",
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are an agent.")},
		Tools: []conv.Tool{
			{Name: "shell", Description: "run", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "apply_patch", Description: "patch", InputSchema: customSchema},
		},
		Messages: []conv.Message{
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "fix it")}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				conv.NewThinking("looking", "sig1"),
				conv.NewText(conv.SourceAssistant, "I will look."),
				conv.NewToolUse("c1", "shell", json.RawMessage(`{"cmd":"ls"}`)),
				conv.NewToolUse("c2", "apply_patch", json.RawMessage(`{"input":"*** Begin Patch"}`)),
			}},
			{Role: conv.RoleUser, Blocks: []conv.Block{
				conv.NewToolResult("c1", "shell", "a.go", false),
				conv.NewToolResult("c2", "apply_patch", "bad patch", true),
				conv.NewText(conv.SourceUser, "go on"),
			}},
		},
	}
}

// TestResponsesAndGemini encodes the agent request in both formats and
// decodes it back to the same conversation.
func TestResponsesAndGemini(t *testing.T) {
	for _, c := range []struct {
		name   string
		encode func(*llm.Request) ([]byte, error)
		decode func([]byte) (*llm.Request, error)
		want   []string
	}{
		{"responses", func(r *llm.Request) ([]byte, error) { return EncodeResponses(r, ResponsesOptions{Developer: true}) }, DecodeResponses,
			[]string{`"role":"developer"`, `"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch"`, `"type":"custom_tool_call_output"`, `"encrypted_content":"sig1"`, `{"type":"custom","name":"apply_patch"`}},
		{"gemini", EncodeGemini, DecodeGemini,
			[]string{`"functionCall":{"id":"c1","name":"shell","args":{"cmd":"ls"}}`, `"response":{"error":"bad patch"}`, `"thought":true,"thoughtSignature":"sig1"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := agentRequest()
			body, err := c.encode(req)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("body lacks %s:\n%s", w, body)
				}
			}
			back, err := c.decode(body)
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Messages) != len(req.Messages) {
				t.Fatalf("%d messages back, sent %d", len(back.Messages), len(req.Messages))
			}
			for i := range req.Messages {
				got, want := back.Messages[i].Blocks, req.Messages[i].Blocks
				if len(got) != len(want) {
					t.Fatalf("message %d: %d blocks back, sent %d", i, len(got), len(want))
				}
				for j := range want {
					if got[j].Type != want[j].Type || got[j].PlainText() != want[j].PlainText() || got[j].IsError != want[j].IsError || got[j].ToolUseID != want[j].ToolUseID {
						t.Errorf("message %d block %d: got %+v, sent %+v", i, j, got[j], want[j])
					}
				}
			}
			if len(back.System) != 1 || back.System[0].Text != "You are an agent." || len(back.Tools) != 2 {
				t.Errorf("system %v, tools %v", back.System, back.Tools)
			}
		})
	}
}
