package serve

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// chatBody is a chat completions request after n tool rounds.
func chatBody(name string, n, size int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"model":"gpt-5.1","prompt_cache_key":%q,"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}}],"messages":[`, name)
	b.WriteString(`{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix the tests"}`)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("call_%s_%d", name, i)
		fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"shell","arguments":%s}}]}`,
			id, q(fmt.Sprintf(`{"command":"go test ./p%d"}`, i)))
		out := strings.Repeat(fmt.Sprintf("line of output %d\n", i), size/18)
		fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":%q,"content":%s}`, id, q(out))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func TestChatCompletionsClears(t *testing.T) {
	// A session long enough for the engine to clear consumed results, and
	// large enough to come near the window: there it clears whatever the
	// rewrite costs, and what that saves then covers the stakes of the
	// clearings the cache-aware rule asks for after it (the engine's
	// account). Everything but a cleared result goes upstream as sent.
	up := llmtest.NewServer(t, llmtest.Config{Window: 60_000})
	p := newProxy(t, up.URL, Config{Window: 60_000})
	cleared := 0
	for n := 1; n <= 120; n++ {
		body := chatBody("chat", n, 2000)
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: %d %s", n, resp.StatusCode, data)
		}
		last := up.Last()
		if last.Header.Get("Authorization") != "Bearer sk-test" {
			t.Fatal("authorization not forwarded")
		}
		if last.Prompt > 60_000 {
			t.Fatalf("turn %d: %d tokens upstream", n, last.Prompt)
		}
		c, _ := parseChat(body)
		u, err := parseChat(last.Body)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Messages) != len(u.Messages) {
			// Summarized: the messages left are the tail, some cleared.
			for _, um := range u.Messages {
				if um.Role == "tool" && strings.HasPrefix(str(last.Body, um.Content), "[cleared: shell \"go test") {
					cleared++
				}
			}
			continue
		}
		for i := range c.Messages {
			cm, um := c.Messages[i], u.Messages[i]
			if bytes.Equal(body[cm.Span.s:cm.Span.e], last.Body[um.Span.s:um.Span.e]) {
				continue
			}
			if cm.Role != "tool" || !strings.HasPrefix(str(last.Body, um.Content), "[cleared: shell \"go test") {
				t.Fatalf("turn %d: message %d changed: %s", n, i, last.Body[um.Span.s:um.Span.e])
			}
			cleared++
		}
	}
	if cleared == 0 {
		t.Fatal("nothing was cleared")
	}
}

func TestResponsesStateIsUntouched(t *testing.T) {
	echo, bodies := echoUpstream(t, `{"object":"response","output":[],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":2}}`)
	p := newProxy(t, echo.URL, Config{Window: 4_000})
	big := strings.Repeat("output line\n", 600)
	var items []string
	items = append(items, `{"role":"user","content":"go"}`)
	for i := range 6 {
		items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"shell","arguments":"{\"command\":\"ls %d\"}"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(big)))
	}
	full := []byte(`{"model":"gpt-5.1","input":[` + strings.Join(items, ",") + `]}`)
	tests := []struct {
		name      string
		body      []byte
		untouched bool
	}{
		{"previous_response_id", []byte(`{"model":"gpt-5.1","previous_response_id":"resp_1","input":[` + strings.Join(items, ",") + `]}`), true},
		{"compaction_trigger", []byte(`{"model":"gpt-5.1","input":[` + strings.Join(items, ",") + `,{"type":"compaction_trigger"}]}`), true},
		{"full input", full, false},
	}
	for i, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/responses", bytes.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := bodies()
		sent := got[i]
		for _, b := range got[i:] {
			if bytes.Contains(b, []byte(`"input":[`)) {
				sent = b // not the proxy's own summary request
			}
		}
		same := bytes.Equal(sent, tt.body)
		if same != tt.untouched {
			t.Errorf("%s: forwarded unchanged = %v, want %v", tt.name, same, tt.untouched)
		}
		if !tt.untouched && !recallMark.Match(sent) {
			t.Errorf("%s: no placeholder, summary or cut in %.300s", tt.name, sent)
		}
	}
	if m := metricsText(t, p); !strings.Contains(m, `ctxkit_serve_requests_total{endpoint="responses",outcome="passthrough",provider="openai"} 2`) {
		t.Errorf("passthrough not counted:\n%s", grep(m, "requests_total"))
	}
}

// Codex's requests: encrypted reasoning before each call, a compaction
// item, client item ids, a developer message. The request is rewritten
// like any other, and every opaque item goes upstream byte for byte,
// each still directly before the item it came with.
func TestResponsesOpaqueItems(t *testing.T) {
	echo, bodies := echoUpstream(t, `{"object":"response","output":[],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":2}}`)
	p := newProxy(t, echo.URL, Config{Window: 4_000})
	big := strings.Repeat("output line\n", 600)
	items := []string{
		`{"type":"message","id":"msg_dev","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","id":"msg_u1","role":"user","content":[{"type":"input_text","text":"go"}]}`,
		`{"type":"compaction","encrypted_content":"gAAAA-compaction-blob"}`,
	}
	var opaque []string
	for i := range 6 {
		rs := fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"think %d"}],"encrypted_content":"gAAAA-%d-%s"}`, i, i, i, strings.Repeat("x", 40))
		fc := fmt.Sprintf(`{"type":"function_call","id":"fc_%d","call_id":"c%d","name":"exec_command","arguments":"{\"cmd\":\"ls %d\"}"}`, i, i, i)
		opaque = append(opaque, rs+","+fc)
		items = append(items, rs, fc, fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(big)))
	}
	body := []byte(`{"model":"gpt-5.1-codex","stream":true,"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"sess-1","client_metadata":{"turn_id":"t1"},"input":[` + strings.Join(items, ",") + `]}`)
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/responses", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	all := bodies()
	got := all[len(all)-1] // after the summary requests, if any
	if bytes.Equal(got, body) {
		t.Fatal("the request went upstream unchanged")
	}
	if !bytes.Contains(got, []byte(`recall `)) {
		t.Errorf("no placeholder, summary or cut (with its recall id) in %.300s", got)
	}
	for _, keep := range []string{items[0], `"prompt_cache_key":"sess-1"`, `"client_metadata":{"turn_id":"t1"}`, `{"type":"compaction","encrypted_content":"gAAAA-compaction-blob"}`} {
		if !bytes.Contains(got, []byte(keep)) {
			t.Errorf("%s did not survive", keep)
		}
	}
	u, err := parseResponses(got)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]bool{}
	for i, m := range u.Messages {
		raw := string(got[m.Span.s:m.Span.e])
		if strings.Contains(raw, `"type":"reasoning"`) {
			// A reasoning item goes byte for byte, with the call it came with.
			if i+1 >= len(u.Messages) || !slices.Contains(opaque, raw+","+string(got[u.Messages[i+1].Span.s:u.Messages[i+1].Span.e])) {
				t.Errorf("reasoning item %s is not followed by its call", raw)
			}
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case "tool_use":
				calls[b.ToolUseID] = true
			case "tool_result":
				if !calls[b.ToolUseID] {
					t.Errorf("output %s without its call", b.ToolUseID)
				}
				delete(calls, b.ToolUseID)
			}
		}
	}
	if len(calls) > 0 {
		t.Errorf("calls without their output: %v", calls)
	}
}
