package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// newSet opens a Set on a fresh workspace holding files (path → content).
func newSet(t *testing.T, files map[string]string) (*Set, string) {
	t.Helper()
	return newSetOpts(t, files, Options{})
}

func newSetOpts(t *testing.T, files map[string]string, opts Options) (*Set, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), content)
	}
	s, err := New(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run calls tool name with input, given as a Go value (encoded to JSON)
// or as raw JSON text, and checks what every result must satisfy.
func run(t *testing.T, s *Set, name string, input any) Result {
	t.Helper()
	return runCtx(t, context.Background(), s, name, input)
}

func runCtx(t *testing.T, ctx context.Context, s *Set, name string, input any) Result {
	t.Helper()
	var raw json.RawMessage
	switch v := input.(type) {
	case string:
		raw = json.RawMessage(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	r := s.Run(ctx, name, raw)
	checkResult(t, r)
	return r
}

// checkResult checks the result protocol: a known status, an error
// message exactly when failed, stats that measure Text, JSON that decodes.
func checkResult(t *testing.T, r Result) {
	t.Helper()
	switch r.Status {
	case StatusOK:
		if r.Error != "" {
			t.Errorf("ok result with error %q", r.Error)
		}
	case StatusError, StatusPartial:
		if r.Error == "" {
			t.Errorf("%s result without an error message", r.Status)
		}
	default:
		t.Errorf("unknown status %q", r.Status)
	}
	if r.Stats.Bytes != len(r.Text) || r.Stats.Lines != countLines(r.Text) {
		t.Errorf("stats %+v do not measure the text (%d bytes)", r.Stats, len(r.Text))
	}
	var back map[string]any
	if err := json.Unmarshal(r.JSON(), &back); err != nil {
		t.Errorf("JSON() does not decode: %v", err)
	}
	if back["status"] != string(r.Status) {
		t.Errorf("JSON status = %v, want %s", back["status"], r.Status)
	}
}

func wantOK(t *testing.T, r Result) {
	t.Helper()
	if r.Status != StatusOK {
		t.Fatalf("status %s, want ok: %s", r.Status, r.Render())
	}
}

func wantError(t *testing.T, r Result, substr string) {
	t.Helper()
	if r.Status != StatusError {
		t.Fatalf("status %s, want error containing %q: %s", r.Status, substr, r.Render())
	}
	if !strings.Contains(r.Error, substr) {
		t.Fatalf("error %q does not contain %q", r.Error, substr)
	}
	if !strings.HasPrefix(r.Render(), "Error: "+r.Error) {
		t.Fatalf("Render() = %q does not lead with the error", r.Render())
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	writeFile(t, file, "x")
	for _, ws := range []string{filepath.Join(dir, "missing"), file} {
		if s, err := New(ws, Options{}); err == nil {
			s.Close()
			t.Errorf("New(%q) succeeded, want an error", ws)
		}
	}
}

func TestRunBadInput(t *testing.T) {
	s, _ := newSet(t, map[string]string{"a.txt": "a\n"})
	tests := []struct {
		name, tool, input, want string
	}{
		{"unknown tool", "Frobnicate", `{}`, `unknown tool "Frobnicate"; the tools are Read, Write`},
		{"not JSON", NameRead, `{"file_path":`, "input is not valid JSON"},
		{"garbage", NameBash, `hello`, "input is not valid JSON"},
		{"array", NameRead, `["a.txt"]`, "input must be a JSON object, got array"},
		{"string", NameLS, `"."`, "input must be a JSON object, got string"},
		{"missing field", NameRead, `{}`, `missing required field "file_path"`},
		{"null field", NameRead, `{"file_path":null}`, `missing required field "file_path"`},
		{"absent input", NameGrep, ``, `missing required field "pattern"`},
		{"two missing", NameEdit, `{"file_path":"a.txt"}`, `missing required field "old_string", "new_string"`},
		{"wrong type", NameRead, `{"file_path":"a.txt","offset":"ten"}`, `field "offset" must be an integer, got string`},
		{"wrong type bool", NameEdit, `{"file_path":"a.txt","old_string":"a","new_string":"b","replace_all":"yes"}`, `field "replace_all" must be true or false`},
		{"wrong type array", NameMultiEdit, `{"file_path":"a.txt","edits":{}}`, `field "edits" must be an array`},
		{"empty path", NameRead, `{"file_path":""}`, "the path is empty"},
		{"negative offset", NameRead, `{"file_path":"a.txt","offset":-1}`, "must not be negative"},
		{"empty command", NameBash, `{"command":"  "}`, "command is empty"},
		{"bad mode", NameGrep, `{"pattern":"a","output_mode":"count"}`, `output_mode must be`},
		{"bad regexp", NameGrep, `{"pattern":"a(b"}`, "invalid pattern"},
		{"bad status", NameTodoWrite, `{"todos":[{"content":"x","status":"done"}]}`, `has status "done"`},
		{"empty todo", NameTodoWrite, `{"todos":[{"content":" ","status":"pending"}]}`, "todo 1 has no content"},
		{"no edits", NameMultiEdit, `{"file_path":"a.txt","edits":[]}`, "edits is empty"},
		{"depth", NameLS, `{"depth":9}`, "depth must be between"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, s, tt.tool, tt.input)
			wantError(t, r, tt.want)
		})
	}
	if got := readFile(t, filepath.Join(s.Workspace(), "a.txt")); got != "a\n" {
		t.Errorf("a.txt changed to %q", got)
	}
}

func TestRunCancelledContext(t *testing.T) {
	s, _ := newSet(t, map[string]string{"a.txt": "a\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range s.Names() {
		r := runCtx(t, ctx, s, name, `{}`)
		wantError(t, r, "not run")
	}
}

func TestSchemas(t *testing.T) {
	s, _ := newSet(t, nil)
	s2, _ := newSet(t, nil)
	a, b := s.Schemas(), s2.Schemas()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two Sets with the same options give different schemas")
	}
	want := []string{NameRead, NameWrite, NameEdit, NameMultiEdit, NameLS, NameGrep, NameBash, NameTodoWrite}
	inputs := map[string]any{
		NameRead: readInput{}, NameWrite: writeInput{}, NameEdit: editInput{}, NameMultiEdit: multiEditInput{},
		NameLS: lsInput{}, NameGrep: grepInput{}, NameBash: bashInput{}, NameTodoWrite: todoInput{},
	}
	var names []string
	for _, tool := range a {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too short: %q", tool.Name, tool.Description)
		}
		var sc struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.InputSchema, &sc); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", tool.Name, err)
		}
		if sc.Type != "object" {
			t.Errorf("%s: schema type %q", tool.Name, sc.Type)
		}
		for _, r := range sc.Required {
			if _, ok := sc.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tool.Name, r)
			}
		}
		// Every property is a field the tool decodes, and the other way
		// round (aliases excepted).
		fields := jsonFields(reflect.TypeOf(inputs[tool.Name]))
		for p := range sc.Properties {
			if !slices.Contains(fields, p) {
				t.Errorf("%s: schema property %q is not decoded", tool.Name, p)
			}
		}
		for _, f := range fields {
			if _, ok := sc.Properties[f]; !ok && f != "-i" {
				t.Errorf("%s: input field %q is not in the schema", tool.Name, f)
			}
		}
		// The schema's required list is what Run checks.
		if !slices.Equal(sc.Required, s.tools[s.index[tool.Name]].required) {
			t.Errorf("%s: schema requires %v, Run checks %v", tool.Name, sc.Required, s.tools[s.index[tool.Name]].required)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	// Schemas hands out copies.
	a[0].InputSchema[0] = 'X'
	if s.Schemas()[0].InputSchema[0] == 'X' {
		t.Error("Schemas shares its bytes with the caller")
	}
}

