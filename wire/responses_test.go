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

// TestEncodeResponses writes a conversation as a stateless Responses
// request (the whole history as input items, as Codex sends it): calls
// and outputs as items, a server tool call and a content part recorded
// from the Responses API byte for byte, another API's opaque block as a
// note; the validating Responses stand-in accepts it.
func TestEncodeResponses(t *testing.T) {
	const web = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go 1.26"}}`
	schema := json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)
	req := &llm.Request{Model: "gpt-5-codex", MaxTokens: 1024,
		System: []conv.Block{conv.NewText(conv.SourceSystem, "You are Codex.")},
		Tools:  []conv.Tool{{Name: "shell", Description: "Run a command.", InputSchema: schema}},
		Messages: []conv.Message{
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "What is new in Go 1.26? Then run the tests."),
				conv.NewOpaque(conv.ProviderAnthropic, json.RawMessage(`{"type":"document","source":{}}`), conv.SourceUser)}},
			{Role: conv.RoleAssistant, Blocks: []conv.Block{
				conv.NewServerToolUse(conv.ProviderResponses, "ws_1", "web_search", json.RawMessage(`{"type":"search","query":"go 1.26"}`), json.RawMessage(web)),
				conv.NewText(conv.SourceAssistant, "new(expr)."),
				conv.NewOpaque(conv.ProviderResponses, json.RawMessage(`{"type":"refusal","refusal":"none"}`), conv.SourceAssistant),
				conv.NewToolUse("call_1", "shell", json.RawMessage(`{"command":"go test ./..."}`))}},
			{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult("call_1", "shell", "ok", false), conv.NewText(conv.SourceUser, "Thanks.")}},
		}}
	body, err := EncodeResponses(req)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"What is new in Go 1.26? Then run the tests."},{"type":"input_text","text":"[document block from anthropic, not shown]"}]},` +
		web + `,{"type":"message","role":"assistant","content":[{"type":"output_text","text":"new(expr)."},{"type":"refusal","refusal":"none"}]},` +
		`{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"command\":\"go test ./...\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"ok"},{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks."}]}],` +
		`"tools":[{"type":"function","name":"shell","description":"Run a command.","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}],"store":false,"max_output_tokens":1024}`
	if string(body) != want {
		t.Errorf("got\n%s\nwant\n%s", body, want)
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
	if strings.Contains(string(body), `"document"`) {
		t.Errorf("another API's opaque block went as its bytes")
	}
}
