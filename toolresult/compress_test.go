package toolresult

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/ctxkit/ctxkit/conv"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar")

// unchanged is the want section of a sample that must not be compressed.
const unchanged = "(not compressed)\n"

// sample is one golden case: the call, the result as the model saw it
// (plain text or structured), and the expected rung-1 text.
type sample struct {
	call   conv.Block
	result conv.Block
}

func loadSample(t *testing.T, ar *txtar.Archive) sample {
	t.Helper()
	var s sample
	var call struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	for _, f := range ar.Files {
		data := string(f.Data)
		switch f.Name {
		case "call":
			if err := json.Unmarshal(f.Data, &call); err != nil {
				t.Fatalf("call: %v", err)
			}
		case "result":
			s.result.Text = strings.TrimSuffix(data, "\n")
		case "structured":
			s.result.Structured = json.RawMessage(f.Data)
			s.result.Text, s.result.IsError = rendered(t, f.Data)
		case "meta":
			for _, line := range strings.Split(strings.TrimSpace(data), "\n") {
				k, v, _ := strings.Cut(line, ": ")
				if k == "is_error" {
					s.result.IsError = v == "true"
				}
			}
		}
	}
	s.call = conv.NewToolUse("toolu_1", call.Name, call.Input)
	r := conv.NewToolResult("toolu_1", call.Name, s.result.Text, s.result.IsError)
	r.Structured = s.result.Structured
	r.ID = "b17"
	s.result = r
	return s
}

// rendered is what ctxkit's tools show the model for a structured result
// (tools.Result.Render): the text, led by "Error: ..." on failure.
func rendered(t *testing.T, raw []byte) (string, bool) {
	var env struct {
		Status, Text, Error string
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("structured: %v", err)
	}
	if env.Status != "error" {
		return env.Text, false
	}
	if env.Text == "" {
		return "Error: " + env.Error, true
	}
	return "Error: " + env.Error + "\n\n" + env.Text, true
}

func TestCompressGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := loadSample(t, ar)
			orig := s.result.Clone()
			got := unchanged
			nb, ok := Compress(&s.result, &s.call)
			if ok {
				got = nb.Text + "\n"
				checkRung1(t, &orig, &nb)
			}
			if diff := cmp.Diff(orig, s.result); diff != "" {
				t.Errorf("Compress changed its input (-before +after):\n%s", diff)
			}
			wantIdx := -1
			for i, f := range ar.Files {
				if f.Name == "want" {
					wantIdx = i
				}
			}
			if wantIdx < 0 {
				t.Fatal("no want section")
			}
			if *update {
				ar.Files[wantIdx].Data = []byte(got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := string(ar.Files[wantIdx].Data); got != want {
				t.Errorf("compressed form differs (-want +got):\n%s", cmp.Diff(want, got))
			}
		})
	}
}

// checkRung1 checks what every rung-1 block must be: the same block with
// new, shorter text, rung 1, token cache reset, and a note naming the
// recall id whenever something was left out.
func checkRung1(t *testing.T, orig, nb *conv.Block) {
	t.Helper()
	if nb.ID != orig.ID || nb.ToolUseID != orig.ToolUseID || nb.Type != orig.Type || nb.IsError != orig.IsError {
		t.Errorf("identity changed: %+v", nb)
	}
	if nb.Meta.Rung != conv.RungCompressed || nb.Meta.Tokens != 0 {
		t.Errorf("meta = %+v, want rung 1 and no cached count", nb.Meta)
	}
	if len(nb.Text) >= len(orig.ResultText()) {
		t.Errorf("compressed %d bytes >= original %d", len(nb.Text), len(orig.ResultText()))
	}
	if !strings.Contains(nb.Text, "recall "+orig.ID) {
		t.Errorf("compressed form does not name recall id %s:\n%s", orig.ID, nb.Text)
	}
	if len(orig.Structured) > 0 && !json.Valid(nb.Structured) {
		t.Errorf("structured result kept invalid JSON as its Structured:\n%s", nb.Structured)
	}
}

