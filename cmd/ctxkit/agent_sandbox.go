package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ctxkit/ctxkit/sandbox"
)

// addSandboxFlags adds the sandbox's flags; their help says which sandbox
// this machine's kernel allows.
func addSandboxFlags(f *pflag.FlagSet, o *agentOptions) {
	f.StringVar(&o.Sandbox, "sandbox", "", `where the agent's commands may write: workspace-write (the workspace and the session's temporary folder), read-only (nowhere) or off (anywhere you can) (default "workspace-write"; `+kernelSandbox(sandbox.ABI())+")")
	f.BoolVar(&o.SandboxNetwork, "sandbox-network", false, "let sandboxed commands use the network (TCP), which they cannot by default")
	f.StringArrayVar(&o.SandboxWrite, "sandbox-write", nil, "another folder sandboxed commands may write in, e.g. ~/.cache/go-build (repeatable; config key sandbox_write)")
}

// kernelSandbox says what the sandbox can do on a kernel of Landlock ABI
// abi.
func kernelSandbox(abi int) string {
	switch {
	case abi < 1:
		return "this kernel has no Landlock: commands are asked about instead"
	case abi < sandbox.NetworkABI:
		return fmt.Sprintf("this kernel: Landlock ABI %d, files only, the network stays open", abi)
	}
	return fmt.Sprintf("this kernel: Landlock ABI %d, files and network", abi)
}

// checkSandbox reads the sandbox settings. Where the kernel cannot confine
// commands and the user did not turn the sandbox off, commands are asked
// about, even in bypass mode, and sandboxNote says so: a command never
// runs unconfined unasked unless the user chose that.
func (o *agentOptions) checkSandbox() error {
	mode, err := sandbox.ParseMode(o.Sandbox)
	if err != nil {
		return fmt.Errorf("agent: --sandbox: %w", err)
	}
	o.sandboxMode = mode
	o.sandboxWrite = nil
	for _, w := range o.SandboxWrite {
		abs, err := filepath.Abs(expandHome(w))
		if err != nil {
			return fmt.Errorf("agent: --sandbox-write %s: %w", w, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return fmt.Errorf("agent: --sandbox-write %s is not a folder", w)
		}
		o.sandboxWrite = append(o.sandboxWrite, abs)
	}
	probe := o.landlockABI
	if probe == nil {
		probe = sandbox.ABI
	}
	o.abi = probe()
	o.sandboxNote = ""
	if mode != sandbox.Off && o.abi < 1 {
		o.sandboxNote = "this kernel has no Landlock, so commands cannot be sandboxed: Bash commands are asked about before they run, in every permission mode (refused with -p unless an allow rule names them); --sandbox off runs them unconfined"
		o.checker.AskUnconfined("the sandbox is not available on this kernel (no Landlock), so commands need the user's approval")
	}
	return nil
}

// hiddenPaths are what sandboxed commands may not read: keys and
// credentials, and ctxkit's own home (sessions, config).
func hiddenPaths() []string {
	var out []string
	if home, err := os.UserHomeDir(); err == nil {
		for _, p := range []string{".ssh", ".gnupg", ".aws", ".netrc"} {
			out = append(out, filepath.Join(home, p))
		}
	}
	if h, err := ctxkitHome(); err == nil {
		out = append(out, h)
	}
	return out
}

// openSandbox makes a session's sandbox and its temporary folder (removed
// with the session); nil when there is none (off, or no Landlock).
func (o agentOptions) openSandbox(id string) (sb *sandbox.Sandbox, tmp string, err error) {
	if o.sandboxMode == sandbox.Off || o.abi < 1 {
		return nil, "", nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("agent: sandbox: finding ctxkit's own program: %w", err)
	}
	pol := sandbox.Policy{Mode: o.sandboxMode, Hidden: hiddenPaths(), Network: o.SandboxNetwork}
	if o.sandboxMode == sandbox.WorkspaceWrite {
		if tmp, err = os.MkdirTemp("", "ctxkit-"+id+"-"); err != nil {
			return nil, "", fmt.Errorf("agent: sandbox: %w", err)
		}
		pol.Writable = append([]string{o.workspace, tmp}, o.sandboxWrite...)
	}
	if sb, err = sandbox.New(pol, o.abi, exe); err != nil {
		os.RemoveAll(tmp)
		return nil, "", fmt.Errorf("agent: sandbox: %w", err)
	}
	return sb, tmp, nil
}

// sandboxStatus says which sandbox a session's commands run in.
func (s *agentSession) sandboxStatus(o agentOptions) string {
	switch {
	case s.sandbox != nil:
		return s.sandbox.Describe()
	case o.sandboxMode == sandbox.Off:
		return "off (--sandbox off): commands run with all your rights"
	}
	return "none: " + o.sandboxNote
}

// expandHome reads a leading ~/ as the home folder, for --sandbox-write.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
