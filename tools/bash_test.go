//go:build linux

package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spawnTree starts, in the background of the command, a subshell with two
// sleeping children, and records every pid in the file pids: the shell
// itself, the subshell and both sleeps.
const spawnTree = `echo $$ > pids
( sleep 1000 & echo $! >> pids; sleep 1000 & echo $! >> pids; wait ) &
echo $! >> pids
echo started
wait`

// readPids returns the pids the command recorded.
func readPids(t *testing.T, dir string) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		return nil
	}
	var pids []int
	for f := range strings.FieldsSeq(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pids file: %v", err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// alive reports whether pid runs (a zombie waiting to be reaped by init
// does not count) and, when it does, its process group.
func alive(pid int) (bool, int) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false, 0
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return false, 0
	}
	pgrp, _ := strconv.Atoi(f[2])
	return true, pgrp
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ok, g := alive(pid); ok && g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// waitAllDead waits until none of pids runs and the group is empty. SIGKILL
// is delivered asynchronously, so this polls; it fails only if something
// is still running after a long grace, which means it was never killed.
func waitAllDead(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var living []int
		for _, pid := range pids {
			if ok, _ := alive(pid); ok {
				living = append(living, pid)
			}
		}
		living = append(living, groupMembers(pids[0])...)
		if len(living) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the command survived it", living)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
}

// TestBashTimeoutKillsGroup: a timeout kills the shell and every process
// it started, background children of subshells included.
func TestBashTimeoutKillsGroup(t *testing.T) {
	requireProc(t)
	s, dir := newSet(t, nil)
	// The tree must be complete before the timeout fires; on a loaded
	// machine try again with a longer timeout.
	for timeout := 1000; ; timeout *= 2 {
		os.Remove(filepath.Join(dir, "pids"))
		r := run(t, s, NameBash, map[string]any{"command": spawnTree, "timeout": timeout})
		pids := readPids(t, dir)
		if len(pids) < 4 {
			if timeout >= 16000 {
				t.Fatalf("the command never started its children: %v\n%s", pids, r.Render())
			}
			waitAllDead(t, pids)
			continue
		}
		if r.Status != StatusPartial || !strings.Contains(r.Error, "timed out after") {
			t.Fatalf("status %s error %q", r.Status, r.Error)
		}
		d := r.Data.(*BashData)
		if !d.TimedOut || d.ExitCode != -1 || d.Signal != "killed" || d.TimeoutMS != int64(timeout) || d.Stdout != "started\n" {
			t.Errorf("data %+v", d)
		}
		if !strings.Contains(r.Text, "started") || !strings.Contains(r.Text, "timed out after") {
			t.Errorf("text %q", r.Text)
		}
		waitAllDead(t, pids)
		return
	}
}

// TestBashCancelKillsGroup: cancelling the context (Ctrl-C) kills the
// whole group too.
func TestBashCancelKillsGroup(t *testing.T) {
	requireProc(t)
	s, dir := newSet(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result)
	go func() {
		done <- s.Run(ctx, NameBash, mustJSON(t, map[string]any{"command": spawnTree}))
	}()
	var pids []int
	for len(pids) < 4 {
		select {
		case r := <-done:
			t.Fatalf("command ended before it was cancelled: %s", r.Render())
		case <-time.After(10 * time.Millisecond):
		}
		pids = readPids(t, dir)
	}
	cancel()
	r := <-done
	checkResult(t, r)
	d := r.Data.(*BashData)
	if r.Status != StatusPartial || !d.Cancelled || d.TimedOut {
		t.Errorf("status %s data %+v", r.Status, d)
	}
	waitAllDead(t, pids)
}

// TestBashBackgroundChildDiesWithCall: a command that leaves a child in
// the background returns at once, and the child is killed.
func TestBashBackgroundChildDiesWithCall(t *testing.T) {
	requireProc(t)
	s, dir := newSet(t, nil)
	r := run(t, s, NameBash, map[string]any{"command": "echo $$ > pids; sleep 1000 & echo $! >> pids; echo bye"})
	wantOK(t, r)
	if r.Text != "bye" {
		t.Errorf("text %q", r.Text)
	}
	waitAllDead(t, readPids(t, dir))
}

// TestBashEscapedChildDoesNotHang: a process that left the group (and so
// survives it, as documented) and holds the output pipe does not keep the
// call waiting past the drain grace.
func TestBashEscapedChildDoesNotHang(t *testing.T) {
	requireProc(t)
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	s, dir := newSet(t, nil)
	// The escaped process writes its pid once it has its own session; the
	// command ends only after that, so the escape has surely happened.
	cmd := `setsid bash -c 'echo $$ > esc; exec sleep 1000' & while [ ! -s esc ]; do sleep 0.01; done; echo done`
	r := run(t, s, NameBash, map[string]any{"command": cmd, "timeout": 60000})
	data, _ := os.ReadFile(filepath.Join(dir, "esc"))
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
		defer syscall.Kill(pid, syscall.SIGKILL)
		if ok, _ := alive(pid); !ok {
			t.Log("the escaped process died anyway")
		}
	}
	wantOK(t, r)
	if d := r.Data.(*BashData); d.TimedOut || d.Stdout != "done\n" {
		t.Errorf("data %+v", d)
	}
}

