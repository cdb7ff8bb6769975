package summarizetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
)

// Requirement is the user's constraint every region Run builds carries; a
// conforming summary keeps it verbatim (the Coding template's "every user
// requirement verbatim").
const Requirement = "You must never edit the generated files under gen/."

// Options adapt Run to a summarizer.
type Options struct {
	// Stall, when set, makes the summarizer's next call block until its
	// context is done (an LLM summarizer's test server holds the answer
	// back); the timeout check then proves the call returns with the
	// context's error. Without it the check only requires that a call
	// under a short deadline either finishes or fails with it.
	Stall func()
	// Bound is how long a call may take to return once its context is
	// done (default 5 s).
	Bound time.Duration
}

// Run checks s:
//
//   - it never inflates: over regions of a few sizes, the summary has
//     fewer tokens than the messages it replaces, and is not empty;
//   - it never drops pinned content: Requirement, the user's words in the
//     region, appears verbatim in the summary;
//   - a call with a cancelled context fails with context.Canceled, at
//     once;
//   - a call under a deadline returns within Bound of it: with a result,
//     or with context.DeadlineExceeded;
//   - an empty region is an error, not an empty summary.
func Run(t *testing.T, s summarize.Summarizer, opts Options) {
	t.Helper()
	if opts.Bound <= 0 {
		opts.Bound = 5 * time.Second
	}
	counter := tokens.NewEstimator()
	t.Run("never-inflates-keeps-requirements", func(t *testing.T) {
		for _, steps := range []int{2, 6, 20} {
			in := Region(steps)
			in.Counter = counter
			in.TargetTokens = summarize.Target(regionTokens(in.Messages, counter), 0, 0)
			out, err := s.Summarize(context.Background(), in)
			if err != nil {
				t.Fatalf("%d steps: %v", steps, err)
			}
			got, replaced := counter.Count(out.Text), regionTokens(in.Messages, counter)
			if strings.TrimSpace(out.Text) == "" {
				t.Fatalf("%d steps: empty summary", steps)
			}
			if got >= replaced {
				t.Errorf("%d steps: the summary has %d tokens, the region it replaces %d", steps, got, replaced)
			}
			if !strings.Contains(out.Text, Requirement) {
				t.Errorf("%d steps: the user's requirement %q is not in the summary:\n%s", steps, Requirement, out.Text)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		_, err := s.Summarize(ctx, Region(4))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled context: got %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > opts.Bound {
			t.Errorf("cancelled context: returned after %v", d)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		if opts.Stall != nil {
			opts.Stall()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		out, err := s.Summarize(ctx, Region(4))
		d := time.Since(start)
		switch {
		case err == nil && opts.Stall != nil:
			t.Errorf("a stalled call under a deadline returned a summary: %q", out.Text)
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("deadline: got %v, want context.DeadlineExceeded", err)
		}
		if d > 100*time.Millisecond+opts.Bound {
			t.Errorf("deadline: returned after %v", d)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if out, err := s.Summarize(context.Background(), summarize.Input{}); err == nil {
			t.Errorf("an empty region gave a summary: %q", out.Text)
		}
	})
}

// Region is a region of a coding session to summarize: the user's task
// with Requirement, then steps tool calls (reads, test runs, edits) with
// their results, and the model's closing words.
func Region(steps int) summarize.Input {
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewText(conv.SourceUser, "Fix the failing parser tests. "+Requirement)}})
	for i := range steps {
		id := fmt.Sprintf("toolu_%02d", i)
		var name, out string
		var in map[string]string
		switch i % 3 {
		case 0:
			name, in = "Read", map[string]string{"file_path": fmt.Sprintf("parser/p%d.go", i)}
			var sb strings.Builder
			for j := range 80 {
				fmt.Fprintf(&sb, "%4d\tfunc parse%d_%d(tok Token) (Node, error) { return parseExpr(tok, %d) }\n", j+1, i, j, j)
			}
			out = sb.String()
		case 1:
			name, in = "Bash", map[string]string{"command": "go test ./parser/..."}
			var sb strings.Builder
			for j := range 40 {
				fmt.Fprintf(&sb, "=== RUN   TestParse/case_%02d_%d\n--- PASS: TestParse/case_%02d_%d (0.00s)\n", j, i, j, i)
			}
			sb.WriteString("--- FAIL: TestParseUnary (0.00s)\n    parser_test.go:88: got Neg(1), want Neg(Lit(1))\nFAIL\n")
			out = sb.String()
		default:
			name, in = "Edit", map[string]string{"file_path": fmt.Sprintf("parser/p%d.go", i-2), "old_string": "parseExpr(tok", "new_string": "parseUnary(tok"}
			out = fmt.Sprintf("The file parser/p%d.go has been updated.", i-2)
		}
		input, _ := json.Marshal(in)
		c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewText(conv.SourceAssistant, fmt.Sprintf("Step %d: checking the parser.", i+1)),
			conv.NewToolUse(id, name, input)}})
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, name, out, false)}})
	}
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewText(conv.SourceAssistant, "The unary case now parses; the remaining failure is in the binary precedence table.")}})
	return summarize.Input{Messages: c.Messages, Span: conv.Span{First: 1, Last: c.LastTurn()}}
}

func regionTokens(ms []conv.Message, counter conv.Counter) int {
	n := 0
	for i := range ms {
		n += conv.MessageTokens(&ms[i], counter)
	}
	return n
}
