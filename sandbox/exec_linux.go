package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI is the kernel's Landlock ABI version, 0 when it has none (too old,
// or Landlock not enabled).
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Main is the helper mode (see [ExecArg]): args are what follows ExecArg.
// It confines this process by the policy, then executes the command in
// its place; it returns only on failure, with the exit status to end
// with (126, as a shell's for a command it cannot run) after saying why
// on errOut. It never runs the command unconfined.
func Main(args []string, errOut io.Writer) int {
	if err := run(args); err != nil {
		fmt.Fprintf(errOut, "ctxkit sandbox: %v\n", err)
		return 126
	}
	return 0 // not reached: run execs or fails
}

func run(args []string) error {
	if len(args) < 3 || args[1] != "--" {
		return errors.New("usage: " + ExecArg + " POLICY -- COMMAND [ARG...]")
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return fmt.Errorf("reading the policy: %w", err)
	}
	argv := args[2:]
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	rs, err := Rules(p)
	if err != nil {
		return err
	}
	abi := ABI()
	if abi < 1 {
		return ErrUnsupported
	}
	// V7: files, TCP, and the scopes (no signals to processes outside
	// the sandbox, no abstract Unix sockets made outside it).
	cfg := landlock.V7.BestEffort()
	if p.Network {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.NewRulesetFD(landlockRules(rs, abi)...)
	if err != nil {
		return fmt.Errorf("building the Landlock rules: %w", err)
	}
	if fd < 0 {
		return ErrUnsupported
	}
	// The rules bind this thread and what it executes: stay on it until
	// the exec replaces the whole process.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("applying the Landlock rules: %w", err)
	}
	unix.Close(fd)
	return syscall.Exec(path, argv, os.Environ())
}

// landlockRules turns a RuleSet into go-landlock's rules. A path that is
// gone by the time the rules are built (a file another process removed
// after Rules listed its folder) needs no rule: it is skipped rather than
// failing the command.
func landlockRules(rs RuleSet, abi int) []landlock.Rule {
	var out []landlock.Rule
	for _, r := range rs.Rules {
		var rule landlock.FSRule
		switch {
		case r.Access == List:
			rule = landlock.PathAccess(ll.AccessFSReadDir, r.Path)
		case r.Access == Read && r.Dir:
			rule = landlock.RODirs(r.Path)
		case r.Access == Read:
			rule = landlock.ROFiles(r.Path)
		case r.Dir:
			rule = landlock.RWDirs(r.Path)
			if abi >= 2 { // cross-folder renames and links need Refer
				rule = rule.WithRefer()
			}
		default:
			rule = landlock.RWFiles(r.Path).WithIoctlDev()
		}
		out = append(out, rule.IgnoreIfMissing())
	}
	return out
}
