package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/discover"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/tokens"
)

// sessionRow is one line of `ctxkit sessions`.
type sessionRow struct {
	discover.Found
	Format string `json:"format,omitempty"`
	Model  string `json:"model,omitempty"`
	Turns  int    `json:"turns"`
	// Tokens is what the recorded responses were billed for (input, cache
	// reads and writes, output) when the recording has usage; otherwise
	// the conversation's estimated size, with Estimated set.
	Tokens    int      `json:"tokens"`
	Estimated bool     `json:"tokens_estimated,omitempty"`
	Cost      *float64 `json:"recorded_cost_usd,omitempty"`
	Pricing   string   `json:"pricing,omitempty"`
	Error     string   `json:"error,omitempty"`
	// OpaqueBlocks and ServerToolCalls are what the import kept whole
	// without reading it (conv.TypeOpaque, conv.TypeServerToolUse).
	OpaqueBlocks    int `json:"opaque_blocks,omitempty"`
	ServerToolCalls int `json:"server_tool_calls,omitempty"`
}

// mineFlags select the user's own sessions, for `sessions` and `bench --mine`.
type mineFlags struct {
	on     bool
	agents []string
	since  string
	// recorded is the usage the imported sessions recorded, in how many
	// of them, and what it cost, each session at its provider's prices.
	recorded     conv.Usage
	withRecorded int
	recordedUSD  float64
}

// filters names the flags that narrowed the search, for a message that
// found nothing; "" when none did.
func (m *mineFlags) filters() string {
	var fs []string
	if len(m.agents) > 0 {
		fs = append(fs, "--agent "+strings.Join(m.agents, ","))
	}
	if m.since != "" {
		fs = append(fs, "--since "+m.since)
	}
	return strings.Join(fs, " ")
}

// noneFound says that no session was found, naming the filters that may
// have hidden them.
func (m *mineFlags) noneFound() string {
	if f := m.filters(); f != "" {
		return fmt.Sprintf("no agent sessions on this machine match %s (without it, every session found is listed)", f)
	}
	return "no agent sessions found on this machine (see ctxkit sessions --help for where ctxkit looks)"
}

func (m *mineFlags) register(f *pflag.FlagSet, withMine bool) {
	if withMine {
		f.BoolVar(&m.on, "mine", false, "replay the sessions recorded on this machine (see ctxkit sessions) instead of FILES; nothing leaves the machine")
	}
	f.StringSliceVar(&m.agents, "agent", nil, "only these agents: "+strings.Join(discover.Agents(), ", "))
	f.StringVar(&m.since, "since", "", "only sessions modified in this period (30d, 12h, 2w) or since this date (2026-01-31)")
}

// find lists the sessions these flags select.
func (m *mineFlags) find(cmd *cobra.Command) ([]discover.Found, error) {
	opts := discover.Options{Agents: m.agents}
	for _, a := range m.agents {
		if !containsString(discover.Agents(), a) {
			return nil, fmt.Errorf("unknown --agent %q (known: %s)", a, strings.Join(discover.Agents(), ", "))
		}
	}
	if m.since != "" {
		t, err := parseSince(m.since, time.Now())
		if err != nil {
			return nil, err
		}
		opts.Since = t
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("cannot find your home directory: %w", err)
	}
	return discover.Find(cmd.Context(), discover.Env{Home: home, Getenv: os.Getenv, GOOS: runtime.GOOS}, opts)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseSince reads a period before now (30d, 12h, 2w, 90m) or a date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	bad := fmt.Errorf("--since %q: want a period such as 30d, 12h or 2w, or a date such as 2026-01-31", s)
	if len(s) < 2 {
		return time.Time{}, bad
	}
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return time.Time{}, bad
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return time.Time{}, bad
	}
	return now.Add(-time.Duration(n) * unit), nil
}

