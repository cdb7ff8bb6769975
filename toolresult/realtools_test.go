package toolresult_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
	"github.com/ctxkit/ctxkit/tools"
)

// TestRealTools runs ctxkit's own tools on a real workspace and checks that
// every result that is large enough is compressed to what the table keeps,
// reading the fields the tools actually produce.
func TestRealTools(t *testing.T) {
	ws := t.TempDir()
	var src strings.Builder
	for i := 1; i <= 900; i++ {
		fmt.Fprintf(&src, "func f%d() int { return %d } // TODO tidy\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.go"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%02d.txt", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := tools.New(ws, tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		tool, input string
		want        []string // substrings of the rung-1 text
	}{
		{"Read", `{"file_path":"big.go"}`, []string{"[Read big.go:", "mtime ", "more lines not shown", "recall b1"}},
		{"LS", `{"path":"."}`, []string{"[LS .: 41 entries]", "… 31 more entries (41 total)", "recall b1"}},
		{"Grep", `{"pattern":"TODO","path":"."}`, []string{`[Grep "TODO" in .: 900 matches in 1 file]`, "more matches (900 total)"}},
		{"Bash", `{"command":"seq 1 300; seq 1 50 >&2; exit 3"}`, []string{`[Bash "seq 1 300; seq 1 50 >&2; exit 3": exit 3]`, "stderr:", "\n50\n", "stdout: … 280 more lines (300 total)", "recall b1"}},
		{"Edit", `{"file_path":"big.go","old_string":"// TODO tidy","new_string":"// done","replace_all":true}`, []string{"[Edit big.go: applied, 900 replacements", "more diff lines"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := set.Run(ctx, tt.tool, json.RawMessage(tt.input))
			call := conv.NewToolUse("toolu_1", tt.tool, json.RawMessage(tt.input))
			b := res.Block("toolu_1", tt.tool)
			b.ID = "b1"
			nb, ok := toolresult.Compress(&b, &call)
			if !ok {
				t.Fatalf("not compressed; result was %d bytes:\n%.500s", len(b.Text), b.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(nb.Text, w) {
					t.Errorf("rung-1 text lacks %q:\n%.1500s", w, nb.Text)
				}
			}
			if len(nb.Text) >= len(b.Text) || !json.Valid(nb.Structured) {
				t.Errorf("rung 1 is %d bytes (was %d), structured valid %v", len(nb.Text), len(b.Text), json.Valid(nb.Structured))
			}
		})
	}
}
