package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ctxkit/ctxkit/sandbox"
)

// TestMain lets the test binary run as the ctxkit command inside the
// scripts, so they exercise the real main.
func TestMain(m *testing.M) {
	// A session a test opens runs its commands through this binary's
	// sandbox helper mode, as ctxkit's own main does.
	if len(os.Args) > 1 && os.Args[1] == sandbox.ExecArg {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"ctxkit": main,
	})
}

// TestScripts runs the CLI scripts in testdata/script, one per command.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		// The agent scripts start test model servers (agent_test.go).
		Setup: scriptSetup,
		Cmds:  scriptCmds(t),
		// [landlock]: the kernel can sandbox files and the network.
		// [chardev:PATH]: PATH is a character device.
		Condition: func(cond string) (bool, error) {
			if cond == "landlock" {
				return sandbox.ABI() >= sandbox.NetworkABI, nil
			}
			if path, ok := strings.CutPrefix(cond, "chardev:"); ok {
				return isCharDevice(path), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
