package importer

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// stats counts what an imported conversation holds.
type stats struct {
	messages, rounds, calls, results, errors int
}

func count(c *conv.Conversation) stats {
	s := stats{messages: len(c.Messages), rounds: len(c.Rounds())}
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			switch b.Type {
			case conv.TypeToolUse:
				s.calls++
			case conv.TypeToolResult:
				s.results++
				if b.IsError {
					s.errors++
				}
			}
		}
	}
	return s
}

// mustLoad imports path and fails unless the result passes conv.Check and
// every block is well formed for its place.
func mustLoad(t *testing.T, path string, opts Options) *Session {
	t.Helper()
	s, err := Load(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSession(t, s)
	return s
}

func checkSession(t *testing.T, s *Session) {
	t.Helper()
	if vs := conv.Check(s.Conv); len(vs) > 0 {
		t.Fatalf("imported conversation breaks invariants: %v", vs)
	}
	calls := s.Conv.ToolUses()
	for i, m := range s.Conv.Messages {
		for _, b := range m.Blocks {
			if b.ID == "" {
				t.Errorf("message %d: %s block without an id", i, b.Type)
			}
			switch b.Type {
			case conv.TypeToolResult:
				if b.Meta.Source != conv.SourceTool {
					t.Errorf("message %d: result %s has source %s", i, b.ID, b.Meta.Source)
				}
				if call, ok := calls[b.ToolUseID]; ok && b.Name != call.Name {
					t.Errorf("message %d: result %s named %q, its call %q", i, b.ID, b.Name, call.Name)
				}
			case conv.TypeToolUse, conv.TypeThinking:
				if b.Meta.Source != conv.SourceAssistant {
					t.Errorf("message %d: %s %s has source %s", i, b.Type, b.ID, b.Meta.Source)
				}
			}
		}
	}
	names := map[string]bool{}
	for _, tool := range s.Conv.Tools {
		names[tool.Name] = true
	}
	for _, call := range calls {
		if !names[call.Name] {
			t.Errorf("tool %q is called but has no schema", call.Name)
		}
	}
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		file   string
		format string
		model  string
		want   stats
		fixes  int
		check  func(t *testing.T, c *conv.Conversation)
	}{
		{
			file: "claude-session.jsonl", format: FormatClaudeCode, model: "claude-opus-4-5-20251101",
			want: stats{messages: 10, rounds: 2, calls: 4, results: 4, errors: 1},
			check: func(t *testing.T, c *conv.Conversation) {
				// One response over three records is one message; the two
				// results logged one per record are one user message,
				// in call order.
				m := c.Messages[1]
				if len(m.Blocks) != 3 || m.Blocks[0].Type != conv.TypeThinking || m.Blocks[0].Signature == "" {
					t.Errorf("merged response = %+v", m.Blocks)
				}
				if r := c.Messages[2].Blocks; len(r) != 2 || r[0].ToolUseID != "toolu_A1" || r[1].ToolUseID != "toolu_A2" {
					t.Errorf("merged results = %+v", r)
				}
				for _, m := range c.Messages {
					for _, b := range m.Blocks {
						if strings.Contains(b.PlainText(), "sub-agent prompt") {
							t.Errorf("sidechain record imported: %q", b.PlainText())
						}
						if strings.Contains(b.PlainText(), "trackedFileBackups") || strings.Contains(b.PlainText(), "interrupted") {
							t.Errorf("non-conversation data imported: %q", b.PlainText())
						}
					}
				}
				// isMeta text is injected, not the user's: it does not open
				// a round.
				if b := c.Messages[4].Blocks[1]; b.Meta.Source != conv.SourceReminder {
					t.Errorf("reminder block source = %s", b.Meta.Source)
				}
				if b := c.Messages[6].Blocks[0]; b.Meta.Source != conv.SourceHook || b.Meta.Tier != conv.TierSystem {
					t.Errorf("isMeta block meta = %+v", b.Meta)
				}
				if at := c.Messages[0].Blocks[0].Meta.CreatedAt; at.IsZero() || at.Second() != 0 || at.Minute() != 53 {
					t.Errorf("CreatedAt = %v", at)
				}
			},
		},
		{
			file: "claude-interleaved.jsonl", format: FormatClaudeCode, model: "claude-sonnet-4-5",
			want: stats{messages: 4, rounds: 1, calls: 2, results: 2},
		},
		{
			file: "claude-subagent.jsonl", format: FormatClaudeCode, model: "claude-haiku-4-5-20251001",
			want: stats{messages: 4, rounds: 1, calls: 1, results: 1},
		},
		{
			file: "claude-compacted.jsonl", format: FormatClaudeCode, model: "claude-sonnet-4-5",
			want: stats{messages: 4, rounds: 2},
			check: func(t *testing.T, c *conv.Conversation) {
				b := c.Messages[2].Blocks[0]
				if b.Type != conv.TypeSummary || !b.Meta.Pinned || b.Span == nil || b.Span.First != 1 {
					t.Errorf("compaction summary = %+v", b)
				}
				for _, m := range c.Messages {
					if strings.Contains(m.Blocks[0].PlainText(), "API Error") {
						t.Error("synthetic API error message imported")
					}
				}
			},
		},
		{
			file: "mini.traj.json", format: FormatMiniSWEAgent, model: "google/gemini-3-pro-preview",
			want: stats{messages: 11, rounds: 1, calls: 4, results: 4, errors: 1},
			check: func(t *testing.T, c *conv.Conversation) {
				if len(c.System) != 1 {
					t.Errorf("system = %d blocks", len(c.System))
				}
				a := c.Messages[1].Blocks
				if a[0].Text != "THOUGHT: Find the parser first." || string(a[1].Input) != `{"command":"grep -rn \"func Parse\" ."}` {
					t.Errorf("step = %q / %s", a[0].Text, a[1].Input)
				}
				if r := c.Messages[2].Blocks[0].Text; r != "./parser/parser.go:3:func Parse(s string) int { return len(s) - 1 }\n[exit code 0]" {
					t.Errorf("observation = %q", r)
				}
				if b := c.Messages[4].Blocks[0]; b.Type != conv.TypeText || b.Meta.Source != conv.SourceHook {
					t.Errorf("format error became %s from %s", b.Type, b.Meta.Source)
				}
				long := c.Messages[8].Blocks[0].Text
				for _, want := range []string{"[warning]", "line 2", "12345 characters elided", "line 9999", "[exit code 0]"} {
					if !strings.Contains(long, want) || strings.Contains(long, "<output_head>") {
						t.Errorf("long observation %q lacks %q or keeps tags", long, want)
					}
				}
			},
		},
		{
			file: "swe-text.traj", format: FormatSWEAgent,
			want: stats{messages: 8, rounds: 1, calls: 3, results: 2},
			check: func(t *testing.T, c *conv.Conversation) {
				for _, m := range c.Messages {
					if strings.Contains(m.Blocks[0].PlainText(), "demonstration") {
						t.Error("is_demo message imported")
					}
				}
				if in := string(c.Messages[3].Blocks[1].Input); in != `{"command":"open parser/parser.go"}` {
					t.Errorf("command from the fenced block = %s", in)
				}
			},
		},
		{
			file: "swe-fc.traj", format: FormatSWEAgent,
			want: stats{messages: 7, rounds: 1, calls: 3, results: 3}, fixes: 1, // a reused tool call id
		},
		{
			file: "openhands-events.jsonl", format: FormatOpenHands, model: "openai/llama-4-maverick",
			want: stats{messages: 6, rounds: 1, calls: 4, results: 3, errors: 1},
			check: func(t *testing.T, c *conv.Conversation) {
				if len(c.Tools) != 3 || c.Tools[0].Name != "execute_bash" || c.Tools[0].Description == "" {
					t.Errorf("tools = %+v", c.Tools)
				}
				// Two actions from one model response are one message; the
				// observations pair by cause, not by order.
				if a := c.Messages[1].Blocks; len(a) != 3 {
					t.Errorf("response = %+v", a)
				}
				if r := c.Messages[2].Blocks[1]; r.ToolUseID != "toolu_02" || !r.IsError || !strings.HasSuffix(r.Text, "exit code 1.]") {
					t.Errorf("result = %+v", r)
				}
				if b := c.Messages[0].Blocks[1]; b.Meta.Source != conv.SourceHook || !strings.Contains(b.Text, "GitHub API") {
					t.Errorf("recalled context = %+v", b)
				}
			},
		},
		{
			file: "openhands-resolver.jsonl", format: FormatOpenHandsResolver,
			want: stats{messages: 8, rounds: 1, calls: 3, results: 3, errors: 1},
		},
		{
			file: "anthropic-request.json", format: FormatAnthropic, model: "claude-sonnet-4-5",
			want: stats{messages: 3, rounds: 2, calls: 1, results: 1},
			check: func(t *testing.T, c *conv.Conversation) {
				if c.Messages[2].Blocks[1].Type != conv.TypeSummary || len(c.System[0].CacheControl) == 0 {
					t.Errorf("summary or cache_control lost: %+v", c.Messages[2].Blocks)
				}
			},
		},
		{
			file: "openai-request.json", format: FormatOpenAI, model: "gpt-5",
			want: stats{messages: 4, rounds: 1, calls: 2, results: 2, errors: 1},
		},
		{
			file: "gemini-request.json", format: FormatGemini,
			want: stats{messages: 4, rounds: 1, calls: 2, results: 2, errors: 1},
			check: func(t *testing.T, c *conv.Conversation) {
				res := c.Messages[2].Blocks
				if len(res) != 2 || res[0].Name != "read_file" || res[1].Name != "run_shell_command" || !strings.Contains(res[0].ResultText(), "func Add") {
					t.Errorf("results not paired with their calls: %+v", res)
				}
			},
		},
		{
			file: "messages-array.json", format: FormatAnthropic,
			want: stats{messages: 3, rounds: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := mustLoad(t, filepath.Join("testdata", tt.file), Options{})
			if s.Format != tt.format || s.Model != tt.model {
				t.Errorf("format, model = %q, %q; want %q, %q", s.Format, s.Model, tt.format, tt.model)
			}
			if got := count(s.Conv); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if len(s.Fixes) != tt.fixes || len(s.Warnings) != 0 {
				t.Errorf("fixes %v, warnings %v; want %d fixes, no warnings", s.Fixes, s.Warnings, tt.fixes)
			}
			if tt.check != nil {
				tt.check(t, s.Conv)
			}
			// Importing again gives the same ids and content.
			again := mustLoad(t, filepath.Join("testdata", tt.file), Options{Format: tt.format})
			if len(again.Conv.Messages) != len(s.Conv.Messages) || again.Conv.Seq != s.Conv.Seq {
				t.Errorf("re-import differs: %d messages seq %d, then %d seq %d", len(s.Conv.Messages), s.Conv.Seq, len(again.Conv.Messages), again.Conv.Seq)
			}
		})
	}
}

