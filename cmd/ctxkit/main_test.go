package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary run as the ctxkit command inside the
// scripts, so they exercise the real main.
func TestMain(m *testing.M) {
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
		Condition: func(cond string) (bool, error) {
			if path, ok := strings.CutPrefix(cond, "chardev:"); ok {
				return isCharDevice(path), nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
