package llmtest

import (
	"time"

	"github.com/ctxkit/ctxkit/llm"
)

// Reply is what the server answers one request with: a response (optional
// thinking, text, tool calls), or a fault instead.
type Reply struct {
	// Thinking is streamed first: an Anthropic thinking block with a
	// signature the server can later verify, or OpenAI-compatible
	// reasoning_content (as DeepSeek and vLLM send it).
	Thinking string
	Text     string
	Calls    []ToolCall
	// StopReason overrides the derived one (tool_use when there are calls,
	// else end_turn), in Anthropic's terms; the OpenAI side maps it.
	StopReason string
	// Fault, when set, is answered instead of the response.
	Fault *Fault
	// Usage, when set, is the usage reported (on every API) instead of the server's own count:
	// for a replay whose stand-in reports what the recorded provider
	// billed.
	Usage *llm.Usage
}

// ToolCall is a tool call in a reply. Input is the JSON object the model
// "wrote", sent byte for byte; ID is generated when empty.
type ToolCall struct {
	ID    string
	Name  string
	Input string
}

// Text is a reply of plain text.
func Text(s string) Reply { return Reply{Text: s} }

// Calls is a reply with optional text followed by tool calls.
func Calls(text string, calls ...ToolCall) Reply { return Reply{Text: text, Calls: calls} }

// Use is a tool call of name with input, a JSON object.
func Use(name, input string) ToolCall { return ToolCall{Name: name, Input: input} }

// Fail is a reply that answers with fault f.
func Fail(f Fault) Reply { return Reply{Fault: &f} }

// FaultKind says what goes wrong.
type FaultKind int

const (
	// RateLimited answers 429 rate_limit_error, with a retry-after header
	// when RetryAfter is set.
	RateLimited FaultKind = iota + 1
	// Overloaded answers 529 overloaded_error (503 on the OpenAI side),
	// with retry-after when RetryAfter is set.
	Overloaded
	// ServerError answers 500 api_error.
	ServerError
	// Unauthorized answers 401 authentication_error.
	Unauthorized
	// Forbidden answers 403 permission_error.
	Forbidden
	// CutStream sends the response headers and the first Events events of
	// the stream, then drops the connection.
	CutStream
	// Truncate sends the first Events events, then ends the response
	// cleanly, as a proxy that gives up might: no error, just no end.
	Truncate
	// StreamError sends the first Events events, then an error event
	// (overloaded_error), as the real API does when it fails mid-stream.
	StreamError
	// Slow waits Delay before answering at all (the response itself then
	// follows); set Delay past the client's timeout.
	Slow
	// Stall sends the first Events events, then goes silent for Delay
	// before finishing the stream.
	Stall
)

// Fault is an injected failure.
type Fault struct {
	Kind FaultKind
	// RetryAfter is sent as the retry-after header (in seconds, fractional
	// when below one) by RateLimited and Overloaded; 0 sends none.
	RetryAfter time.Duration
	// Delay is how long Slow and Stall keep quiet.
	Delay time.Duration
	// Events is how many stream events CutStream, Truncate, StreamError and Stall
	// send first; 0 means 3.
	Events int
}

func (f *Fault) events() int {
	if f.Events <= 0 {
		return 3
	}
	return f.Events
}

func (k FaultKind) String() string {
	switch k {
	case RateLimited:
		return "rate-limited"
	case Overloaded:
		return "overloaded"
	case ServerError:
		return "server-error"
	case Unauthorized:
		return "unauthorized"
	case Forbidden:
		return "forbidden"
	case CutStream:
		return "cut-stream"
	case Truncate:
		return "truncate"
	case StreamError:
		return "stream-error"
	case Slow:
		return "slow"
	case Stall:
		return "stall"
	}
	return "no-fault"
}
