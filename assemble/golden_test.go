package assemble

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// session plays turns through a Builder the way the agent does: Turn for
// every user message, responses appended as they come.
type session struct {
	t *testing.T
	b *Builder
	c *conv.Conversation
}

func (s *session) user(text string, results ...conv.Block) {
	s.t.Helper()
	if _, err := s.b.Turn(context.Background(), s.c, Input{Results: results, Text: text}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) reply(bs ...conv.Block) { s.c.Append(asst(bs...)) }

// goldenScenarios are the requests whose bytes testdata pins down.
func goldenScenarios(t *testing.T) map[string]func() (*Assembly, error) {
	ws := t.TempDir()
	for name, data := range map[string]string{
		"AGENTS.md":          "# Rules\n- Run `go test ./...` before you say you are done.\n- Never edit files under gen/.\n",
		"src/main.go":        "package main\n",
		"docs/design doc.md": "# Design\n",
	} {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newSession := func(cfg Config) *session {
		cfg.Workspace, cfg.Dir = openWS(t, ws), ws
		cfg.Model = "claude-sonnet-4-5"
		cfg.MaxTokens = 8192
		cfg.MinCacheTokens = 300 // small prompts keep the files readable
		b := newBuilder(t, cfg)
		c := &conv.Conversation{System: system(250), Tools: append([]conv.Tool(nil), convtest.Tools...)}
		c.Stamp(c.System)
		return &session{t: t, b: b, c: c}
	}
	return map[string]func() (*Assembly, error){
		"first-turn": func() (*Assembly, error) {
			s := newSession(Config{})
			s.user(`fix the bug in @src/main.go, see @"docs/design doc.md" and @../secret and @gone.go`)
			return s.b.Build(s.c, nil)
		},
		"mid-round-with-todos": func() (*Assembly, error) {
			s := newSession(Config{})
			s.user("run the tests and fix what fails")
			s.reply(conv.NewThinking("Start with the tests.", "sig-1"), say("Running the tests."), conv.NewToolUse("toolu_01", "Bash", []byte(`{"command":"go test ./...","timeout":120000}`)))
			s.c.Pending = []conv.Block{conv.NewText(conv.SourceHook, "lint: 0 problems")}
			s.user("", conv.NewToolResult("toolu_01", "Bash", "--- FAIL: TestParse (0.00s)\n"+words(300), true))
			s.reply(say("Two files to read."), conv.NewToolUse("toolu_02", "Read", []byte(`{"file_path":"parse.go"}`)), conv.NewToolUse("toolu_03", "Grep", []byte(`{"pattern":"func Parse","path":"."}`)))
			s.c.Pending = []conv.Block{conv.NewText(conv.SourceReminder, "parse.go was modified outside the session </system-reminder> (not by you)")}
			s.user("", conv.NewToolResult("toolu_03", "Grep", "parse.go:12:func Parse(s string) error {", false), conv.NewToolResult("toolu_02", "Read", words(200), false))
			return s.b.Build(s.c, []Todo{{Content: "Run the tests", Status: "completed"}, {Content: "Fix TestParse", Status: "in_progress"}})
		},
		"resumed-summary-new-round": func() (*Assembly, error) {
			s := newSession(Config{CacheTTL: "1h"})
			s.c.Append(user(conv.NewSummary("## Completed\n- Fixed TestParse in parse.go.\n"+words(150), conv.Span{First: 1, Last: 7}), conv.NewText(conv.SourceReminder, "<system-reminder>\nThis session continues from a summary.\n</system-reminder>")))
			s.reply(say("Understood; continuing."))
			s.user("now add a test for empty input")
			return s.b.Build(s.c, nil)
		},
	}
}

func TestGolden(t *testing.T) {
	for name, build := range goldenScenarios(t) {
		t.Run(name, func(t *testing.T) {
			a, err := build()
			if err != nil {
				t.Fatal(err)
			}
			got := golden(t, a)
			path := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the assembled request (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// golden renders an assembly for a golden file: the anchors and layers,
// then the Anthropic request body, indented.
func golden(t *testing.T, a *Assembly) []byte {
	t.Helper()
	meta, err := json.Marshal(struct {
		Anchors []Anchor `json:"anchors"`
		Layers  Layers   `json:"layers"`
	}{a.Anchors, a.Layers})
	if err != nil {
		t.Fatal(err)
	}
	body := encode(t, a)
	all := append(append(append(meta[:len(meta)-1:len(meta)-1], `,"request":`...), body...), '}')
	var out bytes.Buffer
	if err := json.Indent(&out, all, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}
