package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/paste"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/transcript"
)

// repl is the interactive session.
type repl struct {
	o       agentOptions
	base    context.Context
	ui      *ui
	s       *agentSession
	out     io.Writer
	errOut  io.Writer
	sig     chan os.Signal
	lines   chan lineResult
	reading bool
	read    func() (string, error)
	// more is true while a message goes on over several lines: the
	// prompt says so.
	more bool
	line *liner.State
}

type lineResult struct {
	text string
	err  error
}

// errAborted is a Ctrl-C at the prompt.
var errAborted = errors.New("aborted")

func runREPL(cmd *cobra.Command, o agentOptions) error {
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	term := isTerminal(stdin) && isTerminal(stdout)
	r := &repl{
		o: o, out: stdout, errOut: stderr,
		// main cancels its context at the first Ctrl-C; here Ctrl-C stops
		// a turn, not the program, so turns run on a context of their own.
		base:  context.WithoutCancel(cmd.Context()),
		ui:    newUI(stdout, stderr, isTerminal(stderr), term && os.Getenv("NO_COLOR") == ""),
		sig:   make(chan os.Signal, 1),
		lines: make(chan lineResult),
	}
	defer r.ui.close()
	signal.Notify(r.sig, os.Interrupt)
	defer signal.Stop(r.sig)

	if term {
		pastes := &paste.Filter{}
		r.line = newLiner(pastes)
		fmt.Fprint(stdout, paste.Enable)
		defer fmt.Fprint(stdout, paste.Disable)
		defer r.line.Close()
		r.line.SetCtrlCAborts(true)
		r.line.SetCompleter(completeCommand)
		hist := historyFile()
		if f, err := os.Open(hist); err == nil {
			r.line.ReadHistory(f)
			f.Close()
		}
		defer func() {
			if hist == "" {
				return
			}
			if f, err := os.OpenFile(hist, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600); err == nil {
				r.line.WriteHistory(f)
				f.Close()
			}
		}()
		r.read = func() (string, error) {
			prompt := "> "
			if r.more {
				prompt = "… "
			}
			s, err := r.line.Prompt(prompt)
			if errors.Is(err, liner.ErrPromptAborted) {
				return s, errAborted
			}
			if err == nil && strings.TrimSpace(s) != "" {
				r.line.AppendHistory(s)
			}
			return pastes.Expand(s), err
		}
	} else {
		br := bufio.NewReader(stdin)
		r.read = func() (string, error) {
			s, err := br.ReadString('\n')
			if err == io.EOF && s != "" {
				err = nil
			}
			return strings.TrimRight(s, "\r\n"), err
		}
	}

	if err := r.askTrust(); err != nil {
		return err
	}
	r.o.ask = r.askPermission
	s, err := openSession(r.base, r.o, r.o.resume, nil, r.ui.event)
	if err != nil {
		return err
	}
	r.s = s
	defer func() { r.s.close() }()
	r.banner(o.resume != "")
	return r.loop()
}

