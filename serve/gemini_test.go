package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// geminiHistory is a Gemini CLI-shaped conversation: n steps of a signed
// read_file call and its large response, then a user's words.
func geminiHistory(n int) (body []byte, signed []string) {
	big := strings.Repeat("func helper() int { return 42 } // a line of the file\n", 120)
	contents := []string{`{"role":"user","parts":[{"text":"<session_context>setup</session_context>"},{"text":"Read the files."}]}`}
	for i := range n {
		call := fmt.Sprintf(`{"name":"read_file","args":{"file_path":"/repo/f%02d.go"}}`, i)
		sig := llmtest.ThoughtSignature([]byte(fmt.Sprintf("read_file\x00{\"file_path\":\"/repo/f%02d.go\"}", i)))
		part := fmt.Sprintf(`{"functionCall":%s,"thoughtSignature":%q}`, call, sig)
		signed = append(signed, part)
		contents = append(contents,
			fmt.Sprintf(`{"role":"model","parts":[{"text":"Step %d.","thought":true},%s]}`, i, part),
			fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":%s}}}]}`, q(big)))
	}
	body = []byte(`{"contents":[` + strings.Join(contents, ",") + `],"systemInstruction":{"role":"user","parts":[{"text":"You are Gemini CLI."}]},` +
		`"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object"}}]}],` +
		`"generationConfig":{"temperature":1,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}}`)
	return body, signed
}

func TestParseGemini(t *testing.T) {
	body, _ := geminiHistory(2)
	r, err := parseGemini(body, "gemini-2.5-pro")
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gemini-2.5-pro" || len(r.Messages) != 5 || !r.System.ok() || len(r.Tools) != 1 || r.Tools[0] != "read_file" {
		t.Fatalf("parsed %+v", r)
	}
	want := []struct {
		role  string
		types []string
	}{
		{"user", []string{"text", "text"}},
		{"assistant", []string{"thinking", "tool_use"}},
		{"user", []string{"tool_result"}},
		{"assistant", []string{"thinking", "tool_use"}},
		{"user", []string{"tool_result"}},
	}
	for i, w := range want {
		m := r.Messages[i]
		var types []string
		for _, b := range m.Blocks {
			types = append(types, b.Type)
		}
		if m.Role != w.role || strings.Join(types, ",") != strings.Join(w.types, ",") {
			t.Errorf("content %d: %s %v, want %s %v", i, m.Role, types, w.role, w.types)
		}
	}
	call, res := r.Messages[1].Blocks[1], r.Messages[2].Blocks[0]
	if !call.Sealed || call.Name != "read_file" || call.ToolUseID == "" || res.ToolUseID != call.ToolUseID || res.Name != "read_file" ||
		!strings.HasPrefix(string(body[res.Content.s:res.Content.e]), `"func helper`) {
		t.Errorf("call %+v, result %+v", call, res)
	}
	if _, err := parseGemini([]byte(`{"cachedContent":"cachedContents/abc","contents":[]}`), "m"); err != errUntouched {
		t.Errorf("cachedContent: %v, want errUntouched", err)
	}
}

// A Gemini request over the window goes upstream rewritten and valid: the
// stand-in (which refuses an altered or missing thought signature and an
// unanswered call) answers 200, and every signed part is there byte for
// byte.
func TestGeminiThroughProxy(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 12_000, APIKey: "gk"})
	var logs bytes.Buffer
	p := newProxy(t, up.URL, Config{Window: 12_000, GeminiUpstream: up.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	body, signed := geminiHistory(8)
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", bytes.NewReader(body))
	req.Header.Set("X-Goog-Api-Key", "gk")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"usageMetadata"`)) {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	var main *llmtest.Call
	for _, c := range up.Calls() {
		if strings.Contains(c.Header.Get("Content-Type"), "json") && c.API == llmtest.Gemini && len(c.Tools) > 0 {
			main = c
		}
	}
	if main == nil || bytes.Equal(main.Body, body) || main.Prompt > 12_000 {
		t.Fatalf("the request was not rewritten under the window: %+v", main)
	}
	n := 0
	for _, s := range signed {
		if bytes.Contains(main.Body, []byte(s)) {
			n++
		}
	}
	var x struct {
		Contents []json.RawMessage `json:"contents"`
	}
	json.Unmarshal(main.Body, &x)
	if n == 0 || n != strings.Count(string(main.Body), `"thoughtSignature"`) {
		t.Errorf("%d signed parts went upstream byte for byte, of %d signatures", n, strings.Count(string(main.Body), `"thoughtSignature"`))
	}
	if strings.Contains(logs.String(), "gk") {
		t.Errorf("the key reached the log:\n%s", logs.String())
	}
	if m := metricsText(t, p); !strings.Contains(m, `ctxkit_serve_requests_total{endpoint="gemini",outcome="applied",provider="gemini"} 1`) {
		t.Errorf("not applied:\n%s", grep(m, "requests_total"))
	}
	t.Logf("%d contents upstream (of %d), prompt %d, %d signed parts kept", len(x.Contents), 17, main.Prompt, n)

	// countTokens goes to the Gemini upstream as it came.
	req, _ = http.NewRequest(http.MethodPost, p.URL+"/v1beta/models/gemini-2.5-pro:countTokens", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	req.Header.Set("X-Goog-Api-Key", "gk")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"totalTokens"`)) {
		t.Errorf("countTokens: %d %s", resp.StatusCode, out)
	}
}

