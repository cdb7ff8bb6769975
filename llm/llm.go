package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
)

// Request is one model call, provider-neutral. Assembly builds it from the
// conversation; cache anchors are the CacheControl fields set on the
// request's own copies of the blocks (and on Tools), never on the
// conversation itself.
type Request struct {
	Model     string
	MaxTokens int
	System    []conv.Block
	Tools     []conv.Tool
	Messages  []conv.Message
}

// Usage is what the provider reports a call consumed. Input counts only the
// uncached input (after the last cache breakpoint, in Anthropic's terms);
// the whole prompt is Input + CacheWrite + CacheRead.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheWrite int `json:"cache_write"`
	CacheRead  int `json:"cache_read"`
}

// Prompt is the whole prompt size the provider counted.
func (u Usage) Prompt() int { return u.Input + u.CacheWrite + u.CacheRead }

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Input + v.Input, u.Output + v.Output, u.CacheWrite + v.CacheWrite, u.CacheRead + v.CacheRead}
}

// Response is a finished model turn.
type Response struct {
	ID    string
	Model string
	// Message is the assistant message, its blocks without ids (the
	// conversation stamps them when it appends the message).
	Message    conv.Message
	StopReason string // end_turn, tool_use, max_tokens, stop_sequence, …
	Usage      Usage
}

// EventKind says what a streaming Event carries.
type EventKind int

const (
	EventText     EventKind = iota // a piece of assistant text
	EventThinking                  // a piece of thinking
	EventToolUse                   // the model started a tool call (Name set)
	// EventRetry: the attempt failed and the provider is trying again.
	// Everything streamed since the start (or the previous EventRetry) is
	// void; Text says why and when the next attempt starts.
	EventRetry
)

// Event is a piece of a response as it streams in, for showing progress.
type Event struct {
	Kind EventKind
	Text string
	Name string
}

// Provider is a model endpoint. Stream sends req, calls on (which may be
// nil) for each piece as it arrives, and returns the whole response.
type Provider interface {
	Stream(ctx context.Context, req *Request, on func(Event)) (*Response, error)
}

// Sentinel errors callers test with errors.Is.
var (
	// ErrPromptTooLong: the request exceeded the model's window; compact
	// and retry.
	ErrPromptTooLong = errors.New("llm: prompt is too long")
	// ErrAuth: the key was refused (401/403); retrying will not help.
	ErrAuth = errors.New("llm: authentication failed")
	// ErrMissingKey: the environment variable holding the key is unset.
	ErrMissingKey = errors.New("llm: API key not set")
	// ErrBadRequest: the provider rejected the request as malformed (400).
	ErrBadRequest = errors.New("llm: request rejected")
	// ErrUnavailable: the provider could not be reached or kept failing
	// after retries (network, 429, 5xx, 529).
	ErrUnavailable = errors.New("llm: provider unavailable")
)

// APIError is an error the provider answered with. It unwraps to the
// sentinel that classifies it.
type APIError struct {
	Status    int    // HTTP status, 0 when none was received
	Type      string // the provider's error type, e.g. invalid_request_error
	Message   string // the provider's message, shown to the user as is
	RequestID string
	Kind      error // one of the sentinels above
}

func (e *APIError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%v: %s", e.Kind, e.Message)
	}
	return fmt.Sprintf("%v: %d %s: %s", e.Kind, e.Status, e.Type, e.Message)
}

func (e *APIError) Unwrap() error { return e.Kind }
