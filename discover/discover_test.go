package discover

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	tests := []struct {
		name  string
		goos  string
		env   map[string]string
		files map[string]time.Time // relative to home ($ENV/ for an override)
		opts  Options
		want  []string // agent:path relative to home, newest first
	}{
		{name: "every agent at its default place (linux)", goos: "linux",
			files: map[string]time.Time{
				".claude/projects/-home-me-a/s1.jsonl":                                                               day(9),
				".claude/projects/-home-me-a/s1/subagents/agent-x.jsonl":                                             day(9),
				".claude/projects/-home-me-a/agent-old.jsonl":                                                        day(9),
				".config/claude/projects/-home-me-b/s2.jsonl":                                                        day(8),
				".codex/sessions/2026/03/07/rollout-2026-03-07T10-00-00-x.jsonl":                                     day(7),
				".codex/archived_sessions/rollout-2026-01-01T10-00-00-y.jsonl":                                       day(1),
				".codex/sessions/2026/03/07/notes.txt":                                                               day(7),
				".gemini/tmp/abc123/chats/session-2026-03-06T10-00-aaaa.jsonl":                                       day(6),
				".gemini/tmp/abc123/chats/sess-parent/child.jsonl":                                                   day(6),
				".gemini/tmp/abc123/checkpoint-x.json":                                                               day(6),
				".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1/api_conversation_history.json":       day(5),
				".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1/ui_messages.json":                    day(5),
				".config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline/tasks/2/api_conversation_history.json": day(4),
				".local/share/opencode/storage/session/prj/ses_1.json":                                               day(3),
			},
			want: []string{
				"claude-code:.claude/projects/-home-me-a/s1.jsonl",
				"claude-code:.config/claude/projects/-home-me-b/s2.jsonl",
				"codex:.codex/sessions/2026/03/07/rollout-2026-03-07T10-00-00-x.jsonl",
				"gemini-cli:.gemini/tmp/abc123/chats/session-2026-03-06T10-00-aaaa.jsonl",
				"cline:.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1/api_conversation_history.json",
				"roo-code:.config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline/tasks/2/api_conversation_history.json",
				"opencode:.local/share/opencode/storage/session/prj/ses_1.json",
				"codex:.codex/archived_sessions/rollout-2026-01-01T10-00-00-y.jsonl",
			}},
		{name: "overrides move the folders", goos: "linux",
			env: map[string]string{"CLAUDE_CONFIG_DIR": "cc", "CODEX_HOME": "cx"},
			files: map[string]time.Time{
				".claude/projects/-p/ignored.jsonl":                     day(9),
				"cc/projects/-p/s.jsonl":                                day(8),
				"cx/sessions/2026/03/07/rollout-2026-03-07-z.jsonl":     day(7),
				".codex/sessions/2026/03/07/rollout-2026-03-07-q.jsonl": day(7),
			},
			want: []string{"claude-code:cc/projects/-p/s.jsonl", "codex:cx/sessions/2026/03/07/rollout-2026-03-07-z.jsonl"}},
		{name: "VS Code storage on macOS", goos: "darwin",
			files: map[string]time.Time{
				"Library/Application Support/Code/User/globalStorage/kilocode.kilo-code/tasks/9/api_conversation_history.json": day(2),
			},
			want: []string{"kilo-code:Library/Application Support/Code/User/globalStorage/kilocode.kilo-code/tasks/9/api_conversation_history.json"}},
		{name: "agent and since filters", goos: "linux",
			files: map[string]time.Time{
				".claude/projects/-p/new.jsonl":      day(9),
				".claude/projects/-p/old.jsonl":      day(1),
				".gemini/tmp/h/chats/session-1.json": day(9),
			},
			opts: Options{Agents: []string{ClaudeCode}, Since: day(5)},
			want: []string{"claude-code:.claude/projects/-p/new.jsonl"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			for f, at := range tc.files {
				touch(t, filepath.Join(home, filepath.FromSlash(f)), at)
			}
			env := Env{Home: home, GOOS: tc.goos, Getenv: func(k string) string {
				if v, ok := tc.env[k]; ok {
					return filepath.Join(home, v)
				}
				return ""
			}}
			got, err := Find(context.Background(), env, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range got {
				rel, _ := filepath.Rel(home, f.Path)
				names = append(names, f.Agent+":"+filepath.ToSlash(rel))
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("found\n  %q\nwant\n  %q", names, tc.want)
			}
		})
	}
}