func newSessionsCmd() *cobra.Command {
	var (
		m         mineFlags
		asJSON    bool
		limit     int
		priceName string
	)
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the agent sessions recorded on this machine, newest first",
		Long: `sessions finds the sessions the coding agents on this machine recorded, at the
places each agent keeps them, and lists them newest first with the agent, the
project, the turns, the tokens and what the recorded usage cost:

  claude-code  $CLAUDE_CONFIG_DIR, else ~/.claude and ~/.config/claude: projects/*/*.jsonl
  codex        $CODEX_HOME, else ~/.codex: sessions/YYYY/MM/DD/rollout-*.jsonl
  gemini-cli   ~/.gemini/tmp/*/chats/session-*.json(l)
  cline, roo-code, kilo-code
               VS Code's (and its forks') globalStorage/<extension>/tasks/*/api_conversation_history.json
  opencode     $XDG_DATA_HOME, else ~/.local/share: opencode/opencode.db, opencode/storage

TOKENS is what the recorded responses were billed for (input, cache writes,
cache reads, output) where the recording has the provider's usage, else the
estimated size of the conversation (marked ~). COST prices the recorded usage
at --pricing (default: openai for Codex, anthropic for the others). Nothing is
sent anywhere: the files are only read.`,
		Example: `  ctxkit sessions
  ctxkit sessions --agent codex --since 7d
  ctxkit bench --mine --since 30d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var table *pricing.Table
			if priceName != "" {
				t, ok := pricing.ByName(priceName)
				if !ok {
					return fmt.Errorf("unknown --pricing %q (known: anthropic, openai, nocache)", priceName)
				}
				table = &t
			}
			if err := checkNonNegative("limit", limit); err != nil {
				return err
			}
			found, err := m.find(cmd)
			if err != nil {
				return err
			}
			more := 0
			if limit > 0 && len(found) > limit {
				found, more = found[:limit], len(found)-limit
			}
			counter := tokens.NewEstimator()
			rows := make([]sessionRow, 0, len(found))
			for _, f := range found {
				if err := cmd.Context().Err(); err != nil {
					return err
				}
				rows = append(rows, describe(cmd, f, table, counter))
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				msg := m.noneFound()
				fmt.Fprintf(out, "%s%s.\n", strings.ToUpper(msg[:1]), msg[1:])
				return nil
			}
			writeSessions(out, rows)
			if more > 0 {
				fmt.Fprintf(out, "… and %d older session(s) (--limit 0 lists all)\n", more)
			}
			return nil
		},
	}
	f := cmd.Flags()
	m.register(f, false)
	f.BoolVar(&asJSON, "json", false, "print the list as JSON")
	f.IntVar(&limit, "limit", 50, "list at most this many sessions (0: all)")
	f.StringVar(&priceName, "pricing", "", "price the recorded usage at this table: anthropic, openai or nocache (default: the agent's provider)")
	return cmd
}

// describe imports one session for its row; a session that does not import
// gets a row saying why.
func describe(cmd *cobra.Command, f discover.Found, table *pricing.Table, counter conv.Counter) sessionRow {
	row := sessionRow{Found: f}
	s, err := importer.Load(cmd.Context(), f.Path, importer.Options{})
	if err != nil {
		var ie *importer.Error
		if errors.As(err, &ie) {
			err = ie.Err
		}
		row.Error = err.Error()
		return row
	}
	row.Format, row.Model, row.Turns = s.Format, s.Model, len(s.Conv.Rounds())
	row.OpaqueBlocks, row.ServerToolCalls = s.Conv.Opaque()
	if s.Cwd != "" {
		row.Project = s.Cwd
	}
	t := defaultPricing(s.Format)
	if table != nil {
		t = *table
	}
	if u, n := s.Conv.RecordedUsage(); n > 0 {
		row.Tokens = u.Input + u.CacheRead + u.CacheWrite + u.Output
		cost := t.Cost(u.Input, u.CacheWrite, u.CacheRead, u.Output)
		row.Cost, row.Pricing = &cost, t.Name
	} else {
		row.Tokens, row.Estimated = s.Conv.Tokens(counter).Total(), true
	}
	return row
}

func writeSessions(out io.Writer, rows []sessionRow) {
	home, _ := os.UserHomeDir()
	short := func(p string) string {
		if home != "" && strings.HasPrefix(p, home+string(filepath.Separator)) {
			return "~" + p[len(home):]
		}
		return p
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "UPDATED\tAGENT\tPROJECT\tTURNS\tTOKENS\tCOST\tSESSION")
	for _, r := range rows {
		tok, cost := textfmt.Thousands(r.Tokens), "-"
		if r.Estimated {
			tok = "~" + tok
		}
		if r.Cost != nil {
			cost = fmt.Sprintf("$%.2f", *r.Cost)
		}
		if r.Error != "" {
			tok, cost = "-", "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Modified.Local().Format("2006-01-02 15:04"), r.Agent, short(r.Project), r.Turns, tok, cost, short(r.Path))
		if r.Error != "" {
			fmt.Fprintf(w, "\t\t  not imported: %s\n", r.Error)
		}
		if r.OpaqueBlocks+r.ServerToolCalls > 0 {
			fmt.Fprintf(w, "\t\t  kept whole: %s, %s\n", plural(r.OpaqueBlocks, "opaque block"), plural(r.ServerToolCalls, "server tool call"))
		}
	}
	w.Flush()
}

// loadMine imports the sessions --mine selects, saying on standard error
// how far it got.
func (m *mineFlags) load(cmd *cobra.Command, args []string, judge bool) ([]bench.Session, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("--mine replays the sessions found on this machine; give no FILES with it (found %d)", len(args))
	}
	if judge {
		return nil, errors.New("--mine keeps your sessions on this machine; --judge would send them to a model, so the two do not go together")
	}
	found, err := m.find(cmd)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, errors.New("--mine: " + m.noneFound())
	}
	stderr := cmd.ErrOrStderr()
	var sessions []bench.Session
	for i, f := range found {
		if err := cmd.Context().Err(); err != nil {
			return nil, err
		}
		progress(stderr, "importing", i+1, len(found))
		s, err := importer.Load(cmd.Context(), f.Path, importer.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "ctxkit bench: skipped: %v\n", err)
			continue
		}
		if u, n := s.Conv.RecordedUsage(); n > 0 {
			// Each session at its own provider's prices, as ctxkit
			// sessions shows it.
			t := defaultPricing(s.Format)
			m.recorded = m.recorded.Add(u)
			m.recordedUSD += t.Cost(u.Input, u.CacheWrite, u.CacheRead, u.Output)
			m.withRecorded++
		}
		ss := benchSessions(f.Agent+":"+filepath.Base(f.Path), s.Conv)
		for i := range ss {
			ss[i].Family = s.Format // the session's agent, as for files
		}
		sessions = append(sessions, ss...)
	}
	if len(sessions) == 0 {
		return nil, errors.New("--mine: none of the sessions found could be imported")
	}
	return sessions, nil
}

// replaySessions replays the sessions one at a time with progress on
// standard error when asked, else all at once.
func replaySessions(cmd *cobra.Command, sessions []bench.Session, opts bench.Options, withProgress bool) ([]bench.Run, error) {
	if !withProgress {
		return bench.Replay(cmd.Context(), sessions, opts)
	}
	var runs []bench.Run
	for i, s := range sessions {
		progress(cmd.ErrOrStderr(), "replaying", i+1, len(sessions))
		if i+1 == len(sessions) && isTerminal(cmd.ErrOrStderr()) {
			fmt.Fprintln(cmd.ErrOrStderr()) // end the bar's line
		}
		rs, err := bench.Replay(cmd.Context(), []bench.Session{s}, opts)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	return runs, nil
}

// progress prints a progress bar on w: redrawn in place on a terminal, a
// line at a time otherwise (a log, a pipe).
func progress(w io.Writer, what string, done, total int) {
	const width = 20
	n := done * width / max(total, 1)
	end := "\n"
	if isTerminal(w) {
		end = "\r"
	}
	fmt.Fprintf(w, "ctxkit bench: %-9s [%s%s] %d/%d%s", what, strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, end)
}

// benchSessions is what the benchmark replays of one recording: the
// conversation, or when the agent compacted it (recorded epochs), each
// epoch as the model saw it, since a recorded summary replaced everything
// before it.
func benchSessions(name string, c *conv.Conversation) []bench.Session {
	if len(c.Epochs) == 0 {
		return []bench.Session{{Name: name, Conv: c}}
	}
	out := make([]bench.Session, 0, len(c.Epochs)+1)
	for k := 0; k <= len(c.Epochs); k++ {
		e := c.Epoch(k).Clone()
		e.Epochs, e.Skipped = nil, nil
		out = append(out, bench.Session{Name: fmt.Sprintf("%s (epoch %d of %d)", name, k+1, len(c.Epochs)+1), Conv: e})
	}
	return out
}

// summary says, under the report, what the sessions were billed as recorded
// and what ctxkit's strategy costs in the replay, at the bench's pricing.
func (m *mineFlags) summary(out io.Writer, rep *bench.Report, t pricing.Table) {
	if m.withRecorded > 0 {
		u := m.recorded
		fmt.Fprintf(out, "Recorded usage of %d session(s), each at its provider's prices (as ctxkit sessions shows them): $%.2f (%s input, %s cache writes, %s cache reads, %s output tokens).\n",
			m.withRecorded, m.recordedUSD,
			textfmt.Thousands(u.Input), textfmt.Thousands(u.CacheWrite), textfmt.Thousands(u.CacheRead), textfmt.Thousands(u.Output))
	}
	var none, ctx *bench.StrategyReport
	for i := range rep.Strategies {
		switch rep.Strategies[i].Name {
		case "none":
			none = &rep.Strategies[i]
		case "ctxkit":
			ctx = &rep.Strategies[i]
		}
	}
	if none != nil && ctx != nil && none.CostUSD > 0 {
		fmt.Fprintf(out, "Replayed, sending everything costs $%.2f and ctxkit's strategy $%.2f: %.1f%% saved.\n",
			none.CostUSD, ctx.CostUSD, 100*(1-ctx.CostUSD/none.CostUSD))
	}
}
