package summarize

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Extractive builds a summary from the structure of the messages, without
// a model: deterministic, offline and fast. It is the fallback when a model
// summary fails, and the default when no model is configured.
//
// Its sections match the Coding template's: the task (the first user
// message), user messages verbatim (bounded; constraints first), the
// execution frontier (the latest todo list, the last stated next step), key
// decisions (assistant sentences that state a choice, a cause or a next
// step), the artifact trail (every file created, modified or deleted and
// how, from the tool calls; see Artifacts), errors met (the key lines of
// error results), the current work, and the commands run with their exit
// codes. When the text would exceed the target, the least important lines
// go first (commands, then decisions, then older user messages and
// errors); the artifact trail and the task are always kept.
type Extractive struct{}

// NewExtractive returns the extractive summarizer.
func NewExtractive() *Extractive { return &Extractive{} }

// Bounds for text quoted verbatim.
const (
	maxTaskChars       = 1500
	maxUserChars       = 1200
	maxConstraintChars = 2000
	maxCurrentChars    = 600
)

// Summarize implements Summarizer.
func (e *Extractive) Summarize(ctx context.Context, in Input) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	d := newDraft(in.Counter)
	n := 0
	results := make(map[string]*conv.Block)
	for i := range in.Messages {
		for j := range in.Messages[i].Blocks {
			b := &in.Messages[i].Blocks[j]
			if b.Type == conv.TypeToolResult {
				results[b.ToolUseID] = b
			}
			if b.Type != conv.TypeSummary {
				n++
			}
		}
	}
	if n == 0 {
		return Output{}, ErrNothing
	}

	// Task and user messages.
	first := true
	var lastNext, lastText string
	var lastCall *conv.Block
	var todoList []todo
	for i := range in.Messages {
		m := &in.Messages[i]
		if t := userText(m); t != "" {
			if first {
				d.add(SecTask, 90, quoteBlock(t, maxTaskChars))
				first = false
			} else if IsConstraint(t) {
				d.add(SecUser, 85, fmt.Sprintf("- turn %d: %s", m.Turn, quoteInline(t, maxConstraintChars)))
			} else {
				d.add(SecUser, 60, fmt.Sprintf("- turn %d: %s", m.Turn, quoteInline(t, maxUserChars)))
			}
		}
		if t := assistantText(m); t != "" {
			lastText = t
			for _, s := range decisions(t) {
				d.add(SecDecisions, 30, "- "+s)
				lastNext = s
			}
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Type != conv.TypeToolUse {
				continue
			}
			lastCall = b
			if ts, ok := todos(b); ok {
				todoList = ts
			}
			res := results[b.ToolUseID]
			if cmd, ok := shellCommand(b); ok {
				line := "- `" + clip(oneLine(cmd), 120) + "`"
				if res != nil {
					if code, ok := ExitCode(res.ResultText()); ok {
						line += " → exit " + code
					} else if res.IsError {
						line += " → error"
					}
				}
				d.add(SecCommands, 20, line)
			}
			if res != nil && IsErrorResult(res) {
				lines := ErrorLines(res.ResultText(), 3)
				d.add(SecErrors, 70, fmt.Sprintf("- turn %d, %s: %s", m.Turn, clip(callLabel(b), 80), strings.Join(lines, " | ")))
			}
		}
	}
	if first {
		d.add(SecTask, 90, "(no user message in this span: the user's words stay verbatim in the conversation)")
	}

	// Execution frontier.
	if len(todoList) > 0 {
		for _, st := range []string{"completed", "in_progress", "pending"} {
			var items []string
			for _, t := range todoList {
				if t.Status == st || (st == "pending" && t.Status != "completed" && t.Status != "in_progress") {
					items = append(items, clip(t.Content, 120))
				}
			}
			if len(items) > 0 {
				label := map[string]string{"completed": "Done", "in_progress": "In progress", "pending": "Pending"}[st]
				d.add(SecProgress, 80, "- "+label+": "+strings.Join(items, "; "))
			}
		}
	}
	if lastNext != "" {
		d.add(SecProgress, 80, "- Last stated next step: "+lastNext)
	}
	if lastCall != nil {
		line := "- Last action: " + clip(callLabel(lastCall), 160)
		if res := results[lastCall.ToolUseID]; res != nil {
			if IsErrorResult(res) {
				line += " (failed)"
			} else {
				line += " (ok)"
			}
		}
		d.add(SecProgress, 80, line)
	}
	if lastText != "" {
		d.add(SecCurrent, 75, quoteBlock(lastText, maxCurrentChars))
	}

	// Artifact trail: every changed file, one line each; files only read
	// on one line at the end.
	var read []string
	for _, a := range Artifacts(in.Messages) {
		if !a.Changed() {
			read = append(read, a.Path)
			continue
		}
		d.add(SecArtifacts, 100, artifactLine(a))
	}
	if len(read) > 0 {
		shown := read
		if len(shown) > 20 {
			shown = shown[:20]
		}
		l := "- read only: " + strings.Join(shown, ", ")
		if len(read) > len(shown) {
			l += fmt.Sprintf(" (+%d more)", len(read)-len(shown))
		}
		d.add(SecArtifacts, 15, l)
	}

	text := d.render(in.TargetTokens, []string{SecTask, SecUser, SecProgress, SecDecisions, SecArtifacts, SecErrors, SecCurrent, SecCommands})
	if text == "" {
		return Output{}, ErrEmpty
	}
	return Output{Text: text, Kind: "extractive", Template: Coding}, nil
}