// TestFormatsListed checks that the package documentation describes every
// format Load reads, with the versions it was written against.
func TestFormatsListed(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats() {
		if !regexp.MustCompile(`(?m)^//   - (\w+, )?` + regexp.QuoteMeta(f) + `[:, ]`).Match(doc) {
			t.Errorf("doc.go does not describe format %q", f)
		}
	}
}

// write creates a file in a temporary directory.
func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// session returns the Claude Code fixture's lines, to damage.
func sessionLines(t *testing.T) []string {
	return strings.Split(strings.TrimSuffix(string(fixture(t, "claude-session.jsonl")), "\n"), "\n")
}

func TestBadInput(t *testing.T) {
	lines := sessionLines(t)
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	with := func(i int, line string) []byte {
		ls := append([]string(nil), lines...)
		ls[i] = line
		return join(ls)
	}
	truncatedLast := join(lines)
	truncatedLast = truncatedLast[:len(truncatedLast)-30]
	badUTF8 := with(2, strings.Replace(lines[2], "fix it", "fix \xff\xfe it", 1))

	tests := []struct {
		name string
		file string // file name (the extension must not matter)
		data []byte // nil: the file does not exist
		opts Options
		is   error  // the error wanted; nil for success
		says string // in the error, or in a warning on success
		line int    // the error's line
		nmsg int    // messages imported on success
	}{
		{name: "missing file", file: "nope.jsonl", is: fs.ErrNotExist, says: "no such file"},
		{name: "empty file", file: "empty.jsonl", data: []byte{}, is: ErrEmpty, says: "empty file"},
		{name: "blank file", file: "blank.json", data: []byte("\n  \n\t\n"), is: ErrEmpty},
		{name: "not JSON", file: "notes.jsonl", data: []byte("# my session\nuser: hi\n"), is: ErrUnknownFormat, says: "supported: claude-code, codex, gemini-cli, cline, opencode, mini-swe-agent"},
		{name: "unknown JSON", file: "data.json", data: []byte(`{"foo": 1, "bar": [1,2]}`), is: ErrUnknownFormat, says: "keys bar, foo"},
		{name: "unknown JSONL", file: "log.jsonl", data: []byte("{\"level\":\"info\"}\n{\"level\":\"warn\"}\n"), is: ErrUnknownFormat},
		{name: "JSON scalar", file: "n.json", data: []byte("[1, 2]"), is: ErrMalformed},
		{name: "JSON number", file: "n.json", data: []byte("42\n"), is: ErrUnknownFormat, says: "the file holds a JSON number, not an object"},
		{name: "JSON null", file: "n.json", data: []byte("null"), is: ErrUnknownFormat, says: "the file holds a JSON null, not an object"},
		{name: "JSON string", file: "n.json", data: []byte(`"str"`), is: ErrUnknownFormat, says: "the file holds a JSON string, not an object"},
		{name: "unknown format option", file: "s.jsonl", data: join(lines), opts: Options{Format: "cursor"}, is: ErrUnknownFormat, says: `"cursor" (supported: claude-code`},
		{name: "malformed document", file: "t.traj", data: []byte("{\n\"history\": [\n{\"role\": \"user\", \"content\": \"hi\"},\n{\"role\": \"assistant\" \"content\": 1}\n]}"), is: ErrMalformed, line: 4},
		{name: "truncated document", file: "t.traj.json", data: fixture(t, "mini.traj.json")[:900], is: ErrMalformed, says: "truncated"},
		{name: "wrong format forced", file: "m.json", data: fixture(t, "mini.traj.json"), opts: Options{Format: FormatClaudeCode}, is: ErrNoMessages},
		{name: "damaged line skipped", file: "s.jsonl", data: with(9, `{"parentUuid":"u-6","type":"assistant","message":{"role":`), says: "line 10: damaged line skipped", nmsg: 10},
		{name: "damaged line strict", file: "s.jsonl", data: with(9, `{"parentUuid":"u-6","type":"assistant","message":{"role":`), opts: Options{Strict: true}, is: ErrDamaged, line: 10},
		{name: "garbage line skipped", file: "s.jsonl", data: with(0, "\x00\x01 not json at all"), says: "line 1: damaged", nmsg: 10},
		{name: "truncated last line", file: "s.jsonl", data: truncatedLast, says: "line 21: damaged", nmsg: 9},
		{name: "truncated last line strict", file: "s.jsonl", data: truncatedLast, opts: Options{Strict: true}, is: ErrDamaged, line: 21},
		{name: "unknown block type kept", file: "s.jsonl", data: with(10, strings.Replace(lines[10], `"type":"text","text"`, `"type":"document","text"`, 1)), says: `kept 1 content block(s) of types ctxkit does not know (document: 1) whole, as opaque blocks`, nmsg: 10},
		{name: "invalid UTF-8 replaced", file: "s.jsonl", data: badUTF8, says: "line 3: invalid UTF-8 replaced", nmsg: 10},
		{name: "invalid UTF-8 strict", file: "s.jsonl", data: badUTF8, opts: Options{Strict: true}, is: ErrInvalidUTF8, line: 3},
		{name: "invalid UTF-8 in a document", file: "m.json", data: []byte(strings.Replace(string(fixture(t, "mini.traj.json")), "Find the parser", "Find \xc3\x28 parser", 1)), says: "invalid UTF-8 replaced with U+FFFD: 1 sequence(s), the first on line", nmsg: 11},
		{name: "invalid UTF-8 in a document strict", file: "m.json", data: []byte(strings.Replace(string(fixture(t, "mini.traj.json")), "Find the parser", "Find \xc3\x28 parser", 1)), opts: Options{Strict: true}, is: ErrInvalidUTF8},
		{name: "only damaged lines", file: "s.jsonl", data: []byte("{\"type\":\"user\",\"uuid\":\"x\",\"message\":{\n{\"type\":\"user\",\n"), opts: Options{Format: FormatClaudeCode}, is: ErrNoMessages},
		{name: "no conversation records", file: "s.jsonl", data: []byte(lines[0] + "\n" + lines[1] + "\n"), is: ErrNoMessages},
		{name: "two records in one file", file: "o.jsonl", data: append(append(fixture(t, "openhands-resolver.jsonl"), fixture(t, "openhands-resolver.jsonl")...), '\n'), says: "1 more record(s) after the first", nmsg: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			if tt.data != nil {
				path = write(t, tt.file, tt.data)
			}
			s, err := Load(context.Background(), path, tt.opts)
			if tt.is != nil {
				if !errors.Is(err, tt.is) {
					t.Fatalf("err = %v, want %v", err, tt.is)
				}
				if s != nil {
					t.Error("a session came back with the error")
				}
				var ie *Error
				if !errors.As(err, &ie) || ie.Path != path || !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
				if !strings.Contains(err.Error(), tt.says) {
					t.Errorf("err = %q, want it to say %q", err, tt.says)
				}
				if tt.line != 0 && ie.Line != tt.line {
					t.Errorf("error line = %d, want %d (%v)", ie.Line, tt.line, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkSession(t, s)
			if !strings.Contains(strings.Join(s.Warnings, "\n"), tt.says) {
				t.Errorf("warnings %q, want one saying %q", s.Warnings, tt.says)
			}
			if len(s.Conv.Messages) != tt.nmsg {
				t.Errorf("imported %d messages, want %d", len(s.Conv.Messages), tt.nmsg)
			}
		})
	}
}

func TestDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(context.Background(), dir, Options{}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("err = %v", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, f := range []string{"claude-session.jsonl", "mini.traj.json", "swe-text.traj", "openhands-events.jsonl"} {
		if _, err := Load(ctx, filepath.Join("testdata", f), Options{}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", f, err)
		}
	}
}

func TestManyWarningsBounded(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(sessionLines(t)[2] + "\n")
	for range 200 {
		sb.WriteString("{broken\n")
	}
	s, err := Load(context.Background(), write(t, "s.jsonl", []byte(sb.String())), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != maxWarnings+1 || !strings.Contains(s.Warnings[maxWarnings], "150 more") {
		t.Errorf("%d warnings, last %q", len(s.Warnings), s.Warnings[len(s.Warnings)-1])
	}
}

// TestOpenHandsRecall: a recall observation is imported as what OpenHands
// sends the model (its workspace context and microagent knowledge, each in
// its tag), not as the event's line for the UI, so the proxy, which sees
// only what OpenHands sends, reads it as the importer does: context the
// client injected (wire.UserSource), not the user's words.
func TestOpenHandsRecall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		extras string
		want   []string // each text's opening, in order
		has    []string
	}{
		{
			name:   "workspace context and knowledge",
			extras: `{"recall_type":"workspace_context","repo_name":"","repo_directory":"","repo_instructions":"","runtime_hosts":{"http://localhost:58272":58272,"http://localhost:54079":54079},"additional_agent_instructions":"","date":"2025-04-30","microagent_knowledge":[{"name":"github","trigger":"github","content":"Use the GitHub API."},{"name":"gitlab","trigger":"git","content":"Use the GitLab API."}]}`,
			want:   []string{"<RUNTIME_INFORMATION>", "<EXTRA_INFO>"},
			has:    []string{"http://localhost:54079 (port 54079)\n* http://localhost:58272", "2025-04-30", `keyword "github"`, "Use the GitLab API.\n</EXTRA_INFO>"},
		},
		{
			name:   "repository and its instructions",
			extras: `{"recall_type":"workspace_context","repo_name":"a/b","repo_directory":"/workspace/b","repo_instructions":"Run make test.","additional_agent_instructions":"Push to a branch."}`,
			want:   []string{"<REPOSITORY_INFO>"},
			has:    []string{"a/b", "<REPOSITORY_INSTRUCTIONS>\nRun make test.", "<RUNTIME_INFORMATION>\nPush to a branch."},
		},
		{name: "knowledge alone", extras: `{"recall_type":"knowledge","microagent_knowledge":[{"name":"npm","trigger":"npm","content":"Use npm ci."}]}`, want: []string{"<EXTRA_INFO>"}},
		{name: "nothing to send", extras: `{"recall_type":"workspace_context","repo_instructions":"","microagent_knowledge":[]}`},
		{name: "not an object", extras: `"x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recallTexts(json.RawMessage(tc.extras))
			if len(got) != len(tc.want) {
				t.Fatalf("%d texts, want %d: %q", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("text %d opens %q, want %q", i, got[i][:min(len(got[i]), 30)], w)
				}
				if s := wire.UserSource(got[i]); s != conv.SourceHook {
					t.Errorf("text %d: source %q, want hook", i, s)
				}
			}
			all := strings.Join(got, "\n")
			for _, h := range tc.has {
				if !strings.Contains(all, h) {
					t.Errorf("texts lack %q:\n%s", h, all)
				}
			}
		})
	}
}
