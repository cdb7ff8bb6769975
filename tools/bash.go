package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// BashData is the Data of a Bash result.
type BashData struct {
	Command string `json:"command"`
	// ExitCode is the shell's exit status, -1 when it was killed by a
	// signal (Signal names it) or did not start.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Stdout and Stderr are the output, each cut to the Set's byte cap
	// keeping its head and its tail with a marker line between; their
	// true sizes are StdoutBytes and StderrBytes. Invalid UTF-8 is
	// replaced by U+FFFD.
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	// Truncated is true when either stream was cut.
	Truncated bool `json:"truncated"`
	// TimedOut is true when the timeout killed the command; Cancelled
	// when the caller did (Ctrl-C). Either way the whole process group was
	// killed.
	TimedOut   bool  `json:"timed_out"`
	Cancelled  bool  `json:"cancelled,omitempty"`
	TimeoutMS  int64 `json:"timeout_ms"`
	DurationMS int64 `json:"duration_ms"`
	// SandboxDenied is true when the command failed as the sandbox makes
	// commands fail ("Permission denied" in its output).
	SandboxDenied bool `json:"sandbox_denied,omitempty"`
}

type bashInput struct {
	Command string `json:"command"`
	// Timeout is in milliseconds, as in Claude Code.
	Timeout     float64 `json:"timeout"`
	Description string  `json:"description"`
}

// bashEnv is set for every command: no pager, no colour, no prompt that
// would wait for input nobody can type.
func bashEnv() []string {
	return []string{"PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "TERM=dumb", "NO_COLOR=1", "CTXKIT_AGENT=1"}
}

// drainGrace is how long output is still read after the process group was
// killed, for a process that escaped the group and holds the pipe open.
const drainGrace = 2 * time.Second

func (s *Set) bash(ctx context.Context, input json.RawMessage) Result {
	return runTool(NameBash, input, func(in *bashInput) Result {
		if strings.TrimSpace(in.Command) == "" {
			return failf(nil, "command is empty")
		}
		if in.Timeout < 0 {
			return failf(nil, "timeout must not be negative (it is in milliseconds)")
		}
		timeout := s.opts.BashTimeout
		var notes []string
		if in.Timeout > 0 {
			// Compare before converting: a huge float overflows a Duration.
			if in.Timeout*float64(time.Millisecond) > float64(s.opts.BashMaxTimeout) {
				notes = append(notes, fmt.Sprintf("(timeout lowered to the maximum, %v)", s.opts.BashMaxTimeout))
				timeout = s.opts.BashMaxTimeout
			} else {
				timeout = max(time.Duration(in.Timeout*float64(time.Millisecond)), time.Millisecond)
			}
		}
		d := &BashData{Command: in.Command, ExitCode: -1, TimeoutMS: timeout.Milliseconds()}
		res, started := s.runShell(ctx, in.Command, timeout, d)
		if started && s.opts.Sandbox != nil && d.ExitCode != 0 && s.opts.Sandbox.Denied(d.Stderr+"\n"+d.Stdout) {
			d.SandboxDenied = true
			notes = append(notes, s.opts.Sandbox.Note())
			s.mu.Lock()
			s.denied = append(s.denied, in.Command)
			s.mu.Unlock()
		}
		if started {
			res.Text = bashText(d, notes)
		}
		return res
	})
}

// runShell runs command with bash -c in the workspace, in a process group
// of its own, and fills d. When the command ends, times out or ctx is
// cancelled, the whole group is killed: no child outlives the call.
func (s *Set) runShell(ctx context.Context, command string, timeout time.Duration, d *BashData) (res Result, started bool) {
	shell, err := exec.LookPath("bash")
	if err != nil {
		return failf(d, "bash is not installed: %v", err), false
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	outR, outW, err := os.Pipe()
	if err != nil {
		return failf(d, "starting bash: %v", err), false
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return failf(d, "starting bash: %v", err), false
	}
	argv := []string{shell, "-c", command}
	if s.opts.Sandbox != nil {
		argv = s.opts.Sandbox.Wrap(argv)
	}
	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir = s.real
	cmd.Env = append(append(slices.Clip(s.opts.Env), bashEnv()...), s.opts.BashEnv...)
	cmd.Stdin = nil // /dev/null
	// Pipes we own, not io.Writers: Wait then returns as soon as bash
	// exits, even if a background child still holds the pipe open.
	cmd.Stdout, cmd.Stderr = outW, errW
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = drainGrace

	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return failf(d, "starting bash: %v", err), false
	}
	stdout := newHeadTail(s.opts.BashMaxOutput)
	stderr := newHeadTail(s.opts.BashMaxOutput)
	var wg sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w *headTail
	}{{outR, stdout}, {errR, stderr}} {
		wg.Go(func() {
			io.Copy(c.w, c.r)
			c.r.Close()
		})
	}
	waitErr := cmd.Wait()
	// Background children (`cmd &`) die with the call. A process that left
	// the group (setsid) keeps running and only loses its pipes.
	if err := killGroup(cmd.Process); err != nil {
		s.opts.Logger.Debug("bash: killing the process group", "err", err)
	}
	outR.SetReadDeadline(time.Now().Add(drainGrace))
	errR.SetReadDeadline(time.Now().Add(drainGrace))
	wg.Wait()
	d.DurationMS = time.Since(start).Milliseconds()

	d.Stdout, d.StdoutBytes = stdout.String()
	d.Stderr, d.StderrBytes = stderr.String()
	d.Truncated = stdout.cut() || stderr.cut()
	if st := cmd.ProcessState; st != nil {
		d.ExitCode = st.ExitCode()
		d.Signal = exitSignal(st)
	}
	switch {
	case ctx.Err() != nil:
		d.Cancelled = true
		return Result{Status: StatusPartial, Data: d, Error: fmt.Sprintf("cancelled (%v); the command and its child processes were killed", context.Cause(ctx))}, true
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		d.TimedOut = true
		return Result{Status: StatusPartial, Data: d, Error: fmt.Sprintf("timed out after %v; the command and its child processes were killed", timeout)}, true
	case d.ExitCode == 0:
		return Result{Status: StatusOK, Data: d}, true
	case d.Signal != "":
		return Result{Status: StatusError, Data: d, Error: "the command was killed by signal " + d.Signal}, true
	case d.ExitCode > 0:
		return Result{Status: StatusError, Data: d, Error: fmt.Sprintf("the command exited with code %d", d.ExitCode)}, true
	}
	return failf(d, "running bash: %v", waitErr), true
}

