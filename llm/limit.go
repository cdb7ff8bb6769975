package llm

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Limit is what a provider's context-limit refusal states: the prompt's
// tokens, the max_tokens the request asked (0 when the refusal does not
// say) and the model's window, all by the provider's count.
type Limit struct {
	Prompt    int
	MaxTokens int
	Window    int
}

// AnswerOnly reports whether the prompt fit the window and only the
// answer the request asked room for did not: the same prompt gets
// through with a smaller max_tokens.
func (l Limit) AnswerOnly() bool { return l.MaxTokens > 0 && l.Prompt < l.Window }

// The refusals that state sizes, by provider. Each pattern's groups are
// named for the Limit field they fill.
var limitPatterns = []*regexp.Regexp{
	// Anthropic, prompt and max_tokens: "input length and `max_tokens`
	// exceed context limit: 188240 + 21333 > 200000, …".
	regexp.MustCompile(`(?P<prompt>\d+)\s*\+\s*(?P<max>\d+)\s*>\s*(?P<window>\d+)`),
	// OpenAI and the servers that copy it (vLLM, DeepSeek): "This model's
	// maximum context length is 4097 tokens. However, you requested 4120
	// tokens (3120 in the messages, 1000 in the completion)."
	regexp.MustCompile(`maximum context length is (?P<window>\d+) tokens.*?\((?P<prompt>\d+) in the messages, (?P<max>\d+) in the completion\)`),
	// vLLM since 0.15: "This model's maximum context length is 128000
	// tokens. However, you requested 65535 output tokens and your prompt
	// contains at least 62466 input tokens, …"
	regexp.MustCompile(`maximum context length is (?P<window>\d+) tokens.*?requested (?P<max>\d+) output tokens and your prompt contains at least (?P<prompt>\d+) input tokens`),
	// OpenAI, the messages alone: "… However, your messages resulted in
	// 192871 tokens."
	regexp.MustCompile(`maximum context length is (?P<window>\d+) tokens.*?messages resulted in (?P<prompt>\d+) tokens`),
	// llama.cpp's server, and Ollama's: "request (N tokens) exceeds the
	// available context size (M tokens), try increasing it".
	regexp.MustCompile(`request \((?P<prompt>\d+) tokens\) exceeds the available context size \((?P<window>\d+) tokens\)`),
	// Gemini: "The input token count (N) exceeds the maximum number of
	// tokens allowed (M)."
	regexp.MustCompile(`input token count \((?P<prompt>\d+)\) exceeds the maximum number of tokens allowed \((?P<window>\d+)\)`),
	// Anthropic, the prompt alone: "prompt is too long: 205000 tokens >
	// 200000 maximum".
	regexp.MustCompile(`(?P<prompt>\d+)\s*tokens?\s*>\s*(?P<window>\d+)`),
}

// A LimitError is a refusal for size whose sizes were read already (a
// zero Limit: the refusal stated none), kept to be given back: the proxy
// stores what an upstream's refusal stated and replays it to the engine
// (engine.Engine.Retry) when it rebuilds the conversation. It is
// ErrPromptTooLong.
type LimitError struct{ Limit Limit }

func (e *LimitError) Error() string {
	l := e.Limit
	if l.Window == 0 {
		return ErrPromptTooLong.Error()
	}
	return fmt.Sprintf("%v: %d + %d > %d", ErrPromptTooLong, l.Prompt, l.MaxTokens, l.Window)
}

func (e *LimitError) Unwrap() error { return ErrPromptTooLong }

// ParseLimit reads the sizes a context-limit refusal states (a
// *LimitError's, an *APIError's message, or err's text). ok is false when
// err is not ErrPromptTooLong or states no sizes ("413 Request Entity Too
// Large").
func ParseLimit(err error) (l Limit, ok bool) {
	if !errors.Is(err, ErrPromptTooLong) {
		return Limit{}, false
	}
	var le *LimitError
	if errors.As(err, &le) {
		return le.Limit, le.Limit.Window > 0
	}
	msg := err.Error()
	var ae *APIError
	if errors.As(err, &ae) {
		msg = ae.Message
	}
	for _, re := range limitPatterns {
		m := re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		for i, name := range re.SubexpNames() {
			n, err := strconv.Atoi(m[i])
			if err != nil {
				continue
			}
			switch name {
			case "prompt":
				l.Prompt = n
			case "max":
				l.MaxTokens = n
			case "window":
				l.Window = n
			}
		}
		return l, l.Window > 0
	}
	return Limit{}, false
}

// RefusedBytes reports whether an error answer refuses a request for its
// bytes (a 413, Anthropic's request_too_large) rather than its tokens: it
// says nothing of the model's window.
func RefusedBytes(status int, typ string) bool {
	return status == 413 || typ == "request_too_large"
}

// TooLong reports whether an error answer refuses a request for its size
// (ErrPromptTooLong: compact and send again), by its HTTP status, the
// provider's error type and code, and its message. Providers and the
// servers that copy them word it differently; all the known wordings
// count: Anthropic's "prompt is too long" and "input length and
// `max_tokens` exceed context limit" (any status: an error event in a
// stream has none of its own), OpenAI's context_length_exceeded code and
// "maximum context length", llama.cpp's exceed_context_size_error,
// Gemini's "exceeds the maximum number of tokens allowed", and a 413.
func TooLong(status int, typ, code, msg string) bool {
	if RefusedBytes(status, typ) || code == "context_length_exceeded" || typ == "exceed_context_size_error" {
		return true
	}
	if strings.HasPrefix(msg, "prompt is too long") || strings.HasPrefix(msg, "input length and `max_tokens` exceed context limit") {
		return true
	}
	if status != 400 {
		return false
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"maximum context length", "context length", "context_length", "prompt is too long",
		"exceeds the available context size", "too many tokens", "exceeds the maximum number of tokens allowed"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