// artifactLine renders one file's operations: "path — created (Write, 40
// lines); edited ×3 (Edit: "a" → "b"; sed -i …)".
func artifactLine(a Artifact) string {
	type group struct {
		op    string
		n     int
		hows  []string
		fails int
	}
	var gs []*group
	idx := make(map[string]*group)
	for _, o := range a.Ops {
		if !o.Writes() {
			continue
		}
		g := idx[o.Op]
		if g == nil {
			g = &group{op: o.Op}
			idx[o.Op] = g
			gs = append(gs, g)
		}
		g.n++
		if o.Failed {
			g.fails++
		}
		if len(g.hows) < 2 && o.How != "" && !slices.Contains(g.hows, o.How) {
			g.hows = append(g.hows, clip(o.How, 90))
		}
	}
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		p := g.op
		if g.n > 1 {
			p += fmt.Sprintf(" ×%d", g.n)
		}
		if len(g.hows) > 0 {
			p += " (" + strings.Join(g.hows, "; ") + ")"
		}
		if g.fails > 0 {
			p += fmt.Sprintf(" [%d failed]", g.fails)
		}
		parts = append(parts, p)
	}
	return "- `" + a.Path + "` — " + strings.Join(parts, "; ")
}

func quoteBlock(s string, n int) string {
	s = textfmt.ClipMiddle(strings.TrimSpace(s), n)
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}

func quoteInline(s string, n int) string {
	s = textfmt.ClipMiddle(strings.TrimSpace(s), n)
	if strings.Contains(s, "\n") {
		return "\n  > " + strings.ReplaceAll(s, "\n", "\n  > ")
	}
	return "“" + s + "”"
}

// draft collects prioritized lines per section and renders them within a
// token budget.
type draft struct {
	counter conv.Counter
	lines   []dline
}

type dline struct {
	sec    string
	prio   int
	order  int
	text   string
	tokens int
}

func newDraft(c conv.Counter) *draft { return &draft{counter: c} }

func (d *draft) add(sec string, prio int, text string) {
	d.lines = append(d.lines, dline{sec: sec, prio: prio, order: len(d.lines), text: text, tokens: count(d.counter, text) + 1})
}

// keepAlways is the priority from which lines are never dropped.
const keepAlways = 90

// render writes the sections in order. When target > 0 and the lines do
// not fit, it drops the lowest-priority lines first, oldest first within
// a priority, and notes in each section how many lines were left out.
func (d *draft) render(target int, order []string) string {
	keep := make([]bool, len(d.lines))
	total := 0
	for i, l := range d.lines {
		keep[i] = true
		total += l.tokens
	}
	for _, s := range order {
		total += count(d.counter, "## "+s) + 2
	}
	if target > 0 && total > target {
		byPrio := make([]int, len(d.lines))
		for i := range byPrio {
			byPrio[i] = i
		}
		slices.SortStableFunc(byPrio, func(a, b int) int {
			la, lb := d.lines[a], d.lines[b]
			return cmp.Or(cmp.Compare(la.prio, lb.prio), cmp.Compare(la.order, lb.order))
		})
		for _, i := range byPrio {
			if total <= target || d.lines[i].prio >= keepAlways {
				break
			}
			keep[i] = false
			total -= d.lines[i].tokens
		}
	}
	var sb strings.Builder
	for _, s := range order {
		var body []string
		dropped := 0
		for i, l := range d.lines {
			if l.sec != s {
				continue
			}
			if keep[i] {
				body = append(body, l.text)
			} else {
				dropped++
			}
		}
		if len(body) == 0 && dropped == 0 {
			continue
		}
		if dropped > 0 {
			body = append(body, fmt.Sprintf("- (%d more left out for space; the transcript has them)", dropped))
		}
		if sb.Len() > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("## " + s + "\n")
		sb.WriteString(strings.Join(body, "\n"))
		sb.WriteString("\n")
	}
	return strings.TrimSpace(sb.String())
}
