package serve

import (
	"bytes"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// TestOpaqueBlocksForwarded: blocks the proxy does not read (a document
// block, tool search's tool_reference in a tool result) are opaque blocks
// to the engine — counted, never rewritten as text — and go upstream as
// the client wrote them (issue 24 row 2).
func TestOpaqueBlocksForwarded(t *testing.T) {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"tools":[` +
		`{"name":"ToolSearch","input_schema":{"type":"object","properties":{}}},{"name":"ExitPlanMode","input_schema":{"type":"object","properties":{}}}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"Read the notes, find the plan tool."},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"a <b> & c"},"title":"notes"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"select:ExitPlanMode"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"ExitPlanMode"}]},{"type":"text","text":"Now exit plan mode."}]}]}`)

	req, err := parseAnthropic(body)
	if err != nil {
		t.Fatal(err)
	}
	c := &conv.Conversation{}
	var opaque []conv.Block
	for _, msg := range req.Messages {
		m := conv.Message{Role: roleOf(msg.Role)}
		for _, p := range partsOf(req.Body, msg) {
			b := convBlock(req.Body, msg, p, m.Role)
			if b.Type == conv.TypeOpaque {
				opaque = append(opaque, b)
			}
			m.Blocks = append(m.Blocks, b)
		}
		c.Append(m)
	}
	if len(opaque) != 1 || string(opaque[0].Raw) != `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"a <b> & c"},"title":"notes"}` ||
		opaque[0].Meta.Compactable {
		t.Errorf("opaque blocks %+v, want the document block, not compactable", opaque)
	}
	if vs := conv.Check(c); len(vs) > 0 {
		t.Errorf("invariants: %v", vs)
	}
	if r := c.Messages[2].Blocks[0]; r.Type != conv.TypeToolResult || r.Meta.Compactable {
		t.Errorf("the tool result holding a tool_reference is %s, compactable %v: want a result never cleared", r.Type, r.Meta.Compactable)
	}

	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{})
	if resp, data := p.post(t, "/v1/messages", "opaque-1", body); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	if got := up.Last().Body; !bytes.Equal(got, body) {
		t.Errorf("upstream got\n%s\nwant the client's bytes\n%s", got, body)
	}
}

// TestWebSearchCallIsServerToolUse: a Responses web_search_call item
// (Codex 0.117+) is a server tool call to the engine — the call the
// provider ran, needing no result — and its bytes are its Raw (issue 24
// row 3).
func TestWebSearchCallIsServerToolUse(t *testing.T) {
	const item = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go 1.26"}}`
	body := []byte(`{"model":"gpt-5-codex","store":false,"input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"What is new in Go 1.26?"}]},` + item + `,` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"new(expr)."}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks."}]}]}`)
	req, err := parseResponses(body)
	if err != nil {
		t.Fatal(err)
	}
	var calls []conv.Block
	for _, msg := range req.Messages {
		for _, p := range partsOf(req.Body, msg) {
			if b := convBlock(req.Body, msg, p, roleOf(msg.Role)); b.Type == conv.TypeServerToolUse {
				calls = append(calls, b)
			}
		}
	}
	if len(calls) != 1 || string(calls[0].Raw) != item || calls[0].Name != "web_search" || string(calls[0].Input) != `{"type":"search","query":"go 1.26"}` {
		t.Fatalf("server tool calls %+v, want the web_search_call", calls)
	}
}