// askTrust asks, once per workspace, whether to trust a workspace whose
// .ctxkit.json makes settings only a trusted workspace may make; the
// answer yes is remembered in the user's config.
func (r *repl) askTrust() error {
	if len(r.o.refused) == 0 {
		return nil
	}
	r.ui.printf("%s\nTrust %s and apply them? Only trust folders whose content you trust. [y/N]\n", r.o.refusedNote(), r.o.workspace)
	answer, err := r.read()
	if err != nil && err != io.EOF && !errors.Is(err, errAborted) {
		return fmt.Errorf("agent: reading input: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
	default:
		r.ui.printf("Not trusted: going on without those settings.\n")
		return nil
	}
	store, err := trustStore()
	if err != nil {
		return err
	}
	if err := store.Add(r.o.workspace); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := r.o.retrust(); err != nil {
		return err
	}
	r.ui.printf("Trusted %s (remembered in %s).\n", r.o.workspace, store.Path)
	return nil
}

// newLiner opens the line editor on the terminal, reading it through
// pastes so that a bracketed paste reaches it as one piece (see package
// paste). liner reads os.Stdin and takes no other reader, so os.Stdin is
// a pipe for the moment NewLiner takes it, and a goroutine copies the
// terminal into the pipe through the filter for as long as the process
// runs; liner still sets the terminal's modes on file descriptor 0.
func newLiner(pastes *paste.Filter) *liner.State {
	pr, pw, err := os.Pipe()
	if err != nil {
		return liner.NewLiner() // pastes arrive as typed lines
	}
	tty := os.Stdin
	os.Stdin = pr
	l := liner.NewLiner()
	os.Stdin = tty
	go func() {
		pastes.Copy(pw, tty)
		pw.Close()
	}()
	return l
}

// historyFile is where the prompt history is kept.
func historyFile() string {
	home, err := ctxkitHome()
	if err != nil {
		return ""
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return ""
	}
	return filepath.Join(home, "history")
}

var replCommands = []string{"/compact", "/context", "/clear", "/clear --keep-summary", "/continue", "/sessions", "/resume", "/help", "/exit", "/quit"}

func completeCommand(line string) []string {
	if !strings.HasPrefix(line, "/") {
		return nil
	}
	var out []string
	for _, c := range replCommands {
		if strings.HasPrefix(c, line) {
			out = append(out, c)
		}
	}
	return out
}

func (r *repl) banner(resumed bool) {
	c := r.s.agent.Conversation()
	what := "new session"
	if resumed {
		what = fmt.Sprintf("resumed session (%d messages)", len(c.Messages))
	}
	r.ui.printf("ctxkit agent · %s via %s · window %s tokens\nworkspace %s · %s %s\nsandbox %s\nType a task; /help lists the commands; Ctrl-C interrupts.\n",
		r.o.Model, r.o.Provider, kilo(r.s.agent.Window()), r.o.workspace, what, r.s.id, r.s.sandboxStatus(r.o))
	r.pendingNote()
}

// pendingNote says so when the session stopped in the middle of a turn.
func (r *repl) pendingNote() {
	if r.s.agent.Pending() {
		r.ui.printf("The last turn did not finish. Type a message to go on with it, or /continue to resume it as it was.\n")
	}
}

// startRead starts reading the next line of input, unless a read is
// already waiting; its result arrives on r.lines.
func (r *repl) startRead() {
	if r.reading {
		return
	}
	r.reading = true
	go func() {
		s, err := r.read()
		r.lines <- lineResult{s, err}
	}()
}

// next waits for a line of input or a Ctrl-C.
func (r *repl) next() (string, error) {
	r.startRead()
	select {
	case l := <-r.lines:
		r.reading = false
		return l.text, l.err
	case <-r.sig:
		return "", errAborted
	}
}

// message reads the next message: a line, or several when each but the
// last ends with a backslash (typed, or Alt-Enter). A paste is part of one
// line whatever it holds.
func (r *repl) message() (string, error) {
	text, err := r.next()
	var sb strings.Builder
	for err == nil && strings.HasSuffix(text, `\`) {
		sb.WriteString(strings.TrimSuffix(text, `\`) + "\n")
		r.more = true
		text, err = r.next()
	}
	r.more = false
	if sb.Len() > 0 && (err == nil || err == io.EOF) {
		return sb.String() + text, nil
	}
	return text, err
}

func (r *repl) loop() error {
	aborted := false
	for {
		text, err := r.message()
		switch {
		case errors.Is(err, errAborted):
			// liner has echoed ^C and cleared the line; a second Ctrl-C
			// in a row leaves.
			if aborted {
				return nil
			}
			aborted = true
			r.ui.printf("(Ctrl-C again to exit)\n")
			continue
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("agent: reading input: %w", err)
		}
		aborted = false
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "/") {
			quit, err := r.command(text)
			if err != nil {
				r.ui.warnf("%v", err)
			}
			if quit {
				return nil
			}
			continue
		}
		r.turn(text)
	}
}

// turn runs one user turn; Ctrl-C cancels it.
func (r *repl) turn(prompt string) {
	ctx, cancel := context.WithCancel(r.base)
	done := make(chan struct{})
	go func() {
		select {
		case <-r.sig:
			cancel()
		case <-done:
		}
	}()
	_, err := r.s.agent.Run(ctx, prompt)
	close(done)
	cancel()
	r.s.saveStamps()
	r.ui.finish()
	switch {
	case errors.Is(err, agent.ErrInterrupted):
		r.ui.warnf("Interrupted. The session is intact; type to go on, or /continue.")
	case err != nil:
		r.ui.warnf("error: %v", err)
		if r.s.agent.Pending() {
			r.ui.warnf("The turn stopped before the model answered; /continue tries again.")
		}
	}
}

// command runs a slash command; quit reports /exit.
func (r *repl) command(line string) (quit bool, err error) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/exit", "/quit":
		return true, nil
	case "/help":
		r.ui.printf("%s", replHelp)
	case "/compact":
		ctx, cancel := r.interruptible()
		res, err := r.s.agent.Compact(ctx, arg)
		cancel()
		r.ui.finish()
		if errors.Is(err, agent.ErrInterrupted) {
			r.ui.warnf("Interrupted: not compacted.")
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("compact: %w", err)
		}
		if res.Compactions == 0 && res.Note == "" {
			r.ui.printf("Nothing to compact.\n")
		}
	case "/context":
		r.ui.printf("%sSandbox: %s.\n", renderContext(r.s.agent.Context(), r.s.agent.Stats(), r.ui.color), r.s.sandboxStatus(r.o))
	case "/continue":
		if !r.s.agent.Pending() {
			return false, errors.New("no turn is waiting to go on")
		}
		r.turn("")
	case "/clear":
		keep := false
		switch arg {
		case "":
		case "--keep-summary":
			keep = true
		default:
			return false, fmt.Errorf("/clear takes no argument but --keep-summary")
		}
		return false, r.clear(keep)
	case "/sessions":
		return false, r.sessions()
	case "/resume":
		if arg == "" {
			id, err := r.previousSession()
			if err != nil {
				return false, err
			}
			arg = id
		}
		if arg == r.s.id {
			return false, fmt.Errorf("session %s is the current one", arg)
		}
		s, err := openSession(r.base, r.o, arg, nil, r.ui.event)
		if err != nil {
			return false, err
		}
		r.s.close()
		r.s = s
		r.ui.printf("Resumed session %s (%d messages).\n", s.id, len(s.agent.Conversation().Messages))
		r.pendingNote()
	default:
		return false, fmt.Errorf("unknown command %s; /help lists the commands", name)
	}
	return false, nil
}

// interruptible is a context Ctrl-C cancels, for a long command.
func (r *repl) interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.base)
	done := make(chan struct{})
	go func() {
		select {
		case <-r.sig:
			cancel()
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// clear starts a new session; with keep, it begins with the old one's
// summary.
func (r *repl) clear(keep bool) error {
	var carry []conv.Block
	if keep {
		sums := r.s.agent.Summaries()
		if len(sums) == 0 {
			r.ui.printf("No summary yet: compacting first.\n")
			ctx, cancel := r.interruptible()
			_, err := r.s.agent.Compact(ctx, "")
			cancel()
			r.ui.finish()
			if err != nil {
				return fmt.Errorf("/clear --keep-summary: %w", err)
			}
			sums = r.s.agent.Summaries()
			if len(sums) == 0 {
				return errors.New("/clear --keep-summary: the session is too short to summarize; use /clear")
			}
		}
		carry = sums
	}
	old := r.s.id
	s, err := openSession(r.base, r.o, "", carry, r.ui.event)
	if err != nil {
		return err
	}
	r.s.close()
	r.s = s
	msg := "Started a new session %s (the previous one, %s, can be resumed with /resume).\n"
	if keep {
		msg = "Started a new session %s from the summary of %s.\n"
	}
	r.ui.printf(msg, s.id, old)
	return nil
}

// previousSession is the most recent session other than the current one.
func (r *repl) previousSession() (string, error) {
	root, err := sessionsDir()
	if err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(root)
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name()
		if name == r.s.id {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, name, transcript.FileName)); err == nil {
			return name, nil
		}
	}
	return "", errors.New("no other session to resume (/sessions lists them)")
}

// sessions lists the most recent sessions.
func (r *repl) sessions() error {
	root, err := sessionsDir()
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	if len(ids) > 20 {
		ids = ids[:20]
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  SESSION\tMESSAGES\tFIRST TASK")
	for _, id := range ids {
		st, err := transcript.OpenReadOnly(filepath.Join(root, id))
		if err != nil {
			continue
		}
		c := st.Conversation()
		st.Close()
		mark := " "
		if id == r.s.id {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %s\t%d\t%s\n", mark, id, len(c.Messages), firstTask(c))
	}
	w.Flush()
	r.ui.printf("%s", sb.String())
	return nil
}

// firstTask is the first words the user typed in a conversation.
func firstTask(c *conv.Conversation) string {
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser {
				t := strings.Join(strings.Fields(b.Text), " ")
				if r := []rune(t); len(r) > 60 {
					t = string(r[:57]) + "..."
				}
				return t
			}
		}
	}
	return "-"
}

const replHelp = `Commands:
  /compact [FOCUS]         summarize earlier turns now, keeping FOCUS in detail
  /context                 show what fills the context window, by category
  /clear                   start a new, empty session (this one can be resumed)
  /clear --keep-summary    start a new session from this one's summary
  /continue                go on with a turn that was interrupted
  /sessions                list recent sessions
  /resume [ID]             switch to another session (an id or a unique prefix;
                           without one, the most recent other session)
  /help                    this list
  /exit                    leave (also /quit, Ctrl-D, or Ctrl-C twice)
Ctrl-C while the agent works stops the turn; the session stays intact.
End a line with \ (or press Alt-Enter) to go on to another line of the same
message; a paste is one message, shown as [Pasted text #N] until you press
Enter.
`

// contextMarks are the bar characters of /context, per category.
var contextMarks = map[string]string{
	agent.CatSystem: "S", agent.CatTools: "T", agent.CatRules: "R", agent.CatSummaries: "Σ",
	agent.CatUser: "U", agent.CatReminders: "I", agent.CatAssistant: "A", agent.CatCalls: "C",
	agent.CatResults: "F", agent.CatCompressed: "c", agent.CatCleared: "x",
}

var contextColors = map[string]string{
	agent.CatSystem: "90", agent.CatTools: "36", agent.CatRules: "34", agent.CatSummaries: "35",
	agent.CatUser: "32", agent.CatReminders: "33", agent.CatAssistant: "37", agent.CatCalls: "96",
	agent.CatResults: "31", agent.CatCompressed: "91", agent.CatCleared: "2",
}

const contextBarWidth = 50

// renderContext draws /context: a bar of the window by category, then a
// line per category, then the thresholds.
func renderContext(rep agent.ContextReport, st agent.Stats, color bool) string {
	var sb strings.Builder
	pct := func(n int) string {
		if rep.Window <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(rep.Window))
	}
	fmt.Fprintf(&sb, "Context: %s of %s tokens (%s) · %s\n", kilo(rep.Total), kilo(rep.Window), pct(rep.Total), rep.Model)
	// The bar: each category gets its share of the cells, at least one
	// when it holds anything.
	cells := 0
	sb.WriteString("[")
	for _, c := range rep.Categories {
		if c.Tokens == 0 {
			continue
		}
		n := max(int(float64(c.Tokens)*contextBarWidth/float64(max(rep.Window, 1))+0.5), 1)
		n = min(n, contextBarWidth-cells)
		if n <= 0 {
			continue
		}
		seg := strings.Repeat(contextMarks[c.Key], n)
		if color {
			seg = "\033[" + contextColors[c.Key] + "m" + seg + "\033[0m"
		}
		sb.WriteString(seg)
		cells += n
	}
	sb.WriteString(strings.Repeat(".", max(contextBarWidth-cells, 0)))
	sb.WriteString("]\n")
	for _, c := range rep.Categories {
		fmt.Fprintf(&sb, "  %s %-26s %9s %6s\n", contextMarks[c.Key], c.Name, textfmt.Thousands(c.Tokens), pct(c.Tokens))
	}
	fmt.Fprintf(&sb, "  . %-26s %9s %6s\n", "Free space", textfmt.Thousands(rep.Free), pct(rep.Free))
	b := rep.Budget
	fmt.Fprintf(&sb, "Auto-compaction at %s tokens (soft), %s (hard), down to %s; effective window %s.\n",
		kilo(b.Soft), kilo(b.Hard), kilo(b.Target), kilo(b.Effective))
	level := map[string]string{"none": "below the soft threshold", "soft": "over the soft threshold", "hard": "over the hard threshold"}[rep.Level]
	if level == "" {
		level = rep.Level
	}
	fmt.Fprintf(&sb, "Measured now: %s tokens (%s)", kilo(rep.Measured), level)
	if rep.LastPrompt > 0 {
		fmt.Fprintf(&sb, "; last prompt reported by the provider: %s", textfmt.Thousands(rep.LastPrompt))
	}
	sb.WriteString(".\n")
	fmt.Fprintf(&sb, "%s in %s · %s · %s compressed, %s cleared · cache hit rate %.0f%% · provider/estimate token ratio %.2f.\n",
		textfmt.Count(rep.Messages, "message", "messages"), textfmt.Count(rep.Rounds, "round", "rounds"),
		textfmt.Count(st.Compactions, "compaction", "compactions"), fmt.Sprint(st.Compressed), fmt.Sprint(st.Cleared), 100*st.CacheHitRate, st.TokenRatio)
	fmt.Fprintf(&sb, "Saved so far against sending everything: $%.4f.\n", rep.Saved)
	if rep.Stopped != "" {
		fmt.Fprintf(&sb, "Automatic compaction is stopped: %s\n", rep.Stopped)
	}
	if len(rep.Decisions) > 0 {
		sb.WriteString("Latest decisions of the engine:\n")
		for _, d := range rep.Decisions {
			when := fmt.Sprintf("request %d", d.Request)
			if d.Times > 1 {
				when = fmt.Sprintf("requests %d–%d (%d times)", d.First, d.Request, d.Times)
			}
			fmt.Fprintf(&sb, "  %s: %s\n", when, d.Decision)
		}
	}
	if rep.Total > rep.Window {
		fmt.Fprintf(&sb, "The context exceeds the %s-token window by %s tokens: run /compact, or /clear --keep-summary.\n", kilo(rep.Window), kilo(rep.Total-rep.Window))
	}
	return sb.String()
}
