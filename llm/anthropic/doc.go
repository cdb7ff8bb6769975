// Package anthropic is the llm.Provider for the Anthropic Messages API, on
// the official SDK (github.com/anthropics/anthropic-sdk-go). SDK types stay
// inside this package.
//
// Every call streams (non-streaming calls fail for large max_tokens) and
// is retried with backoff on 429, 529, 5xx, connection failures, a stream
// cut off before message_stop and a server silent past the attempt
// timeout, honouring retry-after. Failures come back as *llm.APIError:
// errors.Is(err, llm.ErrPromptTooLong) means compact and retry (the API's
// "prompt is too long", and its "input length and `max_tokens` exceed
// context limit" for a prompt that leaves less room than max_tokens asks);
// llm.ErrAuth (401/403) is never retried; llm.ErrBadRequest carries the
// API's message as it is, and the request body is saved for inspection
// when WithBadRequestDir is set. The API key is read from ANTHROPIC_API_KEY
// only and is never logged or written anywhere. The SDK's OpenTelemetry
// instrumentation is off.
//
// The request's cache anchors are the CacheControl fields assembly set on
// system blocks, tools and message blocks; they are sent as cache_control
// and the usage reports cache writes and reads.
package anthropic
