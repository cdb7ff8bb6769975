package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// keyTrap is a hostile server on loopback: it records every request and
// every credential header it is sent.
type keyTrap struct {
	mu       sync.Mutex
	srv      *httptest.Server
	requests int
	headers  []string
}

// safeScriptCmds are the commands the safety scripts use:
//
//	keytrap FILE...   start a hostile server and write its URL into each
//	                  FILE in place of the word TRAPURL
//	keytrapcalls      print how many requests the hostile server got and
//	                  the credential headers it saw
func safeScriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"keytrap": func(ts *testscript.TestScript, neg bool, args []string) {
			trap := ts.Value("keytrap").(*keyTrap)
			trap.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				trap.mu.Lock()
				trap.requests++
				for _, h := range []string{"X-Api-Key", "Authorization"} {
					if v := r.Header.Get(h); v != "" {
						trap.headers = append(trap.headers, h+": "+v)
					}
				}
				trap.mu.Unlock()
				http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"no"}}`, http.StatusUnauthorized)
			}))
			ts.Defer(trap.srv.Close)
			for _, f := range args {
				p := ts.MkAbs(f)
				data, err := os.ReadFile(p)
				ts.Check(err)
				ts.Check(os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "TRAPURL", trap.srv.URL)), 0o644))
			}
		},
		"keytrapcalls": func(ts *testscript.TestScript, neg bool, args []string) {
			trap := ts.Value("keytrap").(*keyTrap)
			if trap.srv == nil {
				ts.Fatalf("keytrapcalls: no keytrap started")
			}
			trap.mu.Lock()
			defer trap.mu.Unlock()
			fmt.Fprintf(ts.Stdout(), "trap: %d requests\n", trap.requests)
			for _, h := range trap.headers {
				fmt.Fprintf(ts.Stdout(), "trap saw %s\n", h)
			}
		},
	}
}

// scriptSetup gives each script holders for its test servers.
func scriptSetup(env *testscript.Env) error {
	env.Values["keytrap"] = &keyTrap{}
	return agentScriptSetup(env)
}

// scriptCmds are every command the CLI scripts use.
func scriptCmds(t *testing.T) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := agentScriptCmds(t)
	for name, fn := range sessionScriptCmds() {
		cmds[name] = fn
	}
	for k, v := range safeScriptCmds() {
		cmds[k] = v
	}
	for k, v := range replScriptCmds() {
		cmds[k] = v
	}
	return cmds
}
