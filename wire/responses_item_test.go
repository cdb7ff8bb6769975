package wire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// TestDecodeResponsesItem: each kind of Responses item, as a client sends
// it and as Codex records it in a rollout, decodes to its blocks.
func TestDecodeResponsesItem(t *testing.T) {
	text := func(src conv.Source, s string) conv.Block { return conv.NewText(src, s) }
	const png = "iVBORw0KGgo="
	image := func(src conv.Source, source string) conv.Block {
		return conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(source), Meta: conv.DefaultMeta(conv.TypeImage, src)}
	}
	result := func(id, text string, isErr bool) conv.Block { return conv.NewToolResult(id, "", text, isErr) }
	const web = `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go"}}`
	const refusal = `{"type":"refusal","refusal":"no"}`
	tests := []struct {
		name, item string
		typ, role  string
		want       []conv.Block
		err        error
	}{
		{"user text parts", `{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"},{"type":"input_text","text":"<environment_context>x</environment_context>"}]}`,
			"message", "user", []conv.Block{text(conv.SourceUser, "fix it"), text(conv.SourceUser, "<environment_context>x</environment_context>")}, nil},
		{"string content", `{"type":"message","role":"user","content":"hi"}`, "message", "user", []conv.Block{text(conv.SourceUser, "hi")}, nil},
		{"short form without type", `{"role":"user","content":"hi"}`, "", "user", []conv.Block{text(conv.SourceUser, "hi")}, nil},
		{"a summary stays text", `{"role":"user","content":"<summary>\nold\n</summary>"}`, "", "user", []conv.Block{text(conv.SourceUser, "<summary>\nold\n</summary>")}, nil},
		{"assistant", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`,
			"message", "assistant", []conv.Block{text(conv.SourceAssistant, "done")}, nil},
		{"developer", `{"type":"message","role":"developer","content":[{"type":"input_text","text":"be brief"}]}`,
			"message", "developer", []conv.Block{text(conv.SourceSystem, "be brief")}, nil},
		{"system", `{"type":"message","role":"system","content":"rules"}`, "message", "system", []conv.Block{text(conv.SourceSystem, "rules")}, nil},
		{"images: data URL, URL, {url}", `{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + png + `"},{"type":"input_image","image_url":"https://x/a.png"},{"type":"input_image","image_url":{"url":"https://x/b.png"}}]}`,
			"message", "user", []conv.Block{
				image(conv.SourceUser, `{"type":"base64","media_type":"image/png","data":"`+png+`"}`),
				image(conv.SourceUser, `{"type":"url","url":"https://x/a.png"}`),
				image(conv.SourceUser, `{"type":"url","url":"https://x/b.png"}`)}, nil},
		{"an uploaded file's image is opaque", `{"type":"message","role":"user","content":[{"type":"input_image","file_id":"file-1","detail":"auto"}]}`,
			"message", "user", []conv.Block{conv.NewOpaque(conv.ProviderResponses, json.RawMessage(`{"type":"input_image","file_id":"file-1","detail":"auto"}`), conv.SourceUser)}, nil},
		{"an image data URL that is not base64", `{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png,x"}]}`, "message", "user", nil, ErrInvalid},
		{"a part of another type is opaque", `{"type":"message","role":"assistant","content":[` + refusal + `]}`,
			"message", "assistant", []conv.Block{conv.NewOpaque(conv.ProviderResponses, json.RawMessage(refusal), conv.SourceAssistant)}, nil},
		{"reasoning with summary and encrypted content", `{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":" then act"}],"encrypted_content":"gAAA"}`,
			"reasoning", "", []conv.Block{conv.NewThinking("**Plan** then act", "gAAA")}, nil},
		{"reasoning, encrypted only", `{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}`,
			"reasoning", "", []conv.Block{redactedThinking("gAAA")}, nil},
		{"reasoning, neither: a stored reference", `{"type":"reasoning","id":"rs_1","summary":[]}`, "reasoning", "",
			[]conv.Block{conv.NewServerToolUse(conv.ProviderResponses, "rs_1", "reasoning", json.RawMessage("{}"), json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[]}`))}, nil},
		{"compaction", `{"type":"compaction","encrypted_content":"blob"}`, "compaction", "", []conv.Block{redactedThinking("blob")}, nil},
		{"function_call", `{"type":"function_call","name":"shell","arguments":"{\"cmd\": [\"ls\"]}","call_id":"c1"}`,
			"function_call", "", []conv.Block{conv.NewToolUse("c1", "shell", json.RawMessage(`{"cmd":["ls"]}`))}, nil},
		{"function_call, arguments not an object", `{"type":"function_call","name":"shell","arguments":"ls","call_id":"c1"}`,
			"function_call", "", []conv.Block{conv.NewToolUse("c1", "shell", json.RawMessage(`{"_raw_arguments":"ls"}`))}, nil},
		{"function_call_output", `{"type":"function_call_output","call_id":"c1","output":"a.go"}`,
			"function_call_output", "", []conv.Block{result("c1", "a.go", false)}, nil},
		{"output as parts", `{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"a"},{"type":"input_text","text":""},{"type":"input_image","image_url":"https://x/a.png"},{"type":"input_text","text":"b"}]}`,
			"function_call_output", "", []conv.Block{result("c1", "a\nb", false)}, nil},
		{"output {content, success}", `{"type":"function_call_output","call_id":"c1","output":{"content":"boom","success":false}}`,
			"function_call_output", "", []conv.Block{result("c1", "boom", true)}, nil},
		{"the error marker is text here", `{"type":"function_call_output","call_id":"c1","output":"[tool error]\nboom"}`,
			"function_call_output", "", []conv.Block{result("c1", "[tool error]\nboom", false)}, nil},
		{"custom_tool_call", `{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n","call_id":"c2"}`,
			"custom_tool_call", "", []conv.Block{conv.NewToolUse("c2", "apply_patch", json.RawMessage(`{"input":"*** Begin Patch\n"}`))}, nil},
		{"custom_tool_call_output", `{"type":"custom_tool_call_output","call_id":"c2","output":"Success"}`,
			"custom_tool_call_output", "", []conv.Block{result("c2", "Success", false)}, nil},
		{"local_shell_call", `{"type":"local_shell_call","id":"ls_1","status":"completed","action":{"type":"exec","command":["ls"]}}`,
			"local_shell_call", "", []conv.Block{conv.NewToolUse("ls_1", "local_shell", json.RawMessage(`{"type":"exec","command":["ls"]}`))}, nil},
		{"local_shell_call_output", `{"type":"local_shell_call_output","call_id":"ls_1","output":"a.go"}`,
			"local_shell_call_output", "", []conv.Block{result("ls_1", "a.go", false)}, nil},
		{"web_search_call", web, "web_search_call", "",
			[]conv.Block{conv.NewServerToolUse(conv.ProviderResponses, "ws_1", "web_search", json.RawMessage(`{"type":"search","query":"go"}`), json.RawMessage(web))}, nil},
		{"web_search_call without action", `{"type":"web_search_call","id":"ws_2"}`, "web_search_call", "",
			[]conv.Block{conv.NewServerToolUse(conv.ProviderResponses, "ws_2", "web_search", json.RawMessage(`{}`), json.RawMessage(`{"type":"web_search_call","id":"ws_2"}`))}, nil},
		{"unknown item type", `{"type":"ghost_snapshot","ghost_commit":{}}`, "ghost_snapshot", "", nil, ErrUnknownType},
		{"content neither text nor parts", `{"type":"message","role":"user","content":5}`, "message", "user", nil, ErrInvalid},
		{"output neither text nor parts", `{"type":"function_call_output","call_id":"c1","output":5}`, "function_call_output", "", nil, ErrInvalid},
		{"not an object", `[1]`, "", "", nil, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := DecodeResponsesItem(json.RawMessage(tt.item))
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if it.Type != tt.typ || it.Role != tt.role {
				t.Errorf("type %q role %q, want %q %q", it.Type, it.Role, tt.typ, tt.role)
			}
			if err != nil {
				return
			}
			got, _ := json.Marshal(it.Blocks)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("blocks\n got %s\nwant %s", got, want)
			}
		})
	}
}
