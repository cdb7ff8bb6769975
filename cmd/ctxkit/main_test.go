package main

import (
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
		Setup: agentScriptSetup,
		Cmds:  scriptCmds(t),
	})
}

// scriptCmds are the custom script commands of every script.
func scriptCmds(t *testing.T) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := agentScriptCmds(t)
	for name, fn := range sessionScriptCmds() {
		cmds[name] = fn
	}
	return cmds
}
