package wire

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestOpaqueBlocks: block types this release does not know (tool search's
// tool_reference inside a tool result, a server tool call and its result,
// a newer type in user content) decode as opaque blocks and server tool
// calls, pass the invariant checker, are counted as their bytes, and
// encode back to the Messages API byte for byte; chat completions gets a
// one-line note for each (issue 24 row 2).
func TestOpaqueBlocks(t *testing.T) {
	const body = `{"model":"claude-opus-4-6","max_tokens":1024,"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"Find the plan tool, then search."},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"a <b> & c"},"title":"notes"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"select:ExitPlanMode"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"ExitPlanMode"}]}]},` +
		`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go 1.26"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev/doc/go1.26","title":"Go 1.26","encrypted_content":"EqgfCioIARgBIiQ3"}]},{"type":"text","text":"Go 1.26 is out."}]},` +
		`{"role":"user","content":[{"type":"text","text":"Thanks."}]}]}`
	req, err := DecodeAnthropic([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c := &conv.Conversation{Messages: req.Messages}
	for i := range c.Messages {
		c.Stamp(c.Messages[i].Blocks)
	}
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("invariants: %v", vs)
	}
	kinds := map[conv.Type]int{}
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			kinds[b.Type]++
			for _, p := range b.Content {
				kinds[p.Type]++
			}
		}
	}
	if kinds[conv.TypeOpaque] != 3 || kinds[conv.TypeServerToolUse] != 1 {
		t.Errorf("kinds %v, want 3 opaque blocks and 1 server tool call", kinds)
	}
	result := &c.Messages[2].Blocks[0]
	if result.Meta.Compactable || !result.Meta.Pinned {
		t.Errorf("a tool result holding a tool_reference is compactable or not pinned: %+v", result.Meta)
	}
	if got := result.ResultText(); !strings.Contains(got, "tool_reference") {
		t.Errorf("result text %q does not name the tool_reference", got)
	}
	doc := &c.Messages[0].Blocks[1]
	counter := tokens.NewEstimator()
	if n, min := conv.BlockTokens(doc, counter), counter.Count(string(doc.Raw)); n < min {
		t.Errorf("opaque block counted %d tokens, its bytes are %d", n, min)
	}

	out, err := EncodeAnthropic(req)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != body {
		t.Errorf("re-encoded:\n%s\nwant:\n%s", out, body)
	}

	chat, err := EncodeOpenAI(&llm.Request{Model: "gpt-5", Messages: req.Messages})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[document block from anthropic, not shown]", "[tool_reference block from anthropic, not shown]",
		`[web_search run by the provider: {\"query\":\"go 1.26\"}]`, "[web_search_tool_result block from anthropic, not shown]"} {
		if !strings.Contains(string(chat), want) {
			t.Errorf("chat completions body lacks %s:\n%s", want, chat)
		}
	}
}
