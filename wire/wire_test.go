package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func withCC(b conv.Block) conv.Block {
	b.CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
	return b
}

func img(src conv.Source, source string) conv.Block {
	return conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(source), Meta: conv.DefaultMeta(conv.TypeImage, src)}
}

const pngSource = `{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`

// goldenRequests are hand-built requests covering every block kind; their
// encodings are kept in testdata/<name>.<codec>.json.
func goldenRequests() map[string]*llm.Request {
	listResult := conv.NewToolResult("toolu_02", "Read", "", false)
	listResult.Content = []conv.Block{conv.NewText(conv.SourceTool, "1\tpackage main\n2\t"), img(conv.SourceTool, pngSource)}
	return map[string]*llm.Request{
		"minimal": {
			Model: "claude-sonnet-4-5", MaxTokens: 1024,
			Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hello")}}},
		},
		"full": {
			Model: "claude-sonnet-4-5", MaxTokens: 8192,
			System: []conv.Block{
				conv.NewText(conv.SourceSystem, "You are a coding agent."),
				withCC(conv.NewText(conv.SourceSystem, "Project rules: run go vet & gofmt <always>.")),
			},
			Tools: []conv.Tool{
				{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
				{Name: "Read", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`), CacheControl: json.RawMessage(`{"type":"ephemeral"}`)},
			},
			Messages: []conv.Message{
				{Role: conv.RoleUser, Blocks: []conv.Block{
					conv.NewSummary("## Done so far\n- fixed the parser", conv.Span{First: 1, Last: 4}),
					img(conv.SourceUser, `{"type":"url","url":"https://example.com/screen.png"}`),
					conv.NewText(conv.SourceUser, "the test in main_test.go fails; fix it"),
				}},
				{Role: conv.RoleAssistant, Blocks: []conv.Block{
					conv.NewThinking("Run the tests first, then read the file.", "EqQBCkgIARABGAIiQL"),
					conv.NewText(conv.SourceAssistant, "Let me look."),
					conv.NewToolUse("toolu_01", "Bash", json.RawMessage(`{"command":"go test ./... 2>&1 | head","timeout":120000}`)),
					withCC(conv.NewToolUse("toolu_02", "Read", json.RawMessage(`{"file_path":"main.go"}`))),
				}},
				{Role: conv.RoleUser, Blocks: []conv.Block{
					conv.NewToolResult("toolu_01", "Bash", "--- FAIL: TestX\nexit status 1", true),
					listResult,
					conv.NewText(conv.SourceReminder, "<system-reminder>\nThe todo list is empty.\n</system-reminder>"),
					withCC(conv.NewText(conv.SourceUser, "keep going")),
				}},
				{Role: conv.RoleAssistant, Blocks: []conv.Block{
					{Type: conv.TypeRedactedThinking, Data: "EmwKAhgBEgy3va3pzix", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)},
					conv.NewText(conv.SourceAssistant, "Fixed: the loop bound was off by one."),
					conv.NewToolUse("toolu_03", "Bash", Arguments("not json")),
				}},
				{Role: conv.RoleUser, Blocks: []conv.Block{
					conv.NewToolResult("toolu_03", "Bash", "", false),
				}},
			},
		},
	}
}

func TestGolden(t *testing.T) {
	for name, req := range goldenRequests() {
		for _, c := range codecs {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				data, err := c.encode(req)
				if err != nil {
					t.Fatal(err)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, data, "", "  "); err != nil {
					t.Fatalf("encoding is not valid JSON: %v\n%s", err, data)
				}
				pretty.WriteByte('\n')
				path := filepath.Join("testdata", name+"."+c.name+".json")
				if *update {
					if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if d := cmp.Diff(string(want), pretty.String()); d != "" {
					t.Errorf("encoding differs from %s (-want +got):\n%s", path, d)
				}
				// The golden file itself decodes to the request (Anthropic)
				// or to a request that encodes to the same bytes (OpenAI).
				back, err := c.decode(want)
				if err != nil {
					t.Fatal(err)
				}
				if !c.openai {
					if d := cmp.Diff(req, back); d != "" {
						t.Errorf("decoding %s (-want +got):\n%s", path, d)
					}
				}
				again, err := c.encode(back)
				if err != nil || !bytes.Equal(again, data) {
					t.Errorf("re-encoding the decoded golden file differs: %v\n%s\n%s", err, again, data)
				}
			})
		}
	}
}

// TestDecodeForms covers inputs in the shapes providers accept but the
// encoders never write.
func TestDecodeForms(t *testing.T) {
	user := func(bs ...conv.Block) conv.Message { return conv.Message{Role: conv.RoleUser, Blocks: bs} }
	asst := func(bs ...conv.Block) conv.Message { return conv.Message{Role: conv.RoleAssistant, Blocks: bs} }
	sys := func(s string) conv.Block { return conv.NewText(conv.SourceSystem, s) }
	tests := []struct {
		name   string
		decode func([]byte) (*llm.Request, error)
		in     string
		want   *llm.Request
	}{
		{
			name:   "anthropic string system and content",
			decode: DecodeAnthropic,
			in:     `{"model":"m","max_tokens":10,"system":"be brief","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`,
			want:   &llm.Request{Model: "m", MaxTokens: 10, System: []conv.Block{sys("be brief")}, Messages: []conv.Message{user(conv.NewText(conv.SourceUser, "hi"))}},
		},
		{
			name:   "anthropic input compacted, key order kept, null cache_control",
			decode: DecodeAnthropic,
			in: `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{ "z": 1,
			 "a": "x" },"cache_control":null}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`,
			want: &llm.Request{Messages: []conv.Message{
				user(conv.NewText(conv.SourceUser, "go")),
				asst(conv.NewToolUse("t1", "Bash", json.RawMessage(`{"z":1,"a":"x"}`))),
				user(conv.NewToolResult("t1", "Bash", "", false)),
			}},
		},
		{
			name:   "anthropic summary-looking text inside a tool result stays text",
			decode: DecodeAnthropic,
			in:     `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"<summary turns=\"1-2\">\nx\n</summary>"}]}]}]}`,
			want: &llm.Request{Messages: []conv.Message{
				asst(conv.NewToolUse("t", "Read", json.RawMessage(`{}`))),
				user(func() conv.Block {
					r := conv.NewToolResult("t", "Read", "", false)
					r.Content = []conv.Block{conv.NewText(conv.SourceTool, "<summary turns=\"1-2\">\nx\n</summary>")}
					return r
				}()),
			}},
		},
		{
			name:   "openai tool messages and the user message after them merge",
			decode: DecodeOpenAI,
			in: `{"model":"gpt","max_tokens":77,"messages":[{"role":"developer","content":"rules"},{"role":"user","content":"list"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":""}},{"id":"c2","type":"function","function":{"name":"cat","arguments":"{\"f\": \"a\"}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"a\nb"},{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"[tool error]"},{"type":"text","text":"no such file"}]},
			{"role":"user","content":[{"type":"text","text":"why?"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]},
			{"role":"system","content":"mid-conversation note"},{"role":"user","content":"and?"}]}`,
			want: &llm.Request{Model: "gpt", MaxTokens: 77, System: []conv.Block{sys("rules")}, Messages: []conv.Message{
				user(conv.NewText(conv.SourceUser, "list")),
				asst(conv.NewToolUse("c1", "ls", json.RawMessage(`{}`)), conv.NewToolUse("c2", "cat", json.RawMessage(`{"f":"a"}`))),
				user(
					conv.NewToolResult("c1", "ls", "a\nb", false),
					func() conv.Block {
						r := conv.NewToolResult("c2", "cat", "", true)
						r.Content = []conv.Block{conv.NewText(conv.SourceTool, "no such file")}
						return r
					}(),
					conv.NewText(conv.SourceUser, "why?"),
					img(conv.SourceUser, `{"type":"base64","media_type":"image/jpeg","data":"/9j/"}`),
				),
				user(conv.NewText(conv.SourceSystem, "mid-conversation note"), conv.NewText(conv.SourceUser, "and?")),
			}},
		},
		{
			name:   "openai thinking marker and raw arguments",
			decode: DecodeOpenAI,
			in:     `{"messages":[{"role":"assistant","content":[{"type":"text","text":"<thinking>hmm</thinking>"},{"type":"refusal","refusal":"no"}],"tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`,
			want: &llm.Request{Messages: []conv.Message{asst(
				conv.NewThinking("hmm", ""),
				conv.NewText(conv.SourceAssistant, "no"),
				conv.NewToolUse("x", "f", json.RawMessage(`{"_raw_arguments":"{oops"}`)),
			)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.decode([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestRawArgumentsWrittenBack(t *testing.T) {
	req := &llm.Request{Messages: []conv.Message{{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("x", "f", Arguments("{oops"))}}}}
	data, err := EncodeOpenAI(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"arguments":"{oops"`; !strings.Contains(string(data), want) {
		t.Errorf("got %s, want it to contain %s", data, want)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		decode func([]byte) (*llm.Request, error)
		in     string
		is     error
		says   string
	}{
		{"anthropic not json", DecodeAnthropic, `{"messages":[`, ErrInvalid, "ends too early"},
		{"anthropic block without type", DecodeAnthropic, `{"messages":[{"role":"user","content":[{"source":{}}]}]}`, ErrInvalid, `messages[0]: content: [0]: wire: invalid request: a content block without a type`},
		{"anthropic tool_use in result", DecodeAnthropic, `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_use"}]}]}]}`, ErrUnknownType, `"tool_use" block inside tool_result t`},
		{"anthropic role", DecodeAnthropic, `{"messages":[{"role":"tool","content":"x"}]}`, ErrUnknownType, `role "tool"`},
		{"anthropic server tool", DecodeAnthropic, `{"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[]}`, ErrUnknownType, `tool type "web_search_20250305"`},
		{"anthropic input not object", DecodeAnthropic, `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":"str"}]}]}`, ErrInvalid, "not a JSON object"},
		{"anthropic content number", DecodeAnthropic, `{"messages":[{"role":"user","content":5}]}`, ErrInvalid, "neither a string nor a list of blocks"},
		{"openai content number", DecodeOpenAI, `{"messages":[{"role":"user","content":5}]}`, ErrInvalid, "neither a string nor a list of parts"},
		{"openai not json", DecodeOpenAI, `nope`, ErrInvalid, "unexpected character"},
		{"openai unknown part", DecodeOpenAI, `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, ErrUnknownType, `part type "input_audio"`},
		{"openai unknown role", DecodeOpenAI, `{"messages":[{"role":"function","content":"x"}]}`, ErrUnknownType, `role "function"`},
		{"openai tool type", DecodeOpenAI, `{"tools":[{"type":"custom","function":{"name":"x"}}],"messages":[]}`, ErrUnknownType, `tool type "custom"`},
		{"openai data URL not base64", DecodeOpenAI, `{"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, ErrInvalid, `messages[0]: content[1]: wire: invalid request: an image data URL that is not base64 ("data:image/png")`},
		{"openai data URL without data", DecodeOpenAI, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,"}}]}]}`, ErrInvalid, "content[0]: wire: invalid request: a base64 image (image/png) without data"},
		{"openai image without URL", DecodeOpenAI, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, ErrInvalid, "an image without a URL"},
		{"responses data URL not base64", DecodeResponses, `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png,abc"}]}]}`, ErrInvalid, "input[0]: content[0]: wire: invalid request: an image data URL that is not base64"},
		{"gemini inline data without data", DecodeGemini, `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png"}}]}]}`, ErrInvalid, "contents[0].parts[0]: wire: invalid request: a base64 image (image/png) without data"},
		{"anthropic image without media type", DecodeAnthropic, `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"AA=="}}]}]}`, ErrInvalid, "a base64 image without a media type"},
		{"anthropic image without source", DecodeAnthropic, `{"messages":[{"role":"user","content":[{"type":"image"}]}]}`, ErrInvalid, "an image without a source"},
		{"anthropic image source not an object", DecodeAnthropic, `{"messages":[{"role":"user","content":[{"type":"image","source":"x"}]}]}`, ErrInvalid, "image source:"},
		{"anthropic image URL source without url", DecodeAnthropic, `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url"}}]}]}`, ErrInvalid, "an image without a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.decode([]byte(tt.in))
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err = %q, want it to say %q", err, tt.says)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	bad := conv.Block{Type: "document", Meta: conv.DefaultMeta(conv.TypeText, conv.SourceUser)}
	req := &llm.Request{Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{bad}}}}
	for _, c := range codecs {
		if _, err := c.encode(req); !errors.Is(err, ErrUnknownType) || !strings.Contains(err.Error(), `"document"`) {
			t.Errorf("%s: err = %v, want ErrUnknownType naming the type", c.name, err)
		}
	}
}

// TestOpenAILossyMappings pins what chat completions cannot carry.
func TestOpenAILossyMappings(t *testing.T) {
	result := conv.NewToolResult("t", "Read", "", false)
	result.Content = []conv.Block{conv.NewText(conv.SourceTool, "see image"), img(conv.SourceTool, pngSource)}
	req := &llm.Request{Messages: []conv.Message{
		{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "look")}},
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewThinking("secret", "SIG"),
			{Type: conv.TypeRedactedThinking, Data: "opaque", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)},
			conv.NewToolUse("t", "Read", json.RawMessage(`{}`)),
		}},
		{Role: conv.RoleUser, Blocks: []conv.Block{result, withCC(conv.NewText(conv.SourceUser, "well?"))}},
	}}
	data, err := EncodeOpenAI(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"","messages":[{"role":"user","content":"look"},{"role":"assistant","content":"<thinking>secret</thinking>","tool_calls":[{"id":"t","type":"function","function":{"name":"Read","arguments":"{}"}}]},{"role":"tool","content":[{"type":"text","text":"see image"}],"tool_call_id":"t"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"text","text":"well?"}]}]}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	back, err := DecodeOpenAI(data)
	if err != nil {
		t.Fatal(err)
	}
	last := back.Messages[2].Blocks
	if len(last) != 3 || last[0].Type != conv.TypeToolResult || last[1].Type != conv.TypeImage || last[2].Text != "well?" {
		t.Errorf("decoded user message = %+v, want result, moved image, text", last)
	}
	if th := back.Messages[1].Blocks[0]; th.Type != conv.TypeThinking || th.Text != "secret" || th.Signature != "" {
		t.Errorf("thinking decoded as %+v", th)
	}
}
