package openai_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/llm/openai"
)

func newProvider(s llmtest.Settings) (llm.Provider, error) {
	opts := []openai.Option{openai.WithRetry(s.Retry), openai.WithTimeout(s.Timeout),
		openai.WithBadRequestDir(s.BadRequestDir), openai.WithLogger(s.Logger)}
	if s.BaseURL != "" {
		opts = append(opts, openai.WithBaseURL(s.BaseURL))
	}
	if s.HTTPClient != nil {
		opts = append(opts, openai.WithHTTPClient(s.HTTPClient))
	}
	return openai.New(s.Model, opts...)
}

func TestConformance(t *testing.T) {
	t.Setenv(openai.BaseURLEnv, "")
	llmtest.TestProvider(t, llmtest.Target{API: llmtest.OpenAI, KeyEnv: openai.KeyEnv, KeyOptional: true, New: newProvider})
}