// TestTenantsOnEveryRoute: the Gemini and Responses routes give each
// credential (x-goog-api-key, a Bearer token) its own tenant, as the
// Messages route does: the same history under two keys is two
// conversations, each stored only in its own tenant.
func TestTenantsOnEveryRoute(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 12_000})
	p := newProxy(t, up.URL, Config{Window: 12_000, GeminiUpstream: up.URL})
	gemini, _ := geminiHistory(8)
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"shell","arguments":%s}`, i, q(fmt.Sprintf(`{"command":"cat f%d.go"}`, i))),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(strings.Repeat(fmt.Sprintf("out %d\n", i), 900))))
	}
	responses := []byte(`{"model":"gpt-5.1","max_output_tokens":2048,"prompt_cache_key":"same","input":[{"role":"user","content":[{"type":"input_text","text":"go"}]},` + strings.Join(items, ",") + `]}`)
	routes := []struct {
		path, header, prefix string
		body                 []byte
	}{
		{"/v1beta/models/gemini-2.5-pro:generateContent", "X-Goog-Api-Key", "", gemini},
		{"/v1/responses", "Authorization", "Bearer ", responses},
	}
	for _, rt := range routes {
		for _, key := range []string{"key-alice", "key-bob"} {
			req, _ := http.NewRequest(http.MethodPost, p.URL+rt.path, bytes.NewReader(rt.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(rt.header, rt.prefix+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s as %s: %d %s", rt.path, key, resp.StatusCode, data)
			}
			if bytes.Equal(up.Last().Body, rt.body) {
				t.Fatalf("%s: the request went upstream unchanged: the test tests nothing", rt.path)
			}
		}
	}
	for _, key := range []string{"key-alice", "key-bob"} {
		ss, err := scoped(t, p.store, key).Sessions(context.Background(), 10)
		if err != nil || len(ss) != 2 {
			t.Errorf("%s's tenant holds %d sessions (%v), want its own 2 (one a route)", key, len(ss), err)
		}
	}
	if n := p.srv.mirrors.len(); n != 4 {
		t.Errorf("%d mirrors, want 4: one per tenant and conversation", n)
	}
}

// TestGeminiSummaryReusesClientPrefix: a Gemini request's summary goes on
// the client's own request (its systemInstruction, tools and contents, the
// instruction appended as a text part of the last user turn) to the
// client's model with the client's key, as a generateContent call.
func TestGeminiSummaryReusesClientPrefix(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000, APIKey: "gk"})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000, GeminiUpstream: up.URL})
	// Model text, which only a summary can shrink, makes the proxy compact.
	say := strings.Repeat("Reasoning about the failing test. ", 90)
	var sum *llmtest.Call
	contents := []string{`{"role":"user","parts":[{"text":"Fix the tests."}]}`}
	for n := 1; n <= 40 && sum == nil; n++ {
		args := fmt.Sprintf(`{"command":"go test ./pkg%02d"}`, n)
		contents = append(contents,
			fmt.Sprintf(`{"role":"model","parts":[{"text":%s},{"functionCall":{"name":"run","args":%s},"thoughtSignature":%q}]}`, q(say), args, llmtest.CallSignature("run", []byte(args))),
			fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"name":"run","response":{"output":"ok pkg%02d"}}}]}`, n))
		body := `{"contents":[` + strings.Join(contents, ",") + `],"systemInstruction":{"role":"user","parts":[{"text":"You are Gemini CLI."}]},` +
			`"tools":[{"functionDeclarations":[{"name":"run","parametersJsonSchema":{"type":"object"}}]}]}`
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", strings.NewReader(body))
		req.Header.Set("X-Goog-Api-Key", "gk")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: %d", n, resp.StatusCode)
		}
		for _, c := range up.Calls() {
			if isSummaryCall(c) && sum == nil {
				sum = c
			}
		}
	}
	if sum == nil {
		t.Fatal("the proxy never summarized")
	}
	if sum.Status != http.StatusOK {
		t.Fatalf("the summary request was refused: %s", sum.Error)
	}
	if sum.System != "You are Gemini CLI." || len(sum.Tools) != 1 || sum.Model != "gemini-2.5-pro" || sum.Stream {
		t.Fatalf("the summary went as a transcript or elsewhere: system %.80q, tools %v, model %q, stream %v", sum.System, sum.Tools, sum.Model, sum.Stream)
	}
	last := sum.Messages[len(sum.Messages)-1]
	if b := last.Blocks[len(last.Blocks)-1]; last.Role != "user" || !strings.HasPrefix(b.Text, SummaryPrompt) {
		t.Fatalf("the instruction is not the last part of the last user turn: %+v", b)
	}
	if sum.Usage.CacheRead == 0 {
		t.Errorf("the summary request read nothing from the cache (usage %+v)", sum.Usage)
	}
}
