package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ctxkit/ctxkit/conv"
)

// spillRE finds the path of a spilled input or result in a request.
var spillRE = regexp.MustCompile(`/[^\s"'\]]*/spill/[^\s"'\]]+\.txt`)

// spilledPath is the last spill file a request's messages name: a
// scripted call's input says SPILLED to read it back.
func spilledPath(msgs []conv.Message) string {
	found := ""
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if p := spillRE.FindAllString(b.PlainText(), -1); len(p) > 0 {
				found = p[len(p)-1]
			}
		}
	}
	return found
}

// replScriptCmds are the commands the REPL scripts use:
//
//	genlines N FILE          write N numbered lines ("line 1 of the paste
//	                         …") to FILE
//	ptyrun SCRIPT CMD ARG... run CMD on a terminal, playing SCRIPT (ptyRun)
func replScriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"ptyrun": ptyRun,
		"genlines": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: genlines N FILE")
			}
			n, err := strconv.Atoi(args[0])
			ts.Check(err)
			var sb strings.Builder
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&sb, "line %d of the paste, with some words to make it longer than a short note\n", i)
			}
			ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(sb.String()), 0o644))
		},
	}
}

// ansiRE matches the terminal control sequences the line editor and the
// spinner draw with.
var ansiRE = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-Z\\-_])`)

// ptyRun runs a command on a pseudo-terminal, its standard input, output
// and error all on it, the way a user's terminal runs it, and plays a
// script against it. Each line of the script is one action:
//
//	expect REGEX   wait (up to a minute) for REGEX in the output that
//	               follows the previous match, control sequences removed
//	type TEXT      type TEXT, a Go string without its quotes (\r is
//	               Enter, \x1b Esc, \x03 Ctrl-C)
//	paste FILE     paste FILE's content, as a terminal in bracketed-paste
//	               mode sends it: between ESC[200~ and ESC[201~, newlines
//	               as CR
//	sleep MS       wait MS milliseconds
//
// Then it waits for the command to end and prints what it showed, control
// sequences removed, to the script's stdout.
func ptyRun(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: ptyrun SCRIPT COMMAND [ARG...]")
	}
	script := ts.ReadFile(args[0])
	path, err := exec.LookPath(args[1])
	ts.Check(err)
	cmd := exec.Command(path, args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = []string{"TERM=xterm", "NO_COLOR=1"}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "CTXKIT_HOME", "CTXKIT_BASE_URL", "CTXKIT_PERMISSION_MODE",
		"CTXKIT_PROVIDER", "CTXKIT_MODEL", "CTXKIT_WINDOW", "CTXKIT_SUMMARIZER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		if v := ts.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	ts.Check(err)
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	copied := make(chan struct{})
	go func() {
		io.Copy(lockedWriter{&mu, &out}, tty)
		close(copied)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	shown := func() string {
		mu.Lock()
		defer mu.Unlock()
		return ansiRE.ReplaceAllString(out.String(), "")
	}
	from := 0
	for _, line := range strings.Split(script, "\n") {
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "", "#":
		case "expect":
			re, err := regexp.Compile(arg)
			ts.Check(err)
			deadline := time.Now().Add(time.Minute)
			for {
				s := shown()
				if loc := re.FindStringIndex(s[min(from, len(s)):]); loc != nil {
					from += loc[1]
					break
				}
				if time.Now().After(deadline) {
					tty.Close()
					ts.Fatalf("ptyrun: no %q within a minute; the terminal shows:\n%s", arg, s)
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "type":
			text, err := strconv.Unquote(`"` + arg + `"`)
			ts.Check(err)
			_, err = tty.WriteString(text)
			ts.Check(err)
		case "paste":
			data := strings.ReplaceAll(ts.ReadFile(arg), "\n", "\r")
			_, err := tty.WriteString("\x1b[200~" + data + "\x1b[201~")
			ts.Check(err)
		case "sleep":
			ms, err := strconv.Atoi(arg)
			ts.Check(err)
			time.Sleep(time.Duration(ms) * time.Millisecond)
		default:
			ts.Fatalf("ptyrun: unknown action %q", line)
		}
	}
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		err = <-exited
		ts.Fatalf("ptyrun: %s did not exit within a minute; the terminal shows:\n%s", args[1], shown())
	}
	tty.Close()
	<-copied
	fmt.Fprint(ts.Stdout(), shown())
	if err != nil && !neg {
		ts.Fatalf("ptyrun: %s: %v", args[1], err)
	}
	if err == nil && neg {
		ts.Fatalf("ptyrun: %s succeeded unexpectedly", args[1])
	}
}

// lockedWriter is a writer guarded by a mutex.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
