package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Status is the outcome of one tool call.
type Status string

const (
	// StatusOK: the tool did what was asked.
	StatusOK Status = "ok"
	// StatusError: the tool did not do what was asked; Error says why.
	// Data may still hold what is known (a Bash command that exited
	// non-zero has its whole output there).
	StatusError Status = "error"
	// StatusPartial: the tool ran but its result is incomplete for a
	// reason other than the caller's own limits (a Bash command killed by
	// its timeout or by cancellation, a Grep cut short by cancellation).
	// Error says what was cut.
	StatusPartial Status = "partial"
)

// Result is the structured result of one tool call (seed 000 §3.2):
// Status, tool-specific Data, the Text the model reads, Stats about the
// call, and the Error message when Status is not ok.
type Result struct {
	Status Status `json:"status"`
	// Data is the tool's own fields: *ReadData, *WriteData, *EditData,
	// *LSData, *GrepData, *BashData or *TodoData (see the package doc).
	// It is nil when the call failed before the tool could start, for
	// example on bad input.
	Data  any    `json:"data,omitempty"`
	Text  string `json:"text,omitempty"`
	Stats Stats  `json:"stats"`
	Error string `json:"error,omitempty"`
}

// Stats describes a call's output and cost; compressors drop it.
type Stats struct {
	// Bytes and Lines measure Text.
	Bytes int `json:"bytes"`
	Lines int `json:"lines"`
	// DurationMS is the wall time of the call in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}

// IsError reports whether the result should be sent to the model as an
// error (tool_result is_error). Partial results are not errors: they carry
// output the model should read.
func (r Result) IsError() bool { return r.Status == StatusError }

// Render is the text the model sees as the tool_result content: Text, with
// the error message first when the call failed.
func (r Result) Render() string {
	if r.Status != StatusError {
		return r.Text
	}
	msg := "Error: " + r.Error
	if r.Text == "" {
		return msg
	}
	return msg + "\n\n" + r.Text
}

// JSON is the whole result as JSON, for conv.Block.Structured. Field order
// is fixed, so equal results give equal bytes.
func (r Result) JSON() json.RawMessage {
	b, err := marshal(r)
	if err != nil {
		// Data types are plain structs; this cannot happen short of a bug,
		// and a result must always be storable.
		b, _ = marshal(Result{Status: r.Status, Text: r.Text, Stats: r.Stats, Error: fmt.Sprintf("%s (data not encodable: %v)", r.Error, err)})
	}
	return b
}

// marshal encodes v without HTML escaping: commands and code keep their
// < > & readable in the stored JSON.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Block returns r as the tool_result block answering the tool_use id of
// tool name: Render as its text, IsError, and JSON as Structured.
func (r Result) Block(toolUseID, name string) conv.Block {
	b := conv.NewToolResult(toolUseID, name, r.Render(), r.IsError())
	b.Structured = r.JSON()
	return b
}

// failf returns an error result with data (which may be nil).
func failf(data any, format string, args ...any) Result {
	return Result{Status: StatusError, Data: data, Error: fmt.Sprintf(format, args...)}
}

// measure fills the Bytes and Lines stats from Text.
func (r *Result) measure() {
	r.Stats.Bytes = len(r.Text)
	r.Stats.Lines = countLines(r.Text)
}

// countLines counts lines the way an editor does: a trailing newline does
// not open a new line, and a non-empty text without one still has one.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// redact applies f to everything r carries back that may hold file content
// or command output.
func (r *Result) redact(f func(string) string) {
	r.Text, r.Error = f(r.Text), f(r.Error)
	switch d := r.Data.(type) {
	case *BashData:
		d.Command, d.Stdout, d.Stderr = f(d.Command), f(d.Stdout), f(d.Stderr)
	case *GrepData:
		for i := range d.Matches {
			d.Matches[i] = f(d.Matches[i])
		}
		d.Pattern = f(d.Pattern)
	case *WriteData:
		d.Diff = f(d.Diff)
	case *EditData:
		d.Diff = f(d.Diff)
	}
}
