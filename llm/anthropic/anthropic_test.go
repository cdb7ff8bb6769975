package anthropic_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

func newProvider(s llmtest.Settings) (llm.Provider, error) {
	opts := []anthropic.Option{anthropic.WithRetry(s.Retry), anthropic.WithTimeout(s.Timeout),
		anthropic.WithBadRequestDir(s.BadRequestDir), anthropic.WithLogger(s.Logger)}
	if s.BaseURL != "" {
		opts = append(opts, anthropic.WithBaseURL(s.BaseURL))
	}
	if s.HTTPClient != nil {
		opts = append(opts, anthropic.WithHTTPClient(s.HTTPClient))
	}
	return anthropic.New(s.Model, opts...)
}

func TestConformance(t *testing.T) {
	t.Setenv(anthropic.BaseURLEnv, "")
	llmtest.TestProvider(t, llmtest.Target{API: llmtest.Anthropic, KeyEnv: anthropic.KeyEnv, New: newProvider})
}