func TestBashOutputCapKeepsHeadAndTail(t *testing.T) {
	s, _ := newSetOpts(t, nil, Options{BashMaxOutput: 1000})
	cmd := `echo HEAD-MARK; for i in $(seq 1 5000); do echo "line $i"; done; echo TAIL-MARK; ` +
		`echo ERR-HEAD >&2; head -c 50000 /dev/zero | tr '\0' 'e' >&2; echo >&2; echo ERR-TAIL >&2`
	r := run(t, s, NameBash, map[string]any{"command": cmd})
	wantOK(t, r)
	d := r.Data.(*BashData)
	var size int64 = 10 + 10
	for i := 1; i <= 5000; i++ {
		size += int64(len("line \n") + len(strconv.Itoa(i)))
	}
	if d.StdoutBytes != size || d.StderrBytes != 9+50000+1+9 || !d.Truncated {
		t.Errorf("sizes %d %d (want %d %d), truncated %v", d.StdoutBytes, d.StderrBytes, size, 9+50000+1+9, d.Truncated)
	}
	for _, tc := range []struct{ out, head, tail string }{{d.Stdout, "HEAD-MARK\nline 1\n", "line 5000\nTAIL-MARK\n"}, {d.Stderr, "ERR-HEAD\n", "\nERR-TAIL\n"}} {
		if !strings.HasPrefix(tc.out, tc.head) || !strings.HasSuffix(tc.out, tc.tail) {
			t.Errorf("head or tail lost:\n%s", tc.out)
		}
		if !strings.Contains(tc.out, "bytes omitted of") || len(tc.out) > 1100 {
			t.Errorf("output of %d bytes has no omission marker or is over the cap", len(tc.out))
		}
	}
	// The marker counts exactly what is missing.
	head, rest, _ := strings.Cut(d.Stdout, "... [")
	num, rest, _ := strings.Cut(rest, " bytes omitted of ")
	_, tail, _ := strings.Cut(rest, "] ...\n")
	omitted, _ := strconv.Atoi(num)
	if int64(len(head)+omitted+len(tail)) != d.StdoutBytes {
		t.Errorf("head %d + omitted %d + tail %d != %d", len(head), omitted, len(tail), d.StdoutBytes)
	}
	if !strings.Contains(r.Text, "HEAD-MARK") || !strings.Contains(r.Text, "stderr:\nERR-HEAD") || !strings.HasSuffix(r.Text, "ERR-TAIL") {
		t.Errorf("text:\n%s", r.Text)
	}
}

func TestBashResults(t *testing.T) {
	s, dir := newSetOpts(t, nil, Options{BashEnv: []string{"CTXKIT_TEST_VAR=hello"}, BashMaxTimeout: 5 * time.Second})
	real, _ := filepath.EvalSymlinks(dir)
	tests := []struct {
		name     string
		input    map[string]any
		status   Status
		exit     int
		signal   string
		text     string
		errorSub string
	}{
		{"ok", map[string]any{"command": "echo hi"}, StatusOK, 0, "", "hi", ""},
		{"no output", map[string]any{"command": "true"}, StatusOK, 0, "", "(no output)", ""},
		{"exit code", map[string]any{"command": "echo out; echo err >&2; exit 3"}, StatusError, 3, "", "out\n\nstderr:\nerr\n\nexit code: 3", "the command exited with code 3"},
		{"signal", map[string]any{"command": "kill -9 $$"}, StatusError, -1, "killed", "(no output)\n\nkilled by signal killed", "killed by signal killed"},
		{"stdin is closed", map[string]any{"command": "cat; echo eof", "timeout": 4000}, StatusOK, 0, "", "eof", ""},
		{"workspace is the working folder", map[string]any{"command": "pwd"}, StatusOK, 0, "", real, ""},
		{"environment", map[string]any{"command": "echo $CTXKIT_TEST_VAR $PAGER $GIT_TERMINAL_PROMPT"}, StatusOK, 0, "", "hello cat 0", ""},
		{"timeout clamped", map[string]any{"command": "true", "timeout": 999999}, StatusOK, 0, "", "(no output)\n\n(timeout lowered to the maximum, 5s)", ""},
		{"huge timeout clamped", map[string]any{"command": "true", "timeout": 1e300}, StatusOK, 0, "", "(no output)\n\n(timeout lowered to the maximum, 5s)", ""},
		{"invalid UTF-8", map[string]any{"command": `printf 'a\xffb'`}, StatusOK, 0, "", "a\uFFFDb", ""},
		{"syntax error", map[string]any{"command": "if then"}, StatusError, 2, "", "", "exited with code 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, s, NameBash, tt.input)
			d := r.Data.(*BashData)
			if r.Status != tt.status || d.ExitCode != tt.exit || d.Signal != tt.signal {
				t.Fatalf("status %s exit %d signal %q; want %s %d %q\n%s", r.Status, d.ExitCode, d.Signal, tt.status, tt.exit, tt.signal, r.Render())
			}
			if tt.text != "" && r.Text != tt.text {
				t.Errorf("text %q, want %q", r.Text, tt.text)
			}
			if !strings.Contains(r.Error, tt.errorSub) || d.Command != tt.input["command"] || d.TimedOut {
				t.Errorf("error %q data %+v", r.Error, d)
			}
		})
	}
	wantError(t, run(t, s, NameBash, map[string]any{"command": "true", "timeout": -5}), "timeout must not be negative")
}
