package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
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

// TestEncodeResponsesKeepsWhatItDoesNotRead writes a conversation holding
// server tool calls (a web search; a reference to stored reasoning) and a
// content part recorded from the Responses API, and another API's opaque
// block: the first ones go byte for byte, the
// third as a note; the validating Responses stand-in accepts the request,
// and the web_search_call decodes back to a server tool call.
func TestEncodeResponsesKeepsWhatItDoesNotRead(t *testing.T) {
	const web = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go 1.26"}}`
	const refusal = `{"type":"refusal","refusal":"none"}`
	const reasoning = `{"type":"reasoning","id":"rs_1","summary":[]}` // stored by the provider (store: true)
	schema := json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)
	req := &llm.Request{Model: "gpt-5-codex", MaxTokens: 1024,
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are Codex.")},
		Tools:  []conv.Tool{{Name: "shell", Description: "Run a command.", InputSchema: schema}},
		Messages: []conv.Message{
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "What is new in Go 1.26? Then run the tests."),
				conv.NewOpaque(conv.ProviderAnthropic, json.RawMessage(`{"type":"document","source":{}}`), conv.SourceUser)}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				conv.NewServerToolUse(conv.ProviderResponses, "rs_1", "reasoning", json.RawMessage(`{}`), json.RawMessage(reasoning)),
				conv.NewServerToolUse(conv.ProviderResponses, "ws_1", "web_search", json.RawMessage(`{"type":"search","query":"go 1.26"}`), json.RawMessage(web)),
				conv.NewText(conv.SourceAssistant, "new(expr)."),
				conv.NewOpaque(conv.ProviderResponses, json.RawMessage(refusal), conv.SourceAssistant),
				conv.NewToolUse("call_1", "shell", json.RawMessage(`{"command":"go test ./..."}`))}},
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("call_1", "shell", "ok", false), conv.NewText(conv.SourceUser, "Thanks.")}},
		}}
	body, err := EncodeResponses(req, ResponsesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{reasoning, web, refusal, `"text":"[document block from anthropic, not shown]"`} {
		if !strings.Contains(string(body), w) {
			t.Errorf("body lacks %s:\n%s", w, body)
		}
	}
	if strings.Contains(string(body), `"document"`) {
		t.Errorf("another API's opaque block went as its bytes")
	}
	srv := llmtest.NewServer(t, llmtest.Config{})
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if reply, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Errorf("the Responses stand-in refused the request: %d %s", resp.StatusCode, reply)
	}
	back, err := DecodeResponses(body)
	if err != nil {
		t.Fatal(err)
	}
	if b := back.Messages[1].Blocks[0]; b.Type != conv.TypeServerToolUse || string(b.Raw) != reasoning || b.ToolUseID != "rs_1" {
		t.Errorf("the stored reasoning's reference came back as %+v", b)
	}
	if b := back.Messages[1].Blocks[1]; b.Type != conv.TypeServerToolUse || string(b.Raw) != web || b.ToolUseID != "ws_1" {
		t.Errorf("the web_search_call came back as %+v", b)
	}
}
