package importer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// TestNewerRecords imports records newer agent versions write: each is
// kept as what it is, never a reason to drop its line (issue 24 rows 2,
// 3): a block type ctxkit does not know as an opaque block holding its
// bytes, a search the provider ran as a server tool call that needs no
// result.
func TestNewerRecords(t *testing.T) {
	const (
		ccUser = `{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"Plan, then exit plan mode."}}`
		ccCall = `{"type":"assistant","sessionId":"s","uuid":"a1","message":{"role":"assistant","id":"m1","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"select:ExitPlanMode"}}]}}`
		ccRef  = `{"type":"user","sessionId":"s","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"ExitPlanMode"}]}]}}`
		ccDone = `{"type":"assistant","sessionId":"s","uuid":"a2","message":{"role":"assistant","id":"m2","model":"claude-opus-4-6","content":[{"type":"text","text":"Done."}]}}`
		cxMeta = `{"timestamp":"2026-03-02T10:00:00.000Z","type":"session_meta","payload":{"id":"0199","timestamp":"2026-03-02T10:00:00.000Z","cwd":"/r","originator":"codex_cli_rs","cli_version":"0.118.0","instructions":"You are Codex."}}`
		cxUser = `{"timestamp":"2026-03-02T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"What is new in Go 1.26?"}]}}`
		cxWeb  = `{"timestamp":"2026-03-02T10:00:02.000Z","type":"response_item","payload":` + webCall + `}`
		cxAns  = `{"timestamp":"2026-03-02T10:00:03.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Go 1.26 adds new(expr)."},{"type":"refusal","refusal":"none"}]}}`
	)
	tests := []struct {
		name     string
		lines    []string
		format   string
		want     conv.Block // a block of this type, provider and bytes, at any depth
		role     conv.Role
		warns    string // in a warning ("" for none)
		notWarns string
	}{
		{name: "tool_reference in a tool result", lines: []string{ccUser, ccCall, ccRef, ccDone}, format: FormatClaudeCode, role: conv.RoleUser,
			want:  conv.Block{Type: conv.TypeOpaque, Provider: conv.ProviderAnthropic, Raw: []byte(`{"type":"tool_reference","tool_name":"ExitPlanMode"}`)},
			warns: "(tool_reference: 1) whole, as opaque blocks", notWarns: "damaged"},
		{name: "web_search_call", lines: []string{cxMeta, cxUser, cxWeb, cxAns}, format: FormatCodex, role: conv.RoleAssistant,
			want:     conv.Block{Type: conv.TypeServerToolUse, Provider: conv.ProviderResponses, Raw: []byte(webCall)},
			notWarns: "does not know (web"},
		{name: "unknown part of a Codex message", lines: []string{cxMeta, cxUser, cxWeb, cxAns}, format: FormatCodex, role: conv.RoleAssistant,
			want:  conv.Block{Type: conv.TypeOpaque, Provider: conv.ProviderResponses, Raw: []byte(`{"type":"refusal","refusal":"none"}`)},
			warns: "(refusal: 1) whole"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, "s.jsonl", []byte(strings.Join(tt.lines, "\n")+"\n"))
			s, err := Load(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Format != tt.format {
				t.Errorf("format %s, want %s", s.Format, tt.format)
			}
			if n := countKept(s.Conv, tt.role, tt.want); n != 1 {
				t.Errorf("%d %s blocks of %s in %s messages hold %s, want 1", n, tt.want.Type, tt.want.Provider, tt.role, tt.want.Raw)
			}
			warnings := strings.Join(s.Warnings, "\n")
			if tt.warns != "" && !strings.Contains(warnings, tt.warns) {
				t.Errorf("warnings %q, want %q", warnings, tt.warns)
			}
			if tt.notWarns != "" && strings.Contains(warnings, tt.notWarns) {
				t.Errorf("warnings %q, want none about %q", warnings, tt.notWarns)
			}
			if vs := conv.Check(s.Conv); len(vs) > 0 {
				t.Errorf("invariants: %v", vs)
			}
		})
	}
}

const webCall = `{"type":"web_search_call","id":"ws_0a1b","status":"completed","action":{"type":"search","query":"Go 1.26 release notes"}}`

