package micro

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/toolresult"
)

// facts are what a placeholder says about a result, taken when the
// result is first seen, before any rung changed it.
type facts struct {
	tool    string
	arg     string
	lines   int
	exit    int
	hasExit bool
	isErr   bool
}

func factsOf(result *conv.Block, call toolresult.Call) facts {
	f := facts{tool: call.Tool, arg: call.Arg(), isErr: result.IsError}
	if f.tool == "" {
		f.tool = result.Name
	}
	if f.tool == "" {
		f.tool = "tool"
	}
	if code, ok := toolresult.ExitCode(result); ok && (call.Kind == toolresult.KindBash || code != 0) {
		f.exit, f.hasExit = code, true
	}
	if text := result.ResultText(); text != "" {
		f.lines = strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
	}
	return f
}

// placeholder is the rung-2 text of a result: one line naming the tool,
// its key argument, how it ended and how big it was, and the recall id:
//
//	[cleared: Bash "go test ./..." exit 1, 240 lines — recall b17]
func (f facts) placeholder(id string) string {
	var sb strings.Builder
	sb.WriteString("[cleared: ")
	sb.WriteString(f.tool)
	if f.arg != "" {
		sb.WriteString(" ")
		sb.WriteString(quote(f.arg, 80))
	}
	var parts []string
	switch {
	case f.hasExit:
		parts = append(parts, "exit "+strconv.Itoa(f.exit))
	case f.isErr:
		parts = append(parts, "error")
	}
	switch {
	case f.lines == 1:
		parts = append(parts, "1 line")
	case f.lines > 1:
		parts = append(parts, textfmt.Thousands(f.lines)+" lines")
	}
	if len(parts) > 0 {
		sb.WriteString(" ")
		sb.WriteString(strings.Join(parts, ", "))
	}
	fmt.Fprintf(&sb, " — recall %s]", id)
	return sb.String()
}

// quote shows s in double quotes on one line, cut to max runes; of a
// multi-line command (a heredoc, an SWE-agent edit) only the first line.
func quote(s string, max int) string {
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
