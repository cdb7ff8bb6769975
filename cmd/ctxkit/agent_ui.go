package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/textfmt"
)

// ui shows an agent's progress: streamed text and tool lines on out,
// warnings and context notes on errOut, and, when errOut is a terminal, a
// spinner line while the model thinks, a tool runs or a compaction runs.
// It is safe for concurrent use (parallel tool calls report at once).
type ui struct {
	mu     sync.Mutex
	out    io.Writer
	errOut io.Writer
	spin   bool // draw the spinner on errOut
	color  bool
	// noText leaves streamed text out (one-shot mode prints the final
	// answer by itself).
	noText   bool
	midLine  bool // out holds an unfinished line
	streamed bool // text of the current response was shown

	label    string
	since    time.Time
	spinning bool
	drawn    bool
	frame    int
	stop     chan struct{}
	stopped  sync.Once
}

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newUI(out, errOut io.Writer, terminal, color bool) *ui {
	u := &ui{out: out, errOut: errOut, spin: terminal, color: color, stop: make(chan struct{})}
	if u.spin {
		go u.run()
	}
	return u
}

// run redraws the spinner until close.
func (u *ui) run() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
			u.mu.Lock()
			if u.spinning {
				u.frame++
				u.draw()
			}
			u.mu.Unlock()
		}
	}
}

func (u *ui) close() {
	u.stopped.Do(func() {
		close(u.stop)
		u.mu.Lock()
		u.clear()
		u.mu.Unlock()
	})
}

// draw writes the spinner line; u.mu is held.
func (u *ui) draw() {
	secs := int(time.Since(u.since).Seconds())
	line := fmt.Sprintf("%s %s…", spinFrames[u.frame%len(spinFrames)], u.label)
	if secs >= 1 {
		line += fmt.Sprintf(" (%ds · Ctrl-C to interrupt)", secs)
	}
	fmt.Fprintf(u.errOut, "\r\033[K%s", u.paint(dim, line))
	u.drawn = true
}

// clear removes the spinner line; u.mu is held.
func (u *ui) clear() {
	if u.drawn {
		fmt.Fprint(u.errOut, "\r\033[K")
		u.drawn = false
	}
}

func (u *ui) startSpin(label string) {
	if !u.spin {
		return
	}
	if !u.spinning || u.label != label {
		u.since = time.Now()
	}
	u.label, u.spinning = label, true
}

func (u *ui) stopSpin() {
	u.spinning = false
	u.clear()
}

// endLine finishes a partial line of streamed text.
func (u *ui) endLine() {
	if u.midLine {
		fmt.Fprintln(u.out)
		u.midLine = false
	}
}

const (
	dim    = "2"
	bold   = "1"
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
)

func (u *ui) paint(code, s string) string {
	if !u.color {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

// finish ends the output of a turn.
func (u *ui) finish() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopSpin()
	u.endLine()
}

// printf writes a line of the session's own output (command results).
func (u *ui) printf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopSpin()
	u.endLine()
	fmt.Fprintf(u.out, format, args...)
}

// warnf writes a warning to errOut.
func (u *ui) warnf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stopSpin()
	u.endLine()
	fmt.Fprintln(u.errOut, u.paint(yellow, fmt.Sprintf(format, args...)))
}

// event shows one agent event.
func (u *ui) event(e agent.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch e.Kind {
	case agent.EventRequest:
		u.startSpin("Thinking")
	case agent.EventThinking:
		u.startSpin("Thinking")
	case agent.EventText:
		if u.noText {
			return
		}
		u.stopSpin()
		fmt.Fprint(u.out, e.Text)
		u.streamed = u.streamed || e.Text != ""
		if e.Text != "" {
			u.midLine = !strings.HasSuffix(e.Text, "\n")
		}
	case agent.EventResponse:
		u.stopSpin()
		u.endLine()
		u.streamed = false
	case agent.EventRetry:
		u.stopSpin()
		u.endLine()
		note := ""
		if u.streamed {
			note = " (the response starts over)" // text already shown is sent again
		}
		u.streamed = false
		fmt.Fprintln(u.errOut, u.paint(yellow, "⚠ "+e.Text+note))
	case agent.EventToolStart:
		u.stopSpin()
		u.endLine()
		fmt.Fprintln(u.out, u.paint(cyan, "● ")+agent.Describe(e.Tool, e.Input))
		u.startSpin("Running " + e.Tool)
	case agent.EventToolEnd:
		u.stopSpin()
		u.endLine()
		mark, code := "⎿", dim
		switch e.Status {
		case "error":
			code = red
		case "interrupted", "partial":
			code = yellow
		}
		line := fmt.Sprintf("  %s %s: %s", mark, e.Tool, e.Status)
		if e.Text != "" {
			line += " · " + e.Text
		}
		if e.Duration >= time.Second {
			line += fmt.Sprintf(" · %.1fs", e.Duration.Seconds())
		}
		fmt.Fprintln(u.out, u.paint(code, line))
	case agent.EventMicro:
		m := e.Micro
		var parts []string
		if m.Compressed > 0 {
			parts = append(parts, textfmt.Count(m.Compressed, "result", "results")+" compressed")
		}
		if m.Cleared > 0 {
			parts = append(parts, textfmt.Count(m.Cleared, "result", "results")+" cleared")
		}
		if m.Spilled > 0 {
			parts = append(parts, textfmt.Count(m.Spilled, "oversize result", "oversize results")+" saved to files")
		}
		u.stopSpin()
		u.endLine()
		fmt.Fprintln(u.errOut, u.paint(dim, fmt.Sprintf("· context: %s, %s tokens freed", strings.Join(parts, ", "), kilo(m.Freed))))
	case agent.EventCompactStart:
		// Whether anything gets compacted shows at the end; meanwhile the
		// spinner says what is going on.
		u.startSpin("Compacting the conversation")
	case agent.EventCompactEnd:
		u.stopSpin()
		u.endLine()
		r := e.Compact
		switch {
		case e.Err != nil:
			fmt.Fprintln(u.out, u.paint(yellow, "◆ Compaction failed: "+e.Err.Error()))
		case r != nil && r.Compactions > 0:
			line := fmt.Sprintf("◆ Compacted (%s): %s → %s tokens (%s", e.Trigger, kilo(r.TokensBefore), kilo(r.TokensAfter), textfmt.Count(r.Compactions, "summary", "summaries"))
			for _, f := range r.Fallbacks {
				line += "; fell back to " + f.To
			}
			fmt.Fprintln(u.out, u.paint(cyan, line+")"))
		case r != nil && r.Note != "" && e.Trigger == compact.TriggerManual:
			fmt.Fprintln(u.out, u.paint(dim, "◆ Not compacted: "+r.Note))
		}
	case agent.EventWarning:
		u.stopSpin()
		u.endLine()
		fmt.Fprintln(u.errOut, u.paint(yellow, "warning: "+e.Text))
	case agent.EventNote:
		u.stopSpin()
		u.endLine()
		fmt.Fprintln(u.errOut, u.paint(dim, "note: "+e.Text))
	}
}

// kilo writes a token count compactly: 950, 12.3k, 1.2M.
func kilo(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// isTerminal reports whether w is a terminal (a character device that is
// not /dev/null).
func isTerminal(w any) bool {
	if u, ok := w.(interface{ File() *os.File }); ok {
		w = u.File()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
		return false
	}
	return true
}
