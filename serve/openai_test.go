package serve

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
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
	// A session long enough for the cache-aware rule to clear before any
	// compaction: the rent paid for sending consumed results covers the
	// rewrite (micro's doc).
	up := llmtest.NewServer(t, llmtest.Config{Window: 60_000})
	p := newProxy(t, up.URL, Config{Window: 60_000})
	cleared := 0
	for n := 1; n <= 120; n++ {
		body := chatBody("chat", n, 400)
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
				if um.Role == "tool" && strings.HasPrefix(str(last.Body, um.Content), "[cleared by ctxkit: shell \"go test") {
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
			if cm.Role != "tool" || !strings.HasPrefix(str(last.Body, um.Content), "[cleared by ctxkit: shell \"go test") {
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
		{"compaction item", []byte(`{"model":"gpt-5.1","input":[{"type":"compaction","encrypted_content":"abc"},` + strings.Join(items, ",") + `]}`), true},
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
		same := bytes.Equal(got[i], tt.body)
		if same != tt.untouched {
			t.Errorf("%s: forwarded unchanged = %v, want %v", tt.name, same, tt.untouched)
		}
		if !tt.untouched && !bytes.Contains(got[i], []byte(`by ctxkit`)) {
			t.Errorf("%s: no placeholder, marker or cut in %.300s", tt.name, got[i])
		}
	}
	if m := metricsText(t, p); !strings.Contains(m, `ctxkit_serve_requests_total{endpoint="responses",outcome="passthrough",provider="openai"} 3`) {
		t.Errorf("passthrough not counted:\n%s", grep(m, "requests_total"))
	}
}
