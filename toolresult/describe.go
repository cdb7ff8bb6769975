package toolresult

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Facts are what a placeholder or a recall index says about a tool
// result: the tool, its key argument, how it ended and how big it was.
// Take them from the result as it arrived, before any rung changed it.
type Facts struct {
	Tool    string
	Arg     string
	Lines   int // 0: not known
	Exit    int
	HasExit bool
	IsErr   bool
}

// FactsOf returns the facts of result, produced by call.
func FactsOf(result *conv.Block, call Call) Facts {
	f := Facts{Tool: call.Tool, Arg: call.Arg(), IsErr: result.IsError}
	if f.Tool == "" {
		f.Tool = result.Name
	}
	if f.Tool == "" {
		f.Tool = "tool"
	}
	if code, ok := ExitCode(result); ok && (call.Kind == KindBash || code != 0) {
		f.Exit, f.HasExit = code, true
	}
	text := result.ResultText()
	if o, ok := codexOutput(text); ok {
		text = o.Output
	}
	if text != "" {
		f.Lines = strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
	}
	return f
}

// Describe is the one-line description of the result:
//
//	Bash "go test ./..." exit 1, 240 lines
func (f Facts) Describe() string {
	var sb strings.Builder
	sb.WriteString(f.Tool)
	if f.Arg != "" {
		sb.WriteString(" ")
		sb.WriteString(Quote(f.Arg, 80))
	}
	var parts []string
	switch {
	case f.HasExit:
		parts = append(parts, "exit "+strconv.Itoa(f.Exit))
	case f.IsErr:
		parts = append(parts, "error")
	}
	switch {
	case f.Lines == 1:
		parts = append(parts, "1 line")
	case f.Lines > 1:
		parts = append(parts, textfmt.Thousands(f.Lines)+" lines")
	}
	if len(parts) > 0 {
		sb.WriteString(" ")
		sb.WriteString(strings.Join(parts, ", "))
	}
	return sb.String()
}

// Brief is the shortest description that still tells one result from
// another: the tool, its key argument cut to 48 runes, and a failing exit
// status. A compaction's recall index lists many of them.
//
//	Bash "go test ./..." exit 1
func (f Facts) Brief() string {
	s := f.Tool
	if f.Arg != "" {
		s += " " + Quote(f.Arg, 48)
	}
	switch {
	case f.HasExit && f.Exit != 0:
		s += " exit " + strconv.Itoa(f.Exit)
	case f.IsErr:
		s += " error"
	}
	return s
}

// Placeholder is the rung-2 text of a result: its description and the
// recall id that gives the original back:
//
//	[cleared: Bash "go test ./..." exit 1, 240 lines — recall b17]
func (f Facts) Placeholder(id string) string { return f.PlaceholderFor(id, "") }

// PlaceholderFor is Placeholder naming the recall tool the model has
// (Recall).
func (f Facts) PlaceholderFor(id, tool string) string {
	return "[cleared: " + f.Describe() + " — " + Recall(id, tool) + "]"
}

// Recall is how every text left in place of an original names the way
// back: "recall b17", or, when the model's recall tool has a name of its
// own (an MCP server's, as a proxied client sees it), the call to make:
//
//	call mcp__ctxkit__recall with id "b17"
func Recall(id, tool string) string {
	if tool == "" {
		return DefaultRecallTool + " " + id
	}
	return "call " + tool + ` with id "` + id + `"`
}

// DefaultRecallTool is the recall tool's name when the model's has none of
// its own (the agent's).
const DefaultRecallTool = "recall"

// IsRecall reports whether a call of tool name is a call of the model's
// recall tool, tool ("" for DefaultRecallTool): its result is an original
// the model asked to have back.
func IsRecall(name, tool string) bool {
	if tool == "" {
		tool = DefaultRecallTool
	}
	return name != "" && strings.EqualFold(name, tool)
}

// Quote shows s in double quotes on one line, cut to max runes; of a
// multi-line command (a heredoc, an SWE-agent edit) only the first line.
func Quote(s string, max int) string {
	s = strings.TrimSpace(s)
	if first, _, ok := strings.Cut(s, "\n"); ok {
		s = first + " …"
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
