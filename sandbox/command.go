package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExecArg is the first argument of the helper mode of a program that
// calls [Main]: "PROGRAM __sandbox-exec POLICY -- COMMAND..." applies
// POLICY (JSON) to itself, then runs COMMAND in its place.
const ExecArg = "__sandbox-exec"

// NetworkABI is the first Landlock ABI that can stop TCP connections.
const NetworkABI = 4

// Sandbox runs commands confined by a Policy, through the helper mode of
// a program (the one running, normally).
type Sandbox struct {
	policy Policy
	abi    int
	exe    string
	home   string
}

// New returns the sandbox of p on a kernel whose Landlock ABI is abi (0:
// none), running commands through the helper mode of the program exe. It
// returns nil for Off, and ErrUnsupported when the kernel cannot confine
// commands: the caller must then say so and keep asking before commands
// run, never run them unconfined unasked.
func New(p Policy, abi int, exe string) (*Sandbox, error) {
	if _, err := ParseMode(string(p.Mode)); err != nil {
		return nil, err
	}
	if p.Mode == Off {
		return nil, nil
	}
	if abi < 1 {
		return nil, ErrUnsupported
	}
	home, _ := os.UserHomeDir()
	return &Sandbox{policy: p, abi: abi, exe: exe, home: home}, nil
}

// Policy is the sandbox's policy.
func (s *Sandbox) Policy() Policy { return s.policy }

// NetworkOff reports whether commands are kept off the network (TCP).
func (s *Sandbox) NetworkOff() bool { return !s.policy.Network && s.abi >= NetworkABI }

// Wrap returns the command line that runs argv confined: the program's
// helper mode, which applies the policy and then executes argv in its own
// place (same process, so process groups and signals work as before).
func (s *Sandbox) Wrap(argv []string) []string {
	pol, _ := json.Marshal(s.policy) // plain data: cannot fail
	return append([]string{s.exe, ExecArg, string(pol), "--"}, argv...)
}

// Describe says in one line which sandbox is in force.
func (s *Sandbox) Describe() string {
	var parts []string
	switch s.policy.Mode {
	case ReadOnly:
		parts = append(parts, fmt.Sprintf("%s (Landlock ABI %d): commands write nowhere", ReadOnly, s.abi))
	default:
		parts = append(parts, fmt.Sprintf("%s (Landlock ABI %d): commands write only in %s", s.policy.Mode, s.abi, strings.Join(s.short(s.policy.Writable), ", ")))
	}
	if len(s.policy.Hidden) > 0 {
		parts = append(parts, "cannot read "+strings.Join(s.short(s.policy.Hidden), ", "))
	}
	switch {
	case s.NetworkOff():
		parts = append(parts, "network off (TCP connect and bind denied; --sandbox-network allows them)")
	case s.policy.Network:
		parts = append(parts, "network on (--sandbox-network)")
	default:
		parts = append(parts, fmt.Sprintf("network on (Landlock ABI %d cannot stop it; %d can)", s.abi, NetworkABI))
	}
	return strings.Join(parts, "; ")
}

// Note is what the model reads of the sandbox, in Bash's description and
// after a command it may have stopped: what it stops, so that the model
// can work within it or ask the user.
func (s *Sandbox) Note() string {
	var what string
	switch s.policy.Mode {
	case ReadOnly:
		what = "may write no file"
	default:
		what = "may write only in " + strings.Join(s.policy.Writable, " and ")
	}
	if s.NetworkOff() {
		what += ", and may not use the network"
	}
	note := fmt.Sprintf("Commands run in a %s sandbox: they %s. A \"Permission denied\" there is the sandbox's doing: do not try to get around it; work inside the workspace, or ask the user to run the command.", s.policy.Mode, what)
	if s.policy.Mode == WorkspaceWrite {
		note += " A tool that must write a cache elsewhere can be pointed into $TMPDIR (e.g. GOCACHE=$TMPDIR/go-build); the user can allow a folder with --sandbox-write."
	}
	return note
}

// short writes paths under the home folder as ~/....
func (s *Sandbox) short(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if s.home != "" && within(p, s.home) && p != s.home {
			if rel, err := filepath.Rel(s.home, p); err == nil {
				p = "~/" + rel
			}
		}
		out[i] = p
	}
	return out
}

// Denied reports whether a failed command's output looks like the
// sandbox stopped it. Landlock denies with EACCES (EPERM for some
// operations), which programs print in their own words: "Permission
// denied" (coreutils, Python), "permission denied" (Go), EACCES (Node);
// curl only says it could not connect, which with the network off is the
// sandbox's doing too.
func (s *Sandbox) Denied(output string) bool {
	out := strings.ToLower(output)
	marks := []string{"permission denied", "operation not permitted", "eacces"}
	if s.NetworkOff() {
		marks = append(marks, "failed to connect to", "couldn't connect to server")
	}
	for _, m := range marks {
		if strings.Contains(out, m) {
			return true
		}
	}
	return false
}
