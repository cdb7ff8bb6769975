package importer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/importer/importertest"
)

// TestOtherVersions feeds each importer a file of a version of its format
// it was not written against (record types or roles it does not know):
// it must fail or warn, never return a near-empty conversation quietly.
func TestOtherVersions(t *testing.T) {
	tests := []struct {
		name, file, data string
		format           string // forced when set
		db               bool   // data describes an opencode database
		err              error  // the error wanted, or nil for a warning
		warn             string
	}{
		{name: "claude-code: conversation in a record type of a later version",
			file: "s.jsonl", format: FormatClaudeCode,
			data: `{"type":"user","sessionId":"s","uuid":"u1","message":{"role":"user","content":"hi"}}
{"type":"turn","sessionId":"s","uuid":"u2","turn":{"assistant":"hello"}}
{"type":"turn","sessionId":"s","uuid":"u3","turn":{"assistant":"again"}}
`,
			warn: "skipped 2 record(s) of 3 of types this importer does not know (turn: 2)"},
		{name: "claude-code: nothing but unknown records",
			file: "s.jsonl",
			data: `{"type":"turn","sessionId":"s","uuid":"u2","turn":{"user":"hi"}}
`,
			err: ErrNoMessages, warn: "turn: 1"},
		{name: "codex: response items of a later version",
			file: "rollout.jsonl",
			data: `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"agent_turn","text":"hello"}}
`,
			warn: "(response_item agent_turn: 1)"},
		{name: "codex: a rollout of a later version with no known item",
			file: "rollout.jsonl",
			data: `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"conversation_item","payload":{"role":"user","text":"hi"}}
`,
			err: ErrNoMessages, warn: "conversation_item: 1"},
		{name: "mini-swe-agent: roles of a later version",
			file: "run.traj.json",
			data: `{"trajectory_format":"mini-swe-agent-2","info":{"mini_version":"3.0.0"},"messages":[
{"role":"system","content":"sys"},{"role":"user","content":"task"},
{"role":"agent","content":"thinking"},{"role":"observation","content":"out"}]}`,
			warn: "skipped 2 record(s) of 4 of types this importer does not know (message role agent: 1, message role observation: 1)"},
		{name: "mini-swe-agent: a later layout without messages",
			file: "run.traj.json",
			data: `{"trajectory_format":"mini-swe-agent-2","info":{"mini_version":"3.0.0"},"steps":[{"role":"user","content":"task"}]}`,
			err:  ErrUnknownFormat},
		{name: "gemini-cli: message types of a later version",
			file: "session-x.jsonl",
			data: `{"sessionId":"s","projectHash":"p","startTime":"2026-01-01T00:00:00Z"}
{"id":"1","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"hi"}]}
{"id":"2","timestamp":"2026-01-01T00:00:02Z","type":"model_turn","content":"hello"}
`,
			warn: "(message type model_turn: 1)"},
		{name: "gemini-cli: a later layout",
			file: "session-x.json",
			data: `{"sessionId":"s","projectHash":"p","messages":[{"id":"1","kind":"user","parts":[{"text":"hi"}]}]}`,
			err:  ErrNoMessages, warn: "message type : 1"},
		{name: "cline: roles and blocks of a later version",
			file: "api_conversation_history.json",
			data: `[{"role":"user","content":[{"type":"text","text":"<task>hi</task>"}],"ts":1},{"role":"assistant","content":[{"type":"hosted_tool","name":"web"}],"ts":2},{"role":"system","content":"x","ts":3}]`,
			warn: "content block hosted_tool: 1, message role system: 1"},
		{name: "opencode: parts of a later version",
			file: "opencode.db", db: true,
			data: `{"sessions":[{"id":"ses_1","project_id":"p","directory":"/w","title":"t","version":"9.0.0","time_created":1,"time_updated":2,"messages":[
{"id":"msg_1","time_created":1,"data":{"role":"user","time":{"created":1}},"parts":[{"id":"prt_1","data":{"type":"text","text":"hi"}}]},
{"id":"msg_2","time_created":2,"data":{"role":"assistant","time":{"created":2}},"parts":[{"id":"prt_2","data":{"type":"hosted-call","name":"web"}}]}]}]}`,
			warn: "(part hosted-call: 1)"},
		{name: "swe-agent: roles of a later version",
			file: "run.traj",
			data: `{"trajectory":[],"history":[{"role":"system","content":"s"},{"role":"user","content":"task"},{"role":"agent","content":"x"}]}`,
			warn: "history role agent: 1"},
		{name: "openhands: events of a later version",
			file: "out.jsonl",
			data: `{"instance_id":"i","history":[{"id":0,"source":"user","action":"message","args":{"content":"task"}},{"id":1,"source":"agent","kind":"MessageEvent"}]}`,
			warn: "history event with neither action nor observation: 1"},
		{name: "openhands-resolver: entries of a later version",
			file: "out.jsonl", format: FormatOpenHandsResolver,
			data: `{"issue":{},"history":[{"action":"message","content":"task"},{"kind":"step"}]}`,
			warn: "history entry with neither action nor observation: 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, tc.file, []byte(tc.data))
			if tc.db {
				path = filepath.Join(t.TempDir(), tc.file)
				if err := importertest.WriteOpencodeDB(path, []byte(tc.data)); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Load(context.Background(), path, Options{Format: tc.format})
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.warn) {
					t.Fatalf("err = %v, want %v saying %q", err, tc.err, tc.warn)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(s.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings = %q, want one saying %q", s.Warnings, tc.warn)
			}
		})
	}
}
