package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/tokens"
)

// sessionFiles are the importer's fixtures plus, when it is there, the
// shared corpus.
func sessionFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "importer", "testdata", "*.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no importer fixtures: %v", err)
	}
	raw := filepath.Join("..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(raw); err != nil {
		t.Logf("corpus not found at %s; checking the fixtures only", raw)
		return files
	}
	err = filepath.WalkDir(raw, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestInspectReport checks the report's arithmetic on every session at
// hand: the categories add up to the total, the per-tool figures to the
// tool results, the largest blocks are the largest, and --json carries the
// documented keys.
func TestInspectReport(t *testing.T) {
	for _, f := range sessionFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := importer.Load(context.Background(), f, importer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := inspectSession(f, s, tokens.NewEstimator())
			tk := r.Tokens
			sum := tk.System + tk.Tools + tk.UserText + tk.Injected + tk.AssistantText + tk.Thinking + tk.ToolUse + tk.ToolResults + tk.Summaries + tk.Images + tk.Framing
			if sum != tk.Total || tk.Total <= 0 || tk.Framing < 0 {
				t.Errorf("categories sum to %d, total %d (%+v)", sum, tk.Total, tk)
			}
			byTool := 0
			for _, n := range r.ToolResultsByTool {
				byTool += n
			}
			if byTool != tk.ToolResults {
				t.Errorf("tool results by tool sum to %d, want %d", byTool, tk.ToolResults)
			}
			if len(r.Largest) == 0 || len(r.Largest) > 10 {
				t.Fatalf("%d largest blocks", len(r.Largest))
			}
			smallest := r.Largest[len(r.Largest)-1].Tokens
			for i, b := range r.Largest {
				if i > 0 && b.Tokens > r.Largest[i-1].Tokens {
					t.Errorf("largest blocks out of order at %d", i)
				}
				if strings.Contains(b.Preview, "\n") {
					t.Errorf("preview %q spans lines", b.Preview)
				}
			}
			for _, m := range s.Conv.Messages {
				for _, b := range m.Blocks {
					if b.Meta.Tokens > smallest && !listed(r.Largest, b.ID) {
						t.Errorf("block %s (%d tokens) is missing from the largest", b.ID, b.Meta.Tokens)
					}
				}
			}
			if !r.Invariants.OK || r.Messages != len(s.Conv.Messages) || r.UserMessages+r.AssistantMessages != r.Messages {
				t.Errorf("report %+v", r)
			}
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(data, &keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"format", "messages", "rounds", "tokens", "tool_results_by_tool", "largest", "invariants"} {
				if _, ok := keys[k]; !ok {
					t.Errorf("--json lacks %q", k)
				}
			}
			var inv struct {
				OK         *bool            `json:"ok"`
				Violations []conv.Violation `json:"violations"`
			}
			if err := json.Unmarshal(keys["invariants"], &inv); err != nil || inv.OK == nil || inv.Violations == nil {
				t.Errorf("invariants = %s", keys["invariants"])
			}
		})
	}
}

func listed(bs []largeBlock, id string) bool {
	for _, b := range bs {
		if b.ID == id {
			return true
		}
	}
	return false
}

func TestInspectShowsViolations(t *testing.T) {
	// A state the importer never returns, as another caller may pass it.
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "hi")}})
	r := inspectSession("x", &importer.Session{Format: "test", Conv: c}, tokens.NewEstimator())
	var sb strings.Builder
	if err := r.write(&sb); err != nil {
		t.Fatal(err)
	}
	if r.Invariants.OK || !strings.Contains(sb.String(), "invariants  1 violation(s)") || !strings.Contains(sb.String(), "first-not-user") {
		t.Errorf("report:\n%s", sb.String())
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := textfmt.Thousands(n); got != want {
			t.Errorf("textfmt.Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