func TestCompressRefuses(t *testing.T) {
	long := strings.Repeat("line of output\n", 400)
	call := conv.NewToolUse("t1", "Bash", json.RawMessage(`{"command":"make"}`))
	tests := []struct {
		name string
		edit func(b *conv.Block)
	}{
		{"already rung 1", func(b *conv.Block) { b.Meta.Rung = conv.RungCompressed }},
		{"placeholder", func(b *conv.Block) { b.Meta.Rung = conv.RungPlaceholder }},
		{"pinned", func(b *conv.Block) { b.Meta.Pinned = true }},
		{"not compactable", func(b *conv.Block) { b.Meta.Compactable = false }},
		{"not a result", func(b *conv.Block) { b.Type = conv.TypeText }},
		{"short", func(b *conv.Block) { b.Text = "ok" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := conv.NewToolResult("t1", "Bash", long, false)
			b.ID = "b3"
			tt.edit(&b)
			if nb, ok := Compress(&b, &call); ok {
				t.Errorf("compressed to %q", nb.Text)
			}
		})
	}
	if _, ok := Compress(nil, &call); ok {
		t.Error("compressed a nil result")
	}
}

func TestCompressNilCallUsesResultName(t *testing.T) {
	b := conv.NewToolResult("t1", "Grep", strings.Repeat("a.go:1:match\n", 50), false)
	b.ID = "b9"
	nb, ok := Compress(&b, nil)
	if !ok || !strings.Contains(nb.Text, "45 more matches") {
		t.Fatalf("got %v %q", ok, nb.Text)
	}
}

func TestCompressImages(t *testing.T) {
	b := conv.NewToolResult("t1", "Read", "", false)
	b.ID = "b5"
	b.Content = []conv.Block{
		{Type: conv.TypeText, Text: "screenshot of the page"},
		{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`)},
	}
	call := conv.NewToolUse("t1", "Read", json.RawMessage(`{"file_path":"/tmp/shot.png"}`))
	nb, ok := Compress(&b, &call)
	if !ok {
		t.Fatal("an image result was not compressed")
	}
	if nb.Content != nil || !strings.Contains(nb.Text, "1 image dropped; recall b5") || !strings.Contains(nb.Text, "screenshot of the page") {
		t.Errorf("got %+v", nb)
	}
}

func TestCompressDeterministic(t *testing.T) {
	files, _ := filepath.Glob("testdata/structured_*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s := loadSample(t, ar)
		a, _ := Compress(&s.result, &s.call)
		b, _ := Compress(&s.result, &s.call)
		if a.Text != b.Text || string(a.Structured) != string(b.Structured) {
			t.Errorf("%s: two runs differ", file)
		}
	}
}

// FuzzCompress checks what holds for any result: no panic, and a
// compressed form is smaller, rung 1, and names its recall id.
func FuzzCompress(f *testing.F) {
	f.Add("Bash", `{"command":"cat a.go"}`, strings.Repeat("line\n", 700), "")
	f.Add("Grep", `{"pattern":"x"}`, "a:1:x\nb:2:x\nc:3:x\nd:4:x\ne:5:x\nf:6:x\ng:7:x", "")
	f.Add("Read", `{"file_path":"a"}`, "", `{"status":"ok","data":{"path":"a","total_lines":3},"text":"1\n2\n3"}`)
	f.Add("LS", `{}`, "", `{"status":"ok","data":{"entries":[1,2]}}`)
	f.Fuzz(func(t *testing.T, tool, input, text, structured string) {
		call := conv.NewToolUse("t", tool, json.RawMessage(input))
		b := conv.NewToolResult("t", tool, text, false)
		b.ID = "b1"
		if structured != "" {
			b.Structured = json.RawMessage(structured)
		}
		nb, ok := Compress(&b, &call)
		if !ok {
			return
		}
		if len(nb.Text) >= len(text) || nb.Meta.Rung != conv.RungCompressed || !strings.Contains(nb.Text, "recall b1") {
			t.Errorf("bad rung-1 form (%d bytes from %d): %q", len(nb.Text), len(text), nb.Text)
		}
	})
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		structured string
		want       int
		ok         bool
	}{
		{"mini-swe-agent", "<returncode>2</returncode>\n<output>\nboom\n</output>", "", 2, true},
		{"openhands", "FAILED\n[The command completed with exit code 1.]\n[Current working directory: /w]", "", 1, true},
		{"structured", "", `{"status":"error","data":{"exit_code":127}}`, 127, true},
		{"none", "all good", "", 0, false},
		{"importer's form", "Traceback\nValueError\n[exit code 1]", "", 1, true},
		{"status line not near the end", "x\n[exit code 3]\n" + strings.Repeat("more output\n", 10), "", 0, false},
		{"long output", "<returncode>0</returncode>\n" + strings.Repeat("x\n", 10000), "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := conv.NewToolResult("t", "bash", tt.text, false)
			if tt.structured != "" {
				b.Structured = json.RawMessage(tt.structured)
			}
			got, ok := ExitCode(&b)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ExitCode = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
