package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxkit/ctxkit/conv"

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

// TestTooLongKinds: the API's two ways of saying a request does not fit —
// the prompt alone, or the prompt with the max_tokens asked — are both
// llm.ErrPromptTooLong, which callers answer by compacting and retrying;
// another invalid request is not.
func TestTooLongKinds(t *testing.T) {
	for _, tt := range []struct {
		message string
		want    error
	}{
		{"prompt is too long: 210000 tokens > 200000 maximum", llm.ErrPromptTooLong},
		{"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again", llm.ErrPromptTooLong},
		{"messages: at least one message is required", llm.ErrBadRequest},
	} {
		t.Run(tt.message, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": tt.message}})
				w.Write(body)
			}))
			defer srv.Close()
			t.Setenv(anthropic.KeyEnv, "test-key")
			p, err := anthropic.New("claude-sonnet-4-5", anthropic.WithBaseURL(srv.URL), anthropic.WithRetry(llm.Retry{Attempts: 1}))
			if err != nil {
				t.Fatal(err)
			}
			req := &llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hi")}}}}
			_, err = p.Stream(context.Background(), req, nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
