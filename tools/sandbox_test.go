package tools

import (
	"slices"
	"strings"
	"testing"
)

// fakeSandbox runs commands through env(1) with a marker variable, and
// says a command was stopped when its output says "Permission denied".
type fakeSandbox struct{}

func (fakeSandbox) Wrap(argv []string) []string {
	return append([]string{"env", "CTXKIT_TEST_SANDBOXED=yes"}, argv...)
}
func (fakeSandbox) Note() string { return "Commands run in a test sandbox." }
func (fakeSandbox) Denied(out string) bool {
	return strings.Contains(out, "Permission denied")
}

func TestBashSandbox(t *testing.T) {
	s, _ := newSetOpts(t, map[string]string{"a.txt": "a\n"}, Options{Sandbox: fakeSandbox{}})
	if d := s.Schemas()[s.index[NameBash]].Description; !strings.HasSuffix(d, "\nCommands run in a test sandbox.") {
		t.Errorf("Bash's description does not say the sandbox: %q", d)
	}
	tests := []struct {
		command string
		denied  bool
		text    string
	}{
		{"echo $CTXKIT_TEST_SANDBOXED", false, "yes"},
		// A failure of another kind is not the sandbox's.
		{"echo nope >&2; exit 1", false, "stderr:\nnope\n\nexit code: 1"},
		// Success with the words in it is not a denial either.
		{"echo Permission denied", false, "Permission denied"},
		{"echo \"touch: cannot touch '/x': Permission denied\" >&2; exit 1", true, "stderr:\ntouch: cannot touch '/x': Permission denied\n\nexit code: 1\nCommands run in a test sandbox."},
	}
	for _, tt := range tests {
		r := run(t, s, NameBash, map[string]any{"command": tt.command})
		d := r.Data.(*BashData)
		if d.SandboxDenied != tt.denied || r.Text != tt.text {
			t.Errorf("%s: denied %v text %q; want %v %q", tt.command, d.SandboxDenied, r.Text, tt.denied, tt.text)
		}
	}
	if got := s.SandboxDenials(); !slices.Equal(got, []string{tests[3].command}) {
		t.Errorf("SandboxDenials = %q", got)
	}
}

// The read-only sandbox: file changes are refused, reads are not.
func TestReadOnly(t *testing.T) {
	s, dir := newSetOpts(t, map[string]string{"a.txt": "a\n"}, Options{ReadOnly: true})
	wantOK(t, run(t, s, NameRead, map[string]any{"file_path": "a.txt"}))
	for _, c := range []struct {
		name  string
		input map[string]any
	}{
		{NameWrite, map[string]any{"file_path": "b.txt", "content": "b"}},
		{NameEdit, map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"}},
		{NameMultiEdit, map[string]any{"file_path": "a.txt", "edits": []map[string]any{{"old_string": "a", "new_string": "b"}}}},
	} {
		wantError(t, run(t, s, c.name, c.input), "the sandbox is read-only")
	}
	if got := readFile(t, dir+"/a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q", got)
	}
}
