package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/tokens"
)

func newInspectCmd() *cobra.Command {
	var (
		asJSON    bool
		opts      importer.Options
		priceName string
	)
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show where a recorded session's context goes, like Claude Code's /context",
		Long: `Inspect imports a recorded agent session and shows what its context is made
of: tokens by category (system prompt, tool schemas, user text, injected text,
assistant text, thinking, tool calls, tool results by tool, summaries, images),
message and round counts, the ten largest blocks, whether the conversation
meets the invariants, and what the import had to repair or skip. Where the
recording holds the provider's usage (Claude Code, Codex, mini-swe-agent),
it also shows what the session was billed: input, cache writes, cache reads
and output at --pricing.

Supported formats (detected from the content; --format overrides):
  ` + strings.Join(importer.Formats(), ", ") + `

Tokens are estimated (conservatively) with ctxkit's fast estimator.`,
		Example: `  ctxkit inspect ~/.claude/projects/-home-me-repo/5c0375b4.jsonl
  ctxkit inspect --json run.traj.json | jq .tokens`,
		Args: oneFile("ctxkit inspect FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := importer.Load(cmd.Context(), args[0], opts)
			if err != nil {
				return err
			}
			table := defaultPricing(s.Format)
			if priceName != "" {
				var ok bool
				if table, ok = pricing.ByName(priceName); !ok {
					return fmt.Errorf("unknown --pricing %q (known: anthropic, openai, nocache)", priceName)
				}
			}
			r := inspectSession(args[0], s, tokens.NewEstimator())
			r.importDetails = details(s, table)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(r)
			}
			return r.write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of tables")
	cmd.Flags().StringVar(&opts.Format, "format", "", "read FILE as this format instead of detecting it")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "fail on any damaged line or invalid UTF-8 instead of skipping it")
	cmd.Flags().StringVar(&priceName, "pricing", "", "bill the recorded usage at this table: anthropic, openai or nocache (default: the agent's provider)")
	cmd.Flags().BoolVar(&opts.FullOutputs, "full-outputs", false, "put large outputs Claude Code saved beside the session (tool-results/) back in place of the preview the model saw")
	return cmd
}

// report is what inspect shows; its JSON form is the --json output.
type report struct {
	File              string `json:"file"`
	Format            string `json:"format"`
	Model             string `json:"model,omitempty"`
	Messages          int    `json:"messages"`
	UserMessages      int    `json:"user_messages"`
	AssistantMessages int    `json:"assistant_messages"`
	Rounds            int    `json:"rounds"`
	ToolCalls         int    `json:"tool_calls"`
	// OpaqueBlocks are blocks of types ctxkit does not read, kept whole
	// (tool results' content included); ServerToolCalls tools the
	// provider ran itself (a web search).
	OpaqueBlocks      int            `json:"opaque_blocks"`
	ServerToolCalls   int            `json:"server_tool_calls"`
	Tokens            tokenReport    `json:"tokens"`
	ToolResultsByTool map[string]int `json:"tool_results_by_tool"`
	Largest           []largeBlock   `json:"largest"`
	Invariants        invariants     `json:"invariants"`
	Fixes             []conv.Fix     `json:"fixes"`
	Warnings          []string       `json:"warnings"`
	importDetails
}

// tokenReport splits the total by category; Framing is what the provider
// adds around blocks and messages, so the categories sum to Total.
type tokenReport struct {
	Total         int `json:"total"`
	System        int `json:"system"`
	Tools         int `json:"tools"`
	UserText      int `json:"user_text"`
	Injected      int `json:"injected"`
	AssistantText int `json:"assistant_text"`
	Thinking      int `json:"thinking"`
	ToolUse       int `json:"tool_use"`
	ToolResults   int `json:"tool_results"`
	Summaries     int `json:"summaries"`
	Images        int `json:"images"`
	Opaque        int `json:"opaque"` // opaque blocks and server tool calls
	Framing       int `json:"framing"`
}

