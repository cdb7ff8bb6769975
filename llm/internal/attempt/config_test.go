package attempt

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm"
)

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		status        int
		auth, tooLong bool
		want          error
	}{
		{401, false, false, llm.ErrAuth},
		{403, false, true, llm.ErrAuth},
		{400, true, false, llm.ErrAuth},
		{400, false, true, llm.ErrPromptTooLong},
		{413, false, true, llm.ErrPromptTooLong},
		{408, false, false, llm.ErrUnavailable},
		{409, false, false, llm.ErrUnavailable},
		{429, false, false, llm.ErrUnavailable},
		{529, false, false, llm.ErrUnavailable},
		{404, false, false, llm.ErrBadRequest},
		{0, false, false, llm.ErrUnavailable},
	} {
		if got := Kind(tc.status, tc.auth, tc.tooLong); got != tc.want {
			t.Errorf("Kind(%d, %v, %v) = %v, want %v", tc.status, tc.auth, tc.tooLong, got, tc.want)
		}
	}
}

func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		msg, raw string
		status   int
		want     string
	}{
		{"overloaded", `{"x":1}`, 529, "overloaded"},
		{"", " upstream gone \n", 502, "upstream gone"},
		{"", "  ", 503, "Service Unavailable"},
	} {
		if got := Message(tc.msg, tc.raw, tc.status); got != tc.want {
			t.Errorf("Message(%q, %q, %d) = %q, want %q", tc.msg, tc.raw, tc.status, got, tc.want)
		}
	}
}

func TestCut(t *testing.T) {
	c := Config{BaseURL: "https://api.example.com"}
	_, tr := Start(context.Background(), 0)
	defer tr.Stop()
	err := c.Cut(tr, "message_stop")
	var r *Retryable
	if !errors.As(err, &r) || !errors.Is(err, llm.ErrUnavailable) || r.Err.Message != "the stream from https://api.example.com ended before message_stop" {
		t.Errorf("Cut = %v", err)
	}
}

func TestAnswered(t *testing.T) {
	c := Config{}
	e := &llm.APIError{Kind: llm.ErrUnavailable, Status: 529, Message: "busy"}
	resp := &http.Response{Header: http.Header{"X-Should-Retry": {"false"}}}
	if err := c.Answered(e, resp, &Trace{}, false); err != e {
		t.Errorf("with X-Should-Retry false: %v, want the error as is", err)
	}
	var r *Retryable
	if err := c.Answered(e, nil, &Trace{}, false); !errors.As(err, &r) || !strings.Contains(err.Error(), "busy") {
		t.Errorf("without a response: %v, want it retried", err)
	}
}
