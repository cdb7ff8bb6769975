package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/permission"
	"github.com/ctxkit/ctxkit/sandbox"
	"github.com/ctxkit/ctxkit/tools"
)

// On a kernel without Landlock (simulated) the sandbox cannot be had: the
// agent says so, and commands are asked about even in bypass mode, unless
// the user turned the sandbox off.
func TestSandboxFallback(t *testing.T) {
	cmd, _ := json.Marshal(map[string]string{"command": "touch x"})
	for _, tc := range []struct {
		mode, sandbox string
		abi           int
		want          permission.Decision
		status        string
	}{
		{"bypass", "", 0, permission.Ask, "none: this kernel has no Landlock"},
		{"bypass", "read-only", 0, permission.Ask, "none: this kernel has no Landlock"},
		{"bypass", "off", 0, permission.Allow, "off (--sandbox off)"},
		{"bypass", "", 7, permission.Allow, "workspace-write (Landlock ABI 7)"},
		{"ask", "", 0, permission.Ask, "none: this kernel has no Landlock"},
	} {
		mode, _ := permission.ParseMode(tc.mode)
		checker, err := permission.New(mode, permission.Rules{})
		if err != nil {
			t.Fatal(err)
		}
		o := agentOptions{Sandbox: tc.sandbox, checker: checker, workspace: t.TempDir(), landlockABI: func() int { return tc.abi }}
		t.Setenv("CTXKIT_HOME", t.TempDir())
		t.Setenv("TMPDIR", t.TempDir()) // the session's temporary folder goes there
		if err := o.checkSandbox(); err != nil {
			t.Fatal(err)
		}
		if got, why := o.checker.Check(tools.NameBash, cmd); got != tc.want {
			t.Errorf("%s, --sandbox %q, ABI %d: Bash is %v (%s), want %v", tc.mode, tc.sandbox, tc.abi, got, why, tc.want)
		}
		sb, tmp, err := o.openSandbox("test")
		if err != nil {
			t.Fatal(err)
		}
		if (sb == nil) != (tc.abi == 0 || tc.sandbox == "off") {
			t.Errorf("%s, --sandbox %q, ABI %d: sandbox %v", tc.mode, tc.sandbox, tc.abi, sb)
		}
		s := &agentSession{sandbox: sb, tmp: tmp}
		if got := s.sandboxStatus(o); !strings.HasPrefix(got, tc.status) {
			t.Errorf("%s, --sandbox %q, ABI %d: status %q, want %q…", tc.mode, tc.sandbox, tc.abi, got, tc.status)
		}
		if (o.sandboxNote != "") != (tc.abi == 0 && tc.sandbox != "off") {
			t.Errorf("%s, --sandbox %q, ABI %d: note %q", tc.mode, tc.sandbox, tc.abi, o.sandboxNote)
		}
		if sb != nil && sb.Policy().Mode != sandbox.WorkspaceWrite {
			t.Errorf("mode %s", sb.Policy().Mode)
		}
	}
	o := agentOptions{Sandbox: "off", SandboxWrite: []string{"/no/such/folder"}, landlockABI: func() int { return 7 }}
	if err := o.checkSandbox(); err == nil || !strings.Contains(err.Error(), "--sandbox-write /no/such/folder is not a folder") {
		t.Errorf("a missing --sandbox-write folder: %v", err)
	}
}
