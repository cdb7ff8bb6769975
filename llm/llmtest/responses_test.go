package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm"
)

func postPath(t *testing.T, srv *Server, path, body string, h map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func TestResponsesValidation(t *testing.T) {
	rs := `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"` + EncryptedContent("think") + `"}`
	altered := strings.Replace(rs, EncryptedContent("think"), EncryptedContent("think")+"x", 1)
	fc := `{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"}`
	out := `{"type":"function_call_output","call_id":"c1","output":"ok"}`
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}`
	body := func(items ...string) string {
		return `{"model":"gpt-test","store":false,"prompt_cache_key":"s","client_metadata":{"a":"b"},"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},{"type":"namespace","name":"ns","tools":[]},{"type":"web_search"}],"input":[` + strings.Join(items, ",") + `]}`
	}
	cases := []struct {
		name, body, want string
	}{
		{"valid", body(user, rs, fc, out, `{"type":"compaction","encrypted_content":"`+EncryptedContent("earlier")+`"}`), ""},
		{"call without output", body(user, rs, fc), "No tool output found for function call c1."},
		{"output without call", body(user, out), "No tool call found for function call output with call_id c1."},
		{"altered reasoning", body(user, altered, fc, out), "The encrypted content for item rs_1 could not be verified."},
		{"reasoning alone", body(user, rs, out), "Item 'rs_1' of type 'reasoning' was provided without its required following item."},
		{"unknown parameter", `{"model":"m","input":"hi","foo":1}`, "Unknown parameter: 'foo'."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(t, Config{})
			status, data := postPath(t, srv, "/v1/responses", tc.body, nil)
			srv.TakeRejected()
			checkRefused(t, status, data, tc.want)
		})
	}
}

func TestGeminiValidation(t *testing.T) {
	args := `{"file_path":"a.go"}`
	sig := ThoughtSignature([]byte("read_file\x00" + args))
	user := `{"role":"user","parts":[{"text":"go"}]}`
	call := `{"role":"model","parts":[{"functionCall":{"name":"read_file","args":` + args + `},"thoughtSignature":"` + sig + `"}]}`
	unsigned := `{"role":"model","parts":[{"functionCall":{"name":"read_file","args":` + args + `}}]}`
	altered := `{"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"file_path":"b.go"}},"thoughtSignature":"` + sig + `"}]}`
	resp := `{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"package a"}}}]}`
	body := func(cs ...string) string {
		return `{"contents":[` + strings.Join(cs, ",") + `],"tools":[{"functionDeclarations":[{"name":"read_file"}]}]}`
	}
	cases := []struct {
		name, body, want string
	}{
		{"valid", body(user, call, resp), ""},
		{"call without response", body(user, call, user), "Please ensure that function response turn comes immediately after a function call turn."},
		{"missing signature", body(user, unsigned, resp), "Function call is missing a thought_signature"},
		{"missing signature of an earlier turn", body(user, unsigned, resp, user), ""},
		{"altered signed part", body(user, altered, resp), "Unable to submit request because Thought signature is not valid."},
		{"two data fields", body(`{"role":"user","parts":[{"text":"a","inlineData":{}}]}`), "* GenerateContentRequest.contents[0].parts[0].data: required oneof field"},
		{"unknown field", `{"contents":[` + user + `],"foo":1}`, `Invalid JSON payload received. Unknown name "foo"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := NewServer(t, Config{APIKey: "k"})
			status, data := postPath(t, srv, "/v1beta/models/gemini-test:generateContent", tc.body, map[string]string{"X-Goog-Api-Key": "k"})
			srv.TakeRejected()
			checkRefused(t, status, data, tc.want)
		})
	}
	srv := NewServer(t, Config{APIKey: "k"})
	if status, _ := postPath(t, srv, "/v1beta/models/gemini-test:generateContent", body(user), map[string]string{"X-Goog-Api-Key": "wrong"}); status != http.StatusBadRequest {
		t.Errorf("a wrong key: %d, want 400", status)
	}
}

// checkRefused checks a stand-in's answer: 200 when want is empty, else a
// 400 whose error message starts with want.
func checkRefused(t *testing.T, status int, data []byte, want string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(data, &e)
	switch {
	case want == "" && status != http.StatusOK:
		t.Errorf("status %d: %s", status, data)
	case want != "" && (status != http.StatusBadRequest || !strings.HasPrefix(e.Error.Message, want)):
		t.Errorf("status %d %q, want 400 %q", status, e.Error.Message, want)
	}
}

// TestReportedUsage: a reply's Usage is what the Responses and Gemini
// stand-ins report (a replay's recorded usage: the output with its
// reasoning, which only the provider knows), not their count of the
// text they play.
func TestReportedUsage(t *testing.T) {
	ru := llm.Usage{Input: 900, CacheRead: 100, Output: 777}
	srv := NewServer(t, Config{APIKey: "k"})
	r := Text("ok")
	r.Usage = &ru
	srv.Enqueue(r, r)
	_, data := postPath(t, srv, "/v1/responses", `{"model":"gpt-test","input":"hi"}`, map[string]string{"Authorization": "Bearer k"})
	var resp struct {
		Usage struct {
			Input   int `json:"input_tokens"`
			Output  int `json:"output_tokens"`
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &resp); err != nil || resp.Usage.Input != 1000 || resp.Usage.Details.Cached != 100 || resp.Usage.Output != 777 {
		t.Errorf("Responses usage = %+v, %v; want 1000 in (100 cached), 777 out: %s", resp.Usage, err, data)
	}
	_, data = postPath(t, srv, "/v1beta/models/gemini-test:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, map[string]string{"X-Goog-Api-Key": "k"})
	var g struct {
		Usage struct {
			Prompt     int `json:"promptTokenCount"`
			Cached     int `json:"cachedContentTokenCount"`
			Candidates int `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := json.Unmarshal(data, &g); err != nil || g.Usage.Prompt != 1000 || g.Usage.Cached != 100 || g.Usage.Candidates != 777 {
		t.Errorf("Gemini usage = %+v, %v; want 1000 prompt (100 cached), 777 candidates: %s", g.Usage, err, data)
	}
}
