package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary be its own helper, as ctxkit is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ExecArg {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// tree makes a home with a .ssh, a ctxkit home, a workspace and a file
// beside them, all resolved.
func tree(t *testing.T) (home, ws string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(root, "home")
	ws = filepath.Join(home, "src", "proj")
	for _, d := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".ctxkit", "sessions"), ws, filepath.Join(home, "docs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".ssh/id_ed25519", ".ctxkit/config.json", ".gitconfig", "docs/a.txt", "src/proj/main.go"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A link to the keys must not lead to them; a link elsewhere works.
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, "docs"), filepath.Join(home, "papers")); err != nil {
		t.Fatal(err)
	}
	return home, ws
}

func TestRules(t *testing.T) {
	home, ws := tree(t)
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	pol := Policy{Mode: WorkspaceWrite, Writable: []string{ws, tmp}, Hidden: []string{filepath.Join(home, ".ssh"), filepath.Join(home, ".ctxkit"), filepath.Join(home, "gone")}}
	for _, tc := range []struct {
		mode   Mode
		path   string
		access Access
		want   bool
	}{
		{WorkspaceWrite, ws + "/main.go", Write, true},
		{WorkspaceWrite, ws + "/new/deep.txt", Write, true},
		{WorkspaceWrite, tmp + "/x", Write, true},
		{WorkspaceWrite, home + "/docs/a.txt", Read, true},
		{WorkspaceWrite, home + "/docs/a.txt", Write, false},
		{WorkspaceWrite, home + "/.gitconfig", Read, true},
		{WorkspaceWrite, home + "/escape.txt", Write, false},
		{WorkspaceWrite, home + "/.ssh/id_ed25519", Read, false},
		{WorkspaceWrite, home + "/.ssh", List, true}, // names show, contents do not
		{WorkspaceWrite, home + "/.ctxkit/config.json", Read, false},
		{WorkspaceWrite, home + "/.ctxkit/sessions", Read, false},
		{WorkspaceWrite, home, List, true},
		{WorkspaceWrite, home, Read, false},
		{WorkspaceWrite, "/usr/bin/env", Read, true},
		{WorkspaceWrite, "/etc/passwd", Write, false},
		{WorkspaceWrite, "/dev/null", Write, true},
		{ReadOnly, ws + "/main.go", Read, true},
		{ReadOnly, ws + "/main.go", Write, false},
		{ReadOnly, tmp + "/x", Write, false},
		{ReadOnly, "/dev/null", Write, true},
		{ReadOnly, home + "/.ssh/id_ed25519", Read, false},
	} {
		p := pol
		p.Mode = tc.mode
		rs, err := Rules(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := rs.Allows(tc.path, tc.access); got != tc.want {
			t.Errorf("%s: Allows(%s, %s) = %v, want %v", tc.mode, tc.path, tc.access, got, tc.want)
		}
	}
	// The links: the one to the keys is not granted, the other is.
	rs, _ := Rules(pol)
	var keys, papers bool
	for _, r := range rs.Rules {
		keys = keys || r.Path == home+"/keys"
		papers = papers || r.Path == home+"/papers"
	}
	if keys || !papers {
		t.Errorf("link rules: keys %v (want false), papers %v (want true)", keys, papers)
	}
}

// A hidden path inside a writable folder cannot be hidden: Rules says so.
func TestRulesExposed(t *testing.T) {
	home, _ := tree(t)
	rs, err := Rules(Policy{Mode: WorkspaceWrite, Writable: []string{home}, Hidden: []string{filepath.Join(home, ".ssh")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Exposed) != 1 || !rs.Allows(home+"/.ssh/id_ed25519", Read) {
		t.Errorf("Exposed = %v; .ssh readable %v", rs.Exposed, rs.Allows(home+"/.ssh/id_ed25519", Read))
	}
	if _, err := Rules(Policy{Mode: WorkspaceWrite, Writable: []string{filepath.Join(home, "nope")}}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing writable folder: err = %v", err)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		mode    Mode
		abi     int
		network bool
		want    string
		err     error
	}{
		{Off, 0, false, "", nil},
		{WorkspaceWrite, 0, false, "", ErrUnsupported},
		{ReadOnly, 0, false, "", ErrUnsupported},
		{"yolo", 7, false, "", ErrMode},
		{WorkspaceWrite, 7, false, "workspace-write (Landlock ABI 7): commands write only in /ws, /tmp/s; cannot read /h/.ssh; network off (TCP connect and bind denied; --sandbox-network allows them)", nil},
		{WorkspaceWrite, 7, true, "workspace-write (Landlock ABI 7): commands write only in /ws, /tmp/s; cannot read /h/.ssh; network on (--sandbox-network)", nil},
		{WorkspaceWrite, 3, false, "workspace-write (Landlock ABI 3): commands write only in /ws, /tmp/s; cannot read /h/.ssh; network on (Landlock ABI 3 cannot stop it; 4 can)", nil},
		{ReadOnly, 4, false, "read-only (Landlock ABI 4): commands write nowhere; cannot read /h/.ssh; network off (TCP connect and bind denied; --sandbox-network allows them)", nil},
	} {
		s, err := New(Policy{Mode: tc.mode, Writable: []string{"/ws", "/tmp/s"}, Hidden: []string{"/h/.ssh"}, Network: tc.network}, tc.abi, "ctxkit")
		if !errors.Is(err, tc.err) {
			t.Errorf("%s ABI %d: err = %v, want %v", tc.mode, tc.abi, err, tc.err)
			continue
		}
		if err != nil || tc.mode == Off {
			if s != nil {
				t.Errorf("%s ABI %d: a sandbox with err %v", tc.mode, tc.abi, err)
			}
			continue
		}
		if got := s.Describe(); got != tc.want {
			t.Errorf("%s ABI %d:\n got %s\nwant %s", tc.mode, tc.abi, got, tc.want)
		}
	}
}

// runIn runs a bash command confined by pol through the test binary's
// helper mode, and returns its combined output and error.
func runIn(t *testing.T, pol Policy, command string) (string, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(pol, ABI(), exe)
	if err != nil {
		t.Fatal(err)
	}
	argv := s.Wrap([]string{"bash", "-c", command})
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// TestKernel runs commands under the real kernel's Landlock.
func TestKernel(t *testing.T) {
	if ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	home, ws := tree(t)
	pol := Policy{Mode: WorkspaceWrite, Writable: []string{ws}, Hidden: []string{filepath.Join(home, ".ssh")}}
	out, err := runIn(t, pol, "cd "+ws+" && touch inside.txt && mkdir -p sub && mv inside.txt sub/ && echo ok > /dev/null && cat "+home+"/docs/a.txt && ls "+home+"/.ssh")
	if err != nil {
		t.Fatalf("inside the workspace: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "sub", "inside.txt")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(out, "id_ed25519") {
		t.Errorf("ls ~/.ssh: %q, want the names", out)
	}
	for _, cmd := range []string{"touch " + home + "/escape.txt", "cat " + home + "/.ssh/id_ed25519", "cat " + home + "/keys/id_ed25519", "echo x >> " + home + "/docs/a.txt"} {
		out, err := runIn(t, pol, "cd "+ws+" && "+cmd)
		if err == nil || !(&Sandbox{}).Denied(out) {
			t.Errorf("%s: err %v, output %q; want Permission denied", cmd, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "escape.txt")); err == nil {
		t.Error("escape.txt was written")
	}
	// No signal reaches a process outside the sandbox (ABI 6 scopes).
	if ABI() >= 6 {
		if out, err := runIn(t, pol, fmt.Sprintf("kill -0 %d", os.Getpid())); err == nil || !(&Sandbox{}).Denied(out) {
			t.Errorf("kill -0 the test process: err %v, output %q", err, out)
		}
	}
	// Read-only: not even the workspace.
	pol.Mode = ReadOnly
	if out, err := runIn(t, pol, "touch "+ws+"/ro.txt"); err == nil || !(&Sandbox{}).Denied(out) {
		t.Errorf("read-only: err %v, output %q", err, out)
	}
	// A bad policy never runs the command.
	exe, _ := os.Executable()
	bad, err := exec.Command(exe, ExecArg, "{", "--", "touch", filepath.Join(ws, "bad.txt")).CombinedOutput()
	if err == nil || !strings.Contains(string(bad), "ctxkit sandbox: reading the policy") {
		t.Errorf("bad policy: err %v, output %q", err, bad)
	}
	if _, err := os.Stat(filepath.Join(ws, "bad.txt")); err == nil {
		t.Error("the command ran with a bad policy")
	}
}

// TestKernelNetwork: a TCP connect to a loopback listener fails in the
// sandbox unless the policy allows the network.
func TestKernelNetwork(t *testing.T) {
	if ABI() < NetworkABI {
		t.Skipf("Landlock ABI %d cannot stop TCP", ABI())
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, ws := tree(t)
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)
	pol := Policy{Mode: WorkspaceWrite, Writable: []string{ws}}
	if out, err := runIn(t, pol, connect); err == nil || !(&Sandbox{}).Denied(out) {
		t.Errorf("network off: err %v, output %q; want Permission denied", err, out)
	}
	pol.Network = true
	if out, err := runIn(t, pol, connect); err != nil || !strings.Contains(out, "connected") {
		t.Errorf("network on: err %v, output %q", err, out)
	}
}

func TestDenied(t *testing.T) {
	off, err := New(Policy{Mode: WorkspaceWrite}, 7, "ctxkit")
	if err != nil {
		t.Fatal(err)
	}
	on, _ := New(Policy{Mode: WorkspaceWrite, Network: true}, 7, "ctxkit")
	for _, tc := range []struct {
		out     string
		off, on bool // Denied with the network off, on
	}{
		{"touch: cannot touch '/x': Permission denied", true, true},
		{"dial tcp 127.0.0.1:80: connect: permission denied", true, true},
		{"PermissionError: [Errno 1] Operation not permitted", true, true},
		{"Error: EACCES: permission denied, open '/x'", true, true},
		{"curl: (7) Failed to connect to 127.0.0.1 port 80 after 0 ms: Couldn't connect to server", true, false},
		{"FAIL: TestX (0.00s)", false, false},
	} {
		if got := off.Denied(tc.out); got != tc.off {
			t.Errorf("network off: Denied(%q) = %v", tc.out, got)
		}
		if got := on.Denied(tc.out); got != tc.on {
			t.Errorf("network on: Denied(%q) = %v", tc.out, got)
		}
	}
}

// BenchmarkCommand: what the sandbox adds to a command's start (the
// helper's start, the rules, the exec), against running it directly.
func BenchmarkCommand(b *testing.B) {
	if ABI() < 1 {
		b.Skip("this kernel has no Landlock")
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	s, err := New(Policy{Mode: WorkspaceWrite, Writable: []string{b.TempDir()}, Hidden: []string{filepath.Join(home, ".ssh")}}, ABI(), exe)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		argv []string
	}{{"direct", []string{"true"}}, {"sandboxed", s.Wrap([]string{"true"})}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if out, err := exec.Command(bc.argv[0], bc.argv[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