// bashText is what the model reads of a command's run.
func bashText(d *BashData, notes []string) string {
	var parts []string
	if out := strings.TrimRight(d.Stdout, "\n"); out != "" {
		parts = append(parts, out)
	}
	if errOut := strings.TrimRight(d.Stderr, "\n"); errOut != "" {
		parts = append(parts, "stderr:\n"+errOut)
	}
	if len(parts) == 0 {
		parts = append(parts, "(no output)")
	}
	var status []string
	switch {
	case d.TimedOut:
		status = append(status, fmt.Sprintf("(timed out after %v; the command and its child processes were killed)", time.Duration(d.TimeoutMS)*time.Millisecond))
	case d.Cancelled:
		status = append(status, "(cancelled; the command and its child processes were killed)")
	case d.Signal != "":
		status = append(status, "killed by signal "+d.Signal)
	case d.ExitCode != 0:
		status = append(status, fmt.Sprintf("exit code: %d", d.ExitCode))
	}
	status = append(status, notes...)
	if len(status) > 0 {
		parts = append(parts, strings.Join(status, "\n"))
	}
	return strings.Join(parts, "\n\n")
}

// headTail keeps the first and the last bytes of a stream up to a cap and
// counts them all.
type headTail struct {
	mu    sync.Mutex
	max   int // bytes kept in all, half at each end
	head  []byte
	tail  []byte // the last bytes seen past the head; trimmed lazily
	total int64
}

func newHeadTail(max int) *headTail { return &headTail{max: max} }

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total += int64(len(p))
	n := len(p)
	if room := h.max/2 - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	h.tail = append(h.tail, p...)
	if keep := h.max - h.max/2; len(h.tail) > 2*keep {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-keep:]...)
	}
	return n, nil
}

// cut reports whether bytes were left out.
func (h *headTail) cut() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total > int64(h.max)
}

// String returns the kept output, with a marker where bytes were left out,
// and the true size.
func (h *headTail) String() (string, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.total <= int64(h.max) {
		return strings.ToValidUTF8(string(h.head)+string(h.tail), "\uFFFD"), h.total
	}
	head := h.head
	tail := h.tail[max(0, len(h.tail)-(h.max-h.max/2)):]
	// Cut at line ends when one is near, else at a rune boundary.
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)*3/4 {
		head = head[:i+1]
	} else {
		head = trimPartialRune(head)
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/4 {
		tail = tail[i+1:]
	} else {
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	omitted := h.total - int64(len(head)) - int64(len(tail))
	sep := ""
	if len(head) > 0 && head[len(head)-1] != '\n' {
		sep = "\n"
	}
	out := fmt.Sprintf("%s%s... [%d bytes omitted of %d] ...\n%s", head, sep, omitted, h.total, tail)
	return strings.ToValidUTF8(out, "\uFFFD"), h.total
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
