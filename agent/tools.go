package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
)

// RecallToolName is the name of the recall tool.
const RecallToolName = toolresult.DefaultRecallTool

// parallel reports whether a tool only reads, so that calls to it in one
// response may run at once. Calls that change files or run commands run
// one after another in the order the model gave them: it may have meant
// "edit, then test".
func parallel(name string) bool {
	switch name {
	case tools.NameRead, tools.NameLS, tools.NameGrep, RecallToolName:
		return true
	}
	return false
}

// runTools runs the calls of one response and returns their results in
// the calls' order. Runs of read-only calls go concurrently. A compact
// call is not run here: its result says it is scheduled, and its input is
// returned for the loop to act on once the results are recorded. Calls
// not started or cut short because ctx was cancelled get InterruptedText.
func (a *Agent) runTools(ctx context.Context, calls []conv.Block) ([]conv.Block, []byte) {
	results := make([]conv.Block, len(calls))
	var compactInput []byte
	for i := 0; i < len(calls); {
		j := i + 1
		if parallel(calls[i].Name) {
			for j < len(calls) && parallel(calls[j].Name) {
				j++
			}
		}
		if j-i == 1 {
			results[i] = a.runTool(ctx, &calls[i])
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Go(func() { results[k] = a.runTool(ctx, &calls[k]) })
			}
			wg.Wait()
		}
		i = j
	}
	for i := range calls {
		if calls[i].Name == compact.ToolName && !results[i].IsError && compactInput == nil {
			compactInput = []byte("{}")
			if len(calls[i].Input) > 0 {
				compactInput = append([]byte(nil), calls[i].Input...)
			}
		}
	}
	return results, compactInput
}

// runTool runs one call and returns its tool_result.
func (a *Agent) runTool(ctx context.Context, call *conv.Block) conv.Block {
	id, name := call.ToolUseID, call.Name
	if ctx.Err() != nil {
		a.emit(Event{Kind: EventToolEnd, Tool: name, ID: id, Status: "interrupted", Text: "not run: " + InterruptedText})
		return interrupted(call, nil)
	}
	switch name {
	case compact.ToolName:
		return conv.NewToolResult(id, name, compact.ToolResult, false)
	case RecallToolName:
		a.emit(Event{Kind: EventToolStart, Tool: name, ID: id, Input: call.Input})
		text, err := transcript.RunRecall(a.store, call.Input)
		if err != nil {
			a.emit(Event{Kind: EventToolEnd, Tool: name, ID: id, Status: "error", Text: err.Error()})
			return conv.NewToolResult(id, name, "Error: "+err.Error(), true)
		}
		if text == "" {
			text = "(the recalled content is empty)"
		}
		a.emit(Event{Kind: EventToolEnd, Tool: name, ID: id, Status: "ok", Text: fmt.Sprintf("%d lines", lineCount(text))})
		return conv.NewToolResult(id, name, text, false)
	}
	a.emit(Event{Kind: EventToolStart, Tool: name, ID: id, Input: call.Input})
	start := a.cfg.Clock()
	r := a.tools.Run(ctx, name, call.Input)
	d := a.cfg.Clock().Sub(start)
	if ctx.Err() != nil && r.Status != tools.StatusOK {
		a.emit(Event{Kind: EventToolEnd, Tool: name, ID: id, Status: "interrupted", Text: InterruptedText, Duration: d})
		return interrupted(call, &r)
	}
	a.emit(Event{Kind: EventToolEnd, Tool: name, ID: id, Status: string(r.Status), Text: summary(r), Duration: d})
	return r.Block(id, name)
}

// interrupted is the error result of a call the user interrupted, with
// whatever output it had produced.
func interrupted(call *conv.Block, r *tools.Result) conv.Block {
	text := "Error: " + InterruptedText + "; the call was stopped before it finished."
	if r == nil {
		text = "Error: " + InterruptedText + "; the call was not run."
	} else if out := strings.TrimSpace(r.Text); out != "" {
		text += "\nOutput before the interruption:\n" + r.Text
	}
	b := conv.NewToolResult(call.ToolUseID, call.Name, text, true)
	if r != nil {
		b.Structured = r.JSON()
	}
	return b
}

// summary is a one-line account of a tool result, for progress display.
func summary(r tools.Result) string {
	switch d := r.Data.(type) {
	case *tools.ReadData:
		return fmt.Sprintf("%s lines %d-%d of %d", d.Path, d.StartLine, d.EndLine, d.TotalLines)
	case *tools.GrepData:
		return fmt.Sprintf("%d matches in %d files", d.TotalMatches, d.TotalFiles)
	case *tools.LSData:
		return fmt.Sprintf("%d entries", d.TotalEntries)
	case *tools.BashData:
		if d.TimedOut {
			return fmt.Sprintf("timed out after %s", time.Duration(d.TimeoutMS)*time.Millisecond)
		}
		line := fmt.Sprintf("exit %d, %d lines", d.ExitCode, lineCount(d.Stdout)+lineCount(d.Stderr))
		if d.SandboxDenied {
			line += " · sandbox: permission denied"
		}
		return line
	case *tools.EditData:
		if !d.Applied {
			return firstLine(r.Error)
		}
		return fmt.Sprintf("%s +%d -%d", d.Path, d.Added, d.Removed)
	case *tools.WriteData:
		return fmt.Sprintf("%s %s (%d lines)", d.Operation, d.Path, d.Lines)
	case *tools.TodoData:
		return fmt.Sprintf("%d done, %d in progress, %d pending", d.Completed, d.InProgress, d.Pending)
	}
	if r.Error != "" {
		return firstLine(r.Error)
	}
	return string(r.Status)
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Describe is a short account of a tool call for progress lines:
// Read(agent/loop.go), Bash(go test ./...).
func Describe(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	arg := ""
	for _, k := range []string{"file_path", "command", "pattern", "path", "id", "focus"} {
		if v, ok := in[k].(string); ok && v != "" {
			arg = v
			break
		}
	}
	if name == tools.NameTodoWrite {
		if ts, ok := in["todos"].([]any); ok {
			arg = fmt.Sprintf("%d items", len(ts))
		}
	}
	arg = firstLine(arg)
	if r := []rune(arg); len(r) > 80 {
		arg = string(r[:77]) + "..."
	}
	return name + "(" + arg + ")"
}
