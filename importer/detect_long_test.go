package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetectLongFirstLine: a Claude Code session whose first line is
// larger than the detection probe (1 MiB) is still recognised.
func TestDetectLongFirstLine(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	lines := []string{
		`{"type":"user","sessionId":"s1","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"` + big + `"}}`,
		`{"type":"assistant","sessionId":"s1","uuid":"u2","parentUuid":"u1","timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}]}}`,
	}
	p := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), p, Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if s.Format != FormatClaudeCode || len(s.Conv.Messages) != 2 {
		t.Errorf("format %q, %d messages", s.Format, len(s.Conv.Messages))
	}
}

// TestTypeErrorsInUserTerms: a document of the wrong shape is reported
// with its line and what was expected, never a Go type name.
func TestTypeErrorsInUserTerms(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"numbers.json":   `{"messages": [1, 2, 3]}`,
		"wrongrole.json": `{"messages": [{"role": 5, "content": "x"}]}`,
		"history.json":   `{"history": "no"}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), p, Options{})
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "Go value") || strings.Contains(msg, "Go struct") || strings.Contains(msg, "importer.") {
			t.Errorf("%s: %s", name, msg)
		}
	}
}