type largeBlock struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Tool    string `json:"tool,omitempty"`
	Message int    `json:"message"` // -1 for the system prompt
	Turn    int    `json:"turn"`
	Tokens  int    `json:"tokens"`
	Preview string `json:"preview"`
}

type invariants struct {
	OK         bool             `json:"ok"`
	Violations []conv.Violation `json:"violations"`
}

func inspectSession(file string, s *importer.Session, counter conv.Counter) *report {
	c := s.Conv
	r := &report{
		File: file, Format: s.Format, Model: s.Model,
		Messages:          len(c.Messages),
		Rounds:            len(c.Rounds()),
		ToolResultsByTool: map[string]int{},
		Largest:           []largeBlock{},
		Fixes:             s.Fixes,
		Warnings:          s.Warnings,
	}
	if r.Fixes == nil {
		r.Fixes = []conv.Fix{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	t := &r.Tokens
	t.Total = c.Tokens(counter).Total()
	var all []largeBlock
	add := func(msg, turn int, b *conv.Block) {
		all = append(all, largeBlock{ID: b.ID, Type: string(b.Type), Tool: b.Name, Message: msg, Turn: turn, Tokens: conv.BlockTokens(b, counter), Preview: preview(b)})
	}
	for i := range c.System {
		t.System += conv.BlockTokens(&c.System[i], counter)
		add(-1, 0, &c.System[i])
	}
	for i := range c.Tools {
		t.Tools += conv.ToolTokens(&c.Tools[i], counter)
	}
	for i := range c.Pending {
		t.Injected += conv.BlockTokens(&c.Pending[i], counter)
	}
	for i := range c.Messages {
		m := &c.Messages[i]
		if m.Role == conv.RoleUser {
			r.UserMessages++
		} else {
			r.AssistantMessages++
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			n := conv.BlockTokens(b, counter)
			add(i, m.Turn, b)
			switch b.Type {
			case conv.TypeText:
				switch b.Meta.Source {
				case conv.SourceUser:
					t.UserText += n
				case conv.SourceAssistant:
					t.AssistantText += n
				default:
					t.Injected += n
				}
			case conv.TypeThinking, conv.TypeRedactedThinking:
				t.Thinking += n
			case conv.TypeToolUse:
				t.ToolUse += n
				r.ToolCalls++
			case conv.TypeToolResult:
				t.ToolResults += n
				name := b.Name
				if name == "" {
					name = "(unknown)"
				}
				r.ToolResultsByTool[name] += n
			case conv.TypeSummary:
				t.Summaries += n
			case conv.TypeImage:
				t.Images += n
			case conv.TypeOpaque:
				t.Opaque += n
			case conv.TypeServerToolUse:
				t.Opaque += n
			}
		}
	}
	r.OpaqueBlocks, r.ServerToolCalls = c.Opaque()
	t.Framing = t.Total - (t.System + t.Tools + t.UserText + t.Injected + t.AssistantText + t.Thinking + t.ToolUse + t.ToolResults + t.Summaries + t.Images + t.Opaque)
	slices.SortStableFunc(all, func(a, b largeBlock) int { return cmp.Compare(b.Tokens, a.Tokens) })
	r.Largest = append(r.Largest, all[:min(10, len(all))]...)
	vs := conv.Check(c)
	r.Invariants = invariants{OK: len(vs) == 0, Violations: []conv.Violation(vs)}
	if r.Invariants.Violations == nil {
		r.Invariants.Violations = []conv.Violation{}
	}
	return r
}

// preview is a block's text on one line, cut to 60 characters.
func preview(b *conv.Block) string {
	var s string
	switch b.Type {
	case conv.TypeImage:
		return "[image]"
	case conv.TypeRedactedThinking:
		return "[redacted thinking]"
	case conv.TypeOpaque, conv.TypeServerToolUse:
		s = b.NoteText()
	default:
		s = strings.Join(strings.Fields(b.PlainText()), " ")
	}
	const max = 60
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	rs := []rune(s)
	return string(rs[:max-1]) + "…"
}

const barWidth = 30

// bar draws share of total as a row of blocks.
func bar(n, total int) string {
	if total <= 0 || n <= 0 {
		return ""
	}
	w := (n*barWidth + total/2) / total
	return strings.Repeat("█", max(w, 1))
}

func share(n, total int) string {
	if total <= 0 {
		return "0.0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}

func (r *report) write(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	t := r.Tokens
	model := ""
	if r.Model != "" {
		model = " (model " + r.Model + ")"
	}
	fmt.Fprintf(w, "file\t%s\n", r.File)
	fmt.Fprintf(w, "format\t%s%s\n", r.Format, model)
	fmt.Fprintf(w, "messages\t%d (%d user, %d assistant), %s, %s\n", r.Messages, r.UserMessages, r.AssistantMessages, plural(r.Rounds, "round"), plural(r.ToolCalls, "tool call"))
	if r.OpaqueBlocks+r.ServerToolCalls > 0 {
		fmt.Fprintf(w, "kept whole\t%s, %s (not read by ctxkit: counted, sent back unchanged)\n",
			plural(r.OpaqueBlocks, "opaque block"), plural(r.ServerToolCalls, "server tool call"))
	}
	fmt.Fprintf(w, "tokens\t%s total (estimated)\n", textfmt.Thousands(t.Total))
	w.Flush()

	type row struct {
		name string
		n    int
	}
	table := func(title string, rows []row) {
		width := len(title)
		for _, r := range rows {
			width = max(width, utf8.RuneCountInString(r.name))
		}
		fmt.Fprintf(out, "\n%-*s  %9s  %6s\n", width, title, "tokens", "share")
		for _, r := range rows {
			line := fmt.Sprintf("%-*s  %9s  %6s  %s", width, r.name, textfmt.Thousands(r.n), share(r.n, t.Total), bar(r.n, t.Total))
			fmt.Fprintln(out, strings.TrimRight(line, " "))
		}
	}
	table("category", []row{
		{"system prompt", t.System}, {"tool schemas", t.Tools}, {"user text", t.UserText},
		{"injected text", t.Injected}, {"assistant text", t.AssistantText}, {"thinking", t.Thinking},
		{"tool calls", t.ToolUse}, {"tool results", t.ToolResults}, {"summaries", t.Summaries},
		{"images", t.Images}, {"opaque blocks", t.Opaque}, {"framing", t.Framing},
	})
	if len(r.ToolResultsByTool) > 0 {
		var rows []row
		for name, n := range r.ToolResultsByTool {
			rows = append(rows, row{name, n})
		}
		slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.name, b.name)) })
		table("tool results by tool", rows)
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, "largest blocks")
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  id\ttype\ttool\tmsg\ttokens\tpreview\n")
	for _, b := range r.Largest {
		msg := fmt.Sprint(b.Message)
		if b.Message < 0 {
			msg = "sys"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", b.ID, b.Type, b.Tool, msg, textfmt.Thousands(b.Tokens), b.Preview)
	}
	w.Flush()

	fmt.Fprintln(out)
	r.writeDetails(out)
	if r.Invariants.OK {
		fmt.Fprintln(out, "invariants  ok")
	} else {
		fmt.Fprintf(out, "invariants  %d violation(s)\n", len(r.Invariants.Violations))
		for _, v := range r.Invariants.Violations {
			fmt.Fprintf(out, "  %s\n", v)
		}
	}
	section := func(name string, items []string) {
		if len(items) == 0 {
			fmt.Fprintf(out, "%-11s none\n", name)
			return
		}
		fmt.Fprintf(out, "%-11s %d\n", name, len(items))
		for _, it := range items {
			fmt.Fprintf(out, "  %s\n", it)
		}
	}
	fixes := make([]string, len(r.Fixes))
	for i, f := range r.Fixes {
		fixes[i] = f.String()
	}
	section("fixes", fixes)
	section("warnings", r.Warnings)
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
