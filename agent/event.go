package agent

import (
	"encoding/json"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/micro"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventText is a piece of assistant text as it streams in (Text).
	EventText EventKind = iota + 1
	// EventThinking is a piece of the model's thinking (Text).
	EventThinking
	// EventRequest: a request is about to be sent (Tokens: its estimated
	// size).
	EventRequest
	// EventResponse: a response is complete (Usage, StopReason).
	EventResponse
	// EventRetry: the provider is retrying; what streamed since the last
	// EventRequest is void (Text says why).
	EventRetry
	// EventToolStart: a tool call starts (Tool, ID, Input).
	EventToolStart
	// EventToolEnd: a tool call ended (Tool, ID, Status, Text: a one-line
	// summary of the result, Duration).
	EventToolEnd
	// EventMicro: micro-compaction moved blocks down (Micro).
	EventMicro
	// EventCompactStart: a compaction starts (Trigger).
	EventCompactStart
	// EventCompactEnd: a compaction ended (Compact; Err when it failed).
	EventCompactEnd
	// EventWarning: something the user should know (Text, Err).
	EventWarning
	// EventNote: what input preprocessing did (Text), e.g. an @file
	// mention resolved or a paste saved to a file.
	EventNote
)

func (k EventKind) String() string {
	switch k {
	case EventText:
		return "text"
	case EventThinking:
		return "thinking"
	case EventRequest:
		return "request"
	case EventResponse:
		return "response"
	case EventRetry:
		return "retry"
	case EventToolStart:
		return "tool-start"
	case EventToolEnd:
		return "tool-end"
	case EventMicro:
		return "micro"
	case EventCompactStart:
		return "compact-start"
	case EventCompactEnd:
		return "compact-end"
	case EventWarning:
		return "warning"
	case EventNote:
		return "note"
	}
	return "unknown"
}

// Event is one piece of progress, for a CLI to show as it happens.
type Event struct {
	Kind EventKind
	Text string

	// Tool events.
	Tool     string
	ID       string
	Input    json.RawMessage
	Status   string // ok, error, partial, interrupted
	Duration time.Duration

	// Request and response events.
	Tokens     int
	Usage      llm.Usage
	StopReason string

	// Compaction events.
	Trigger compact.Trigger
	Compact *compact.Result
	Micro   *micro.Result

	Err error
}