// countKept counts the blocks of c, tool results' content included, in
// messages of role, of want's type and provider holding want's bytes.
func countKept(c *conv.Conversation, role conv.Role, want conv.Block) int {
	n := 0
	var walk func(bs []conv.Block)
	walk = func(bs []conv.Block) {
		for _, b := range bs {
			if b.Type == want.Type && b.Provider == want.Provider && bytes.Equal(b.Raw, want.Raw) {
				n++
			}
			walk(b.Content)
		}
	}
	for _, m := range c.Messages {
		if m.Role == role {
			walk(m.Blocks)
		}
	}
	return n
}

// TestWebSearchCallInCorpusRollout inserts a web_search_call item (Codex
// 0.117+) into a recorded Codex rollout, after a user message: the import
// keeps every message, holds the call as a server tool call of the
// response that follows, and the invariants hold with no result for it.
func TestWebSearchCallInCorpusRollout(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpus.Require(t), "codex", "*.jsonl"))
	if len(files) == 0 {
		t.Skip("no Codex rollout in the corpus")
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, `"type":"response_item","payload":{"type":"message","role":"user"`) && !strings.Contains(l, `"text":"<`) {
			at = i + 1
			break
		}
	}
	if at < 0 {
		t.Skip("no typed user message in " + files[0])
	}
	item := `{"timestamp":"2026-03-02T10:00:02.000Z","type":"response_item","payload":` + webCall + `}`
	with := append(append(append([]string{}, lines[:at]...), item), lines[at:]...)
	ctx := context.Background()
	before, err := Load(ctx, write(t, "before.jsonl", data), Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := Load(ctx, write(t, "after.jsonl", []byte(strings.Join(with, "\n")+"\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := countKept(after.Conv, conv.RoleAssistant, conv.Block{Type: conv.TypeServerToolUse, Provider: conv.ProviderResponses, Raw: []byte(webCall)}); n != 1 {
		t.Errorf("%d server tool calls hold the item, want 1", n)
	}
	if a, b := len(after.Conv.Messages), len(before.Conv.Messages); a != b && a != b+1 {
		t.Errorf("%d messages with the item, %d without", a, b)
	}
	if strings.Join(after.Warnings, "\n") != strings.Join(before.Warnings, "\n") {
		t.Errorf("warnings with the item %q, without %q", after.Warnings, before.Warnings)
	}
	if vs := conv.Check(after.Conv); len(vs) > 0 {
		t.Errorf("invariants: %v", vs)
	}
}

// TestWebSearchCallToResponses: a rollout holding a web_search_call,
// imported and written as a Responses request, carries the item byte for
// byte between the question and the answer (issue 24 row 3; that the
// Responses stand-in accepts such a request: wire.TestEncodeResponses).
func TestWebSearchCallToResponses(t *testing.T) {
	lines := []string{
		`{"timestamp":"2026-03-02T10:00:00.000Z","type":"session_meta","payload":{"id":"0199","timestamp":"2026-03-02T10:00:00.000Z","cwd":"/r","originator":"codex_cli_rs","cli_version":"0.118.0","instructions":"You are Codex."}}`,
		`{"timestamp":"2026-03-02T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"What is new in Go 1.26?"}]}}`,
		`{"timestamp":"2026-03-02T10:00:02.000Z","type":"response_item","payload":` + webCall + `}`,
		`{"timestamp":"2026-03-02T10:00:03.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Go 1.26 adds new(expr)."}]}}`,
		`{"timestamp":"2026-03-02T10:00:04.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks."}]}}`,
	}
	s, err := Load(context.Background(), write(t, "r.jsonl", []byte(strings.Join(lines, "\n")+"\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := wire.EncodeResponses(&llm.Request{Model: "gpt-5-codex", MaxTokens: 1024, System: s.Conv.System, Tools: s.Conv.Tools, Messages: s.Conv.Messages}, wire.ResponsesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"message","role":"user","content":[{"type":"input_text","text":"What is new in Go 1.26?"}]},` + webCall +
		`,{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Go 1.26 adds new(expr)."}]}`
	if !strings.Contains(string(body), want) {
		t.Errorf("the Responses input lacks\n%s\nin\n%s", want, body)
	}
}
