package importer

import (
	"context"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// TestNewerRecords imports records newer agent versions write: each is
// kept as what it is, never a reason to drop its line (issue 24 rows 2, 3).
func TestNewerRecords(t *testing.T) {
	const (
		ccUser = `{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"Plan, then exit plan mode."}}`
		ccCall = `{"type":"assistant","sessionId":"s","uuid":"a1","message":{"role":"assistant","id":"m1","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"select:ExitPlanMode"}}]}}`
		ccRef  = `{"type":"user","sessionId":"s","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"ExitPlanMode"}]}]}}`
		ccDone = `{"type":"assistant","sessionId":"s","uuid":"a2","message":{"role":"assistant","id":"m2","model":"claude-opus-4-6","content":[{"type":"text","text":"Done."}]}}`
		cxMeta = `{"timestamp":"2026-03-02T10:00:00.000Z","type":"session_meta","payload":{"id":"0199","timestamp":"2026-03-02T10:00:00.000Z","cwd":"/r","originator":"codex_cli_rs","cli_version":"0.118.0","instructions":"You are Codex."}}`
		cxUser = `{"timestamp":"2026-03-02T10:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"What is new in Go 1.26?"}]}}`
		cxWeb  = `{"timestamp":"2026-03-02T10:00:02.000Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":{"type":"search","query":"Go 1.26 release notes"}}}`
		cxAns  = `{"timestamp":"2026-03-02T10:00:03.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Go 1.26 adds new(expr)."}]}}`
	)
	tests := []struct {
		name     string
		lines    []string
		format   string
		role     conv.Role
		holds    string // in some block of a message of this role
		warns    string // in a warning ("" for none)
		notWarns string
	}{
		{name: "tool_reference in a tool result", lines: []string{ccUser, ccCall, ccRef, ccDone}, format: FormatClaudeCode, role: conv.RoleUser,
			holds: `{"type":"tool_reference","tool_name":"ExitPlanMode"}`, warns: "(tool_reference: 1) as text", notWarns: "damaged"},
		{name: "web_search_call", lines: []string{cxMeta, cxUser, cxWeb, cxAns}, format: FormatCodex, role: conv.RoleAssistant,
			holds: `web search run by the provider: {"type":"search","query":"Go 1.26 release notes"}`, notWarns: "does not know"},
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
			found := false
			for _, m := range s.Conv.Messages {
				for _, b := range m.Blocks {
					if m.Role == tt.role && (strings.Contains(b.PlainText(), tt.holds) || strings.Contains(b.ResultText(), tt.holds)) {
						found = true
					}
					for _, p := range b.Content {
						found = found || m.Role == tt.role && strings.Contains(p.Text, tt.holds)
					}
				}
			}
			if !found {
				t.Errorf("no %s block holds %s", tt.role, tt.holds)
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
