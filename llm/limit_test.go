package llm_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/llm"
)

func TestParseLimit(t *testing.T) {
	api := func(msg string) error {
		return &llm.APIError{Status: 400, Type: "invalid_request_error", Message: msg, Kind: llm.ErrPromptTooLong}
	}
	for _, tt := range []struct {
		name   string
		err    error
		want   llm.Limit
		ok     bool
		answer bool
	}{
		{"anthropic, prompt and max_tokens", api("input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"),
			llm.Limit{Prompt: 188240, MaxTokens: 21333, Window: 200000}, true, true},
		{"anthropic, prompt alone", api("prompt is too long: 205000 tokens > 200000 maximum"),
			llm.Limit{Prompt: 205000, Window: 200000}, true, false},
		{"openai, messages and completion", api("This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."),
			llm.Limit{Prompt: 3120, MaxTokens: 1000, Window: 4097}, true, true},
		{"openai, messages over the window with the completion", api("This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (131800 in the messages, 8200 in the completion)."),
			llm.Limit{Prompt: 131800, MaxTokens: 8200, Window: 131072}, true, false},
		{"vllm, output and input", api("This model's maximum context length is 128000 tokens. However, you requested 65535 output tokens and your prompt contains at least 62466 input tokens, for a total of at least 128001 tokens."),
			llm.Limit{Prompt: 62466, MaxTokens: 65535, Window: 128000}, true, true},
		{"openai, messages alone", api("This model's maximum context length is 4097 tokens. However, your messages resulted in 192871 tokens. Please reduce the length of the messages."),
			llm.Limit{Prompt: 192871, Window: 4097}, true, false},
		{"llama.cpp", api("request (35518 tokens) exceeds the available context size (32768 tokens), try increasing it"),
			llm.Limit{Prompt: 35518, Window: 32768}, true, false},
		{"gemini", api("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."),
			llm.Limit{Prompt: 1200000, Window: 1048576}, true, false},
		{"wrapped", fmt.Errorf("summarize: %w", api("prompt is too long: 9000 tokens > 8000 maximum")),
			llm.Limit{Prompt: 9000, Window: 8000}, true, false},
		{"no sizes", api("413 Request Entity Too Large"), llm.Limit{}, false, false},
		{"another error", &llm.APIError{Status: 400, Message: "prompt is too long: 9000 tokens > 8000 maximum", Kind: llm.ErrBadRequest}, llm.Limit{}, false, false},
		{"nil", nil, llm.Limit{}, false, false},
		{"plain sentinel", errors.Join(llm.ErrPromptTooLong, errors.New("9000 tokens > 8000")), llm.Limit{Prompt: 9000, Window: 8000}, true, false},
		{"kept", fmt.Errorf("replayed: %w", &llm.LimitError{Limit: llm.Limit{Prompt: 12000, MaxTokens: 4096, Window: 9000}}),
			llm.Limit{Prompt: 12000, MaxTokens: 4096, Window: 9000}, true, false},
		{"kept, no sizes", &llm.LimitError{}, llm.Limit{}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := llm.ParseLimit(tt.err)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ParseLimit = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if got.AnswerOnly() != tt.answer {
				t.Errorf("AnswerOnly = %v, want %v", got.AnswerOnly(), tt.answer)
			}
		})
	}
}

func TestLimitError(t *testing.T) {
	err := &llm.LimitError{Limit: llm.Limit{Prompt: 12000, MaxTokens: 4096, Window: 9000}}
	if !errors.Is(err, llm.ErrPromptTooLong) {
		t.Errorf("%v is not ErrPromptTooLong", err)
	}
	if got := (&llm.LimitError{}).Error(); got != llm.ErrPromptTooLong.Error() {
		t.Errorf("no sizes: %q", got)
	}
}

func TestTooLong(t *testing.T) {
	for _, tt := range []struct {
		name           string
		status         int
		typ, code, msg string
		want           bool
	}{
		{"anthropic, prompt", 400, "invalid_request_error", "", "prompt is too long: 205000 tokens > 200000 maximum", true},
		{"anthropic, prompt and max_tokens", 400, "invalid_request_error", "", "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again", true},
		{"anthropic, in a stream", 500, "invalid_request_error", "", "prompt is too long: 205000 tokens > 200000 maximum", true},
		{"anthropic, request too large", 413, "request_too_large", "", "Request exceeds the maximum allowed number of bytes.", true},
		{"openai, code", 400, "invalid_request_error", "context_length_exceeded", "Your input exceeds the context window of this model. Please adjust your input and try again.", true},
		{"openai-compatible, wording", 400, "BadRequestError", "", "This model's maximum context length is 128000 tokens. However, you requested 65535 output tokens and your prompt contains at least 62466 input tokens, for a total of at least 128001 tokens.", true},
		{"llama.cpp", 400, "exceed_context_size_error", "", "the request exceeds the available context size", true},
		{"gemini", 400, "", "", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", true},
		{"max_tokens over the model's", 400, "invalid_request_error", "", "max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for claude-opus-4", false},
		{"a wording, not a 400", 429, "rate_limit_error", "", "too many tokens per minute", false},
		{"bad key", 401, "authentication_error", "", "invalid x-api-key", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := llm.TooLong(tt.status, tt.typ, tt.code, tt.msg); got != tt.want {
				t.Errorf("TooLong = %v, want %v", got, tt.want)
			}
		})
	}
}
