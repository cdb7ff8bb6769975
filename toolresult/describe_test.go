package toolresult

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

func TestFactsPlaceholder(t *testing.T) {
	tests := []struct {
		name, tool, input, result string
		isErr                     bool
		want                      string
	}{
		{"bash with exit code", "execute_bash", `{"command":"go test ./..."}`,
			"--- FAIL: TestX\nFAIL\n[The command completed with exit code 1.]", false,
			`[cleared: execute_bash "go test ./..." exit 1, 3 lines — recall b17]`},
		{"read", "Read", `{"file_path":"/w/a.go"}`, "1\n2\n3\n", false,
			`[cleared: Read "/w/a.go" 3 lines — recall b17]`},
		{"error without code", "Bash", `{"command":"make"}`, "make: *** No rule", true,
			`[cleared: Bash "make" error, 1 line — recall b17]`},
		{"heredoc shows its first line", "bash", `{"command":"cat <<'EOF' > a.py\nprint(1)\nEOF"}`, "", false,
			`[cleared: bash "cat <<'EOF' > a.py …" — recall b17]`},
		{"quotes escaped", "bash", `{"command":"grep -n \"a b\" x"}`, "x:1:a b\n", false,
			`[cleared: bash "grep -n \"a b\" x" 1 line — recall b17]`},
		{"long argument cut", "bash", `{"command":"` + strings.Repeat("x", 100) + `"}`, "ok", false,
			`[cleared: bash "` + strings.Repeat("x", 80) + `…" 1 line — recall b17]`},
		{"unknown tool without arguments", "", `{}`, "done", false,
			`[cleared: tool 1 line — recall b17]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := conv.NewToolResult("t1", tt.tool, tt.result, tt.isErr)
			b.ID = "b17"
			got := FactsOf(&b, Classify(tt.tool, json.RawMessage(tt.input))).Placeholder(b.ID)
			if got != tt.want {
				t.Errorf("placeholder\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFactsCodexResult(t *testing.T) {
	b := conv.NewToolResult("t1", "shell", `{"output":"a\nb\nc\n","metadata":{"exit_code":2,"duration_seconds":0.2}}`, false)
	got := FactsOf(&b, Classify("shell", json.RawMessage(`{"command":["bash","-lc","pytest -q"]}`))).Describe()
	if want := `shell "pytest -q" exit 2, 3 lines`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
