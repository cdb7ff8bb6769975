package llm

import (
	"errors"
	"regexp"
	"strconv"
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
	// Gemini: "The input token count (N) exceeds the maximum number of
	// tokens allowed (M)."
	regexp.MustCompile(`input token count \((?P<prompt>\d+)\) exceeds the maximum number of tokens allowed \((?P<window>\d+)\)`),
	// Anthropic, the prompt alone: "prompt is too long: 205000 tokens >
	// 200000 maximum".
	regexp.MustCompile(`(?P<prompt>\d+)\s*tokens?\s*>\s*(?P<window>\d+)`),
}

// ParseLimit reads the sizes a context-limit refusal states (an
// *APIError's message, or err's text). ok is false when err is not
// ErrPromptTooLong or states no sizes ("413 Request Entity Too Large").
func ParseLimit(err error) (l Limit, ok bool) {
	if !errors.Is(err, ErrPromptTooLong) {
		return Limit{}, false
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