// jsonFields lists the JSON names of a struct's fields, embedded ones
// included.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.Anonymous {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

func TestResultBlockPassesCheck(t *testing.T) {
	s, _ := newSet(t, map[string]string{"a.txt": "a\n"})
	input := json.RawMessage(`{"file_path":"a.txt"}`)
	r := run(t, s, NameRead, input)
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "read a.txt")}})
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewToolUse("tu1", NameRead, input)}})
	b := r.Block("tu1", NameRead)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{b}})
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("conv.Check: %v", vs)
	}
	if b.Text != r.Render() || b.IsError || string(b.Structured) != string(r.JSON()) {
		t.Errorf("Block() = %+v", b)
	}
	bad := run(t, s, NameRead, `{"file_path":"nope"}`).Block("tu2", NameRead)
	if !bad.IsError || !strings.HasPrefix(bad.Text, "Error: nope does not exist") {
		t.Errorf("error block = %+v", bad)
	}
}

func TestResultJSONIsDeterministic(t *testing.T) {
	r := Result{Status: StatusOK, Data: &GrepData{Pattern: "a<b>&c", Matches: []string{"x:1:<&>"}}, Text: "t", Stats: Stats{Bytes: 1, Lines: 1}}
	a, b := r.JSON(), r.JSON()
	if string(a) != string(b) {
		t.Fatal("JSON() differs between calls")
	}
	if !strings.Contains(string(a), `"a<b>&c"`) {
		t.Errorf("JSON() escapes HTML: %s", a)
	}
	want := `{"status":"ok","data":{"pattern":"a<b>&c","path":"","matches":["x:1:<&>"],"total_matches":0,"total_files":0,"truncated":false,"files_searched":0},"text":"t","stats":{"bytes":1,"lines":1,"duration_ms":0}}`
	if string(a) != want {
		t.Errorf("JSON() =\n%s\nwant\n%s", a, want)
	}
}

func TestRenderPartial(t *testing.T) {
	r := Result{Status: StatusPartial, Text: "out", Error: "timed out"}
	if r.Render() != "out" || r.IsError() {
		t.Errorf("partial renders %q, IsError %v", r.Render(), r.IsError())
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzRun: whatever input the model sends, Run returns a well-formed
// result and never panics. Bash and Write are left out: they would run
// arbitrary commands and write arbitrary files.
func FuzzRun(f *testing.F) {
	seeds := []struct{ tool, input string }{
		{NameRead, `{"file_path":"a.txt","offset":2,"limit":1}`},
		{NameEdit, `{"file_path":"a.txt","old_string":"b","new_string":"c"}`},
		{NameMultiEdit, `{"file_path":"a.txt","edits":[{"old_string":"a","new_string":"b"}]}`},
		{NameLS, `{"path":".","depth":2,"ignore":["*.go"]}`},
		{NameGrep, `{"pattern":"a|b","glob":"*.{txt,go}","output_mode":"files_with_matches"}`},
		{NameTodoWrite, `{"todos":[{"content":"x","status":"pending"}]}`},
		{NameRead, `{"file_path":"../x"}`},
	}
	for _, s := range seeds {
		f.Add(s.tool, s.input)
	}
	dir := f.TempDir()
	for name, content := range map[string]string{"a.txt": "a\nb\nc\n", "sub/b.go": "package b\n", ".gitignore": "*.log\n"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	s, err := New(dir, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, tool, input string) {
		if tool == NameBash || tool == NameWrite {
			return
		}
		r := s.Run(context.Background(), tool, json.RawMessage(input))
		checkResult(t, r)
	})
}
