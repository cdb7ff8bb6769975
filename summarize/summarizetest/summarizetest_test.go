package summarizetest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/summarize/summarizetest"
)

func TestExtractive(t *testing.T) {
	summarizetest.Run(t, summarize.NewExtractive(), summarizetest.Options{})
}

// The LLM summarizer against the llmtest Anthropic server, whose model
// writes a summary from what the request gives it: the user's words it
// finds there, verbatim. A summarizer that left them out of its request
// would fail the requirement check.
func TestLLM(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Handle(func(c *llmtest.Call) llmtest.Reply {
		var kept []string
		for _, line := range strings.Split(string(c.Body), `\n`) {
			if i := strings.Index(line, summarizetest.Requirement); i >= 0 {
				kept = append(kept, summarizetest.Requirement)
				break
			}
		}
		return llmtest.Text("<analysis>Read the region.</analysis>\n<summary>\n## Task and intent\nFix the parser tests.\n## User requirements\n" +
			strings.Join(kept, "\n") + "\n## Current work\nThe binary precedence table.\n</summary>")
	})
	t.Setenv(anthropic.KeyEnv, "test-key")
	p, err := anthropic.New("claude-haiku-4-5", anthropic.WithBaseURL(srv.BaseURL(llmtest.Anthropic)),
		anthropic.WithRetry(llm.Retry{Attempts: 1, Base: 1, Max: 1}))
	if err != nil {
		t.Fatal(err)
	}
	s := summarize.NewLLM(p, "claude-haiku-4-5", summarize.LLMOptions{})
	summarizetest.Run(t, s, summarizetest.Options{
		Stall: func() { srv.Enqueue(llmtest.Reply{Fault: &llmtest.Fault{Kind: llmtest.Slow, Delay: time.Minute}}) },
	})
}
