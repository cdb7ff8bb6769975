package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends body to the server's endpoint for api, with a valid key and
// version header unless noVersion, and returns the status and body.
func post(t *testing.T, srv *Server, api API, body string, noVersion bool) (int, []byte) {
	t.Helper()
	path := "/v1/messages"
	if api == OpenAI {
		path = "/v1/chat/completions"
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if !noVersion {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

const tools = `"tools":[{"name":"Read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"Grep","input_schema":{"type":"object"}}]`

func anthBody(messages string, extra ...string) string {
	parts := append([]string{`"model":"claude-test"`, `"max_tokens":100`, tools, `"messages":` + messages}, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}

const (
	userHi   = `{"role":"user","content":"hi"}`
	callRead = `{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go"}}]}`
	result1  = `{"type":"tool_result","tool_use_id":"toolu_1","content":"package a"}`
)

func TestAnthropicValidation(t *testing.T) {
	sig := Signature("I should read the file.")
	cc := `"cache_control":{"type":"ephemeral"}`
	cases := []struct {
		name string
		body string
		want string // the error message; "" means the request is valid
	}{
		{"plain", anthBody(`[` + userHi + `]`), ""},
		{"tool round", anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":[` + result1 + `,{"type":"text","text":"go on"}]}]`), ""},
		{"list result with image", anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGVsbG8="}}]}]}]`), ""},
		{"empty result", anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":""}]}]`), ""},
		{"thinking", anthBody(`[` + userHi + `,{"role":"assistant","content":[{"type":"thinking","thinking":"I should read the file.","signature":"` + sig + `"},{"type":"text","text":"ok"}]},{"role":"user","content":"next"}]`), ""},
		{"four anchors", anthBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc+`},{"type":"text","text":"b",`+cc+`},{"type":"text","text":"c",`+cc+`}]}]`, `"system":[{"type":"text","text":"sys",`+cc+`}]`), ""},
		{"1h before 5m", anthBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc+`}]}]`, `"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral","ttl":"1h"}}]`), ""},
		{"prefill", anthBody(`[` + userHi + `,{"role":"assistant","content":"The answer is"}]`), ""},
		{"system message", anthBody(`[` + userHi + `,{"role":"system","content":[{"type":"text","text":"Tools changed."},{"type":"tool_addition","tool":{"type":"tool_reference","tool_name":"Grep"}}]},{"role":"assistant","content":"ok"},{"role":"user","content":"next"}]`), ""},
		{"system removal last", anthBody(`[` + userHi + `,{"role":"system","content":[{"type":"tool_removal","tool":{"type":"tool_reference","tool_name":"Grep"}}]}]`), ""},
		{"system between call and result", anthBody(`[` + userHi + `,` + callRead + `,{"role":"system","content":"x"},{"role":"user","content":[` + result1 + `]}]`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"system undeclared tool", anthBody(`[` + userHi + `,{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_reference","tool_name":"Nope"}}]},{"role":"assistant","content":"ok"}]`), "messages.1.content.0.tool: tool 'Nope' is not defined in tools"},
		{"system removal before user", anthBody(`[` + userHi + `,{"role":"assistant","content":"ok"},{"role":"system","content":[{"type":"tool_removal","tool":{"type":"tool_reference","tool_name":"Grep"}}]},` + userHi + `]`), "messages.2.content.0: a tool_removal must come immediately before an assistant message or last"},

		{"first assistant", anthBody(`[{"role":"assistant","content":"hi"},` + userHi + `]`), `messages: first message must use the "user" role`},
		{"two users", anthBody(`[` + userHi + `,` + userHi + `]`), `messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row`},
		{"empty content", anthBody(`[{"role":"user","content":[]}]`), "messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"empty text", anthBody(`[{"role":"user","content":[{"type":"text","text":""}]}]`), "messages: text content blocks must be non-empty"},
		{"blank text", anthBody(`[{"role":"user","content":[{"type":"text","text":" \n"}]}]`), "messages: text content blocks must contain non-whitespace text"},
		{"unknown type", anthBody(`[{"role":"user","content":[{"type":"summary","text":"s"}]}]`), "messages.0.content.0: Input tag 'summary' found using 'type' does not match any of the expected tags: " + expectedTags},
		{"missing result", anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":"what now"}]`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"unanswered at end", anthBody(`[` + userHi + `,` + callRead + `]`), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"result not first", anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":[{"type":"text","text":"first"},` + result1 + `]}]`), "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."},
		{"orphan result", anthBody(`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}]`), "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"double result", anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":[` + result1 + `,` + result1 + `]}]`), "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: toolu_1"},
		{"five anchors", anthBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc+`},{"type":"text","text":"b",`+cc+`},{"type":"text","text":"c",`+cc+`},{"type":"text","text":"d",`+cc+`}]}]`, `"system":[{"type":"text","text":"sys",`+cc+`}]`), "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"automatic plus four", anthBody(`[{"role":"user","content":[{"type":"text","text":"a",`+cc+`},{"type":"text","text":"b",`+cc+`},{"type":"text","text":"c",`+cc+`},{"type":"text","text":"d",`+cc+`}]}]`, cc), "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"5m before 1h", anthBody(`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]`, `"system":[{"type":"text","text":"sys",`+cc+`}]`), "A cache_control block with ttl='1h' must not come after a block with ttl='5m'. Note that blocks are processed in the following order: `tools`, `system`, `messages`."},
		{"bad tool name", "{" + `"model":"m","max_tokens":1,"tools":[{"name":"read file","input_schema":{"type":"object"}}],"messages":[` + userHi + `]}`, "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"},
		{"duplicate tools", "{" + `"model":"m","max_tokens":1,"tools":[{"name":"Read","input_schema":{"type":"object"}},{"name":"Read","input_schema":{"type":"object"}}],"messages":[` + userHi + `]}`, "tools: Tool names must be unique."},
		{"schema not object", "{" + `"model":"m","max_tokens":1,"tools":[{"name":"Read","input_schema":{"type":"string"}}],"messages":[` + userHi + `]}`, "tools.0.custom.input_schema.type: Input should be 'object'"},
		{"tools undefined", `{"model":"m","max_tokens":1,"messages":[` + userHi + `,` + callRead + `,{"role":"user","content":[` + result1 + `]}]}`, "Requests which include `tool_use` or `tool_result` blocks must define tools."},
		{"thinking edited", anthBody(`[` + userHi + `,{"role":"assistant","content":[{"type":"thinking","thinking":"I should read the file!","signature":"` + sig + `"},{"type":"text","text":"ok"}]},{"role":"user","content":"next"}]`), "messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"thinking anchored", anthBody(`[` + userHi + `,{"role":"assistant","content":[{"type":"thinking","thinking":"I should read the file.","signature":"` + sig + `",` + cc + `}]},{"role":"user","content":"next"}]`), "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted"},
		{"extra top-level", anthBody(`[`+userHi+`]`, `"stream_options":{"include_usage":true}`), "stream_options: Extra inputs are not permitted"},
		{"no max_tokens", `{"model":"m","messages":[` + userHi + `]}`, "max_tokens: Field required"},
		{"max_tokens too big", `{"model":"m","max_tokens":500000,"messages":[` + userHi + `]}`, "max_tokens: 500000 > 128000, which is the maximum allowed number of output tokens for m"},
		{"extra block field", anthBody(`[{"role":"user","content":[{"type":"text","text":"a","id":"b1"}]}]`), "messages.0.content.0.text.id: Extra inputs are not permitted"},
		{"input not object", anthBody(`[` + userHi + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":"a.go"}]},{"role":"user","content":[` + result1 + `]}]`), "messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"empty system", anthBody(`[`+userHi+`]`, `"system":[{"type":"text","text":""}]`), "system: text content blocks must be non-empty"},
		{"bad image", anthBody(`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"aGVsbG8="}}]}]`), "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
		{"trailing whitespace", anthBody(`[` + userHi + `,{"role":"assistant","content":"The answer is "}]`), "messages: final assistant content cannot end with trailing whitespace"},
		{"meta leaked", anthBody(`[{"role":"user","content":"hi","turn":1}]`), "messages.0.turn: Extra inputs are not permitted"},
	}
	srv := NewServer(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, data := post(t, srv, Anthropic, tc.body, false)
			rej := srv.TakeRejected()
			if tc.want == "" {
				if status != http.StatusOK || len(rej) != 0 {
					t.Fatalf("valid request refused: %d %s", status, data)
				}
				return
			}
			if status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400: %s", status, data)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type != "error" || e.Error.Type != "invalid_request_error" || e.RequestID == "" {
				t.Errorf("error body has the wrong shape: %s", data)
			}
			if e.Error.Message != tc.want {
				t.Errorf("message:\n got %s\nwant %s", e.Error.Message, tc.want)
			}
			if len(rej) != 1 || rej[0].Message != tc.want {
				t.Errorf("rejections recorded = %v", rej)
			}
		})
	}
	t.Run("no version header", func(t *testing.T) {
		status, data := post(t, srv, Anthropic, anthBody(`[`+userHi+`]`), true)
		if status != http.StatusBadRequest || !strings.Contains(string(data), "anthropic-version: header is required") {
			t.Errorf("got %d %s", status, data)
		}
		if len(srv.TakeRejected()) != 1 {
			t.Errorf("not recorded as a rejection")
		}
	})
}

func oaiBody(messages string, extra ...string) string {
	parts := append([]string{`"model":"gpt-test"`, `"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}]`, `"messages":` + messages}, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}

const (
	oUser = `{"role":"user","content":"hi"}`
	oCall = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{\"path\":\"a.go\"}"}}]}`
	oTool = `{"role":"tool","tool_call_id":"call_1","content":"package a"}`
)

func TestOpenAIValidation(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"plain", oaiBody(`[{"role":"system","content":"sys"},` + oUser + `]`), ""},
		{"tool round", oaiBody(`[` + oUser + `,` + oCall + `,` + oTool + `,{"role":"user","content":[{"type":"text","text":"go on"},{"type":"image_url","image_url":{"url":"data:image/png;base64,aGk="}}]}]`), ""},
		{"no alternation needed", oaiBody(`[` + oUser + `,` + oUser + `]`), ""},
		{"stream with usage", oaiBody(`[`+oUser+`]`, `"stream":true`, `"stream_options":{"include_usage":true}`, `"max_tokens":10`), ""},

		{"orphan tool", oaiBody(`[` + oUser + `,` + oTool + `]`), "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
		{"unanswered", oaiBody(`[` + oUser + `,` + oCall + `,` + oUser + `]`), "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1"},
		{"unanswered at end", oaiBody(`[` + oUser + `,` + oCall + `]`), "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1"},
		{"unknown argument", oaiBody(`[`+oUser+`]`, `"cache_control":{"type":"ephemeral"}`), "Unrecognized request argument supplied: cache_control"},
		{"anthropic part", oaiBody(`[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]`), "Additional properties are not allowed ('cache_control' was unexpected) - 'messages.0.content.0'"},
		{"bad tool name", `{"model":"m","tools":[{"type":"function","function":{"name":"read file"}}],"messages":[` + oUser + `]}`, "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."},
		{"empty assistant", oaiBody(`[` + oUser + `,{"role":"assistant","content":null},` + oUser + `]`), "Invalid value for 'content': expected a string, got null."},
		{"stream options alone", oaiBody(`[`+oUser+`]`, `"stream_options":{"include_usage":true}`), "The 'stream_options' parameter is only allowed when 'stream' is enabled."},
		{"unknown role", oaiBody(`[{"role":"human","content":"hi"}]`), "Invalid value: 'human'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."},
		{"object arguments", oaiBody(`[` + oUser + `,{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":{"path":"a.go"}}}]},` + oTool + `]`), "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead."},
		{"no messages", oaiBody(`[]`), "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."},
		{"image in system", oaiBody(`[{"role":"system","content":[{"type":"image_url","image_url":{"url":"x"}}]},` + oUser + `]`), "Invalid value: 'image_url'. Supported values are: 'text'."},
	}
	srv := NewServer(t, Config{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, data := post(t, srv, OpenAI, tc.body, false)
			rej := srv.TakeRejected()
			if tc.want == "" {
				if status != http.StatusOK || len(rej) != 0 {
					t.Fatalf("valid request refused: %d %s", status, data)
				}
				return
			}
			if status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400: %s", status, data)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Error.Type != "invalid_request_error" {
				t.Errorf("error body has the wrong shape: %s", data)
			}
			if e.Error.Message != tc.want {
				t.Errorf("message:\n got %s\nwant %s", e.Error.Message, tc.want)
			}
			if len(rej) != 1 {
				t.Errorf("rejections recorded = %v", rej)
			}
		})
	}
}

// fakeTB records what NewServer's cleanup reports.
type fakeTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Cleanup(fn func())                 { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) { f.errors = append(f.errors, format) }

func TestCleanupFailsOnRejection(t *testing.T) {
	for _, take := range []bool{false, true} {
		ft := &fakeTB{TB: t}
		srv := NewServer(ft, Config{})
		post(t, srv, Anthropic, anthBody(`[`+userHi+`,`+userHi+`]`), false)
		if take {
			srv.TakeRejected()
		}
		for _, fn := range ft.cleanups {
			fn()
		}
		if got := len(ft.errors) > 0; got == take {
			t.Errorf("take=%v: cleanup reported errors %v", take, ft.errors)
		}
	}
}
