package attempt

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm"
)

func TestOutcome(t *testing.T) {
	unavail := &llm.APIError{Kind: llm.ErrUnavailable, Status: 529}
	bad := &llm.APIError{Kind: llm.ErrBadRequest, Status: 400}
	tests := []struct {
		name      string
		e         *llm.APIError
		h         http.Header
		final     bool
		retryable bool
	}{
		{"unavailable is retried", unavail, http.Header{}, false, true},
		{"server says no retry", unavail, http.Header{"X-Should-Retry": {"false"}}, false, false},
		{"final", unavail, http.Header{}, true, false},
		{"bad request is not retried", bad, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Outcome(tt.e, tt.h, &Trace{}, "", tt.final)
			var r *Retryable
			if got := errors.As(err, &r); got != tt.retryable {
				t.Errorf("retryable = %v, want %v (%v)", got, tt.retryable, err)
			}
			if !errors.Is(err, tt.e) && (r == nil || r.Err != tt.e) {
				t.Errorf("Outcome lost the API error: %v", err)
			}
		})
	}
}

func TestOutcomeSavesBadRequest(t *testing.T) {
	dir := t.TempDir()
	tr := &Trace{}
	tr.setBody([]byte(`{"model":"m"}`))
	err := Outcome(&llm.APIError{Kind: llm.ErrBadRequest, Status: 400, Message: "bad"}, nil, tr, dir, false)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("error %v does not name the saved file in %s", err, dir)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("%d files saved, want 1", len(files))
	}
}

func TestClientCopies(t *testing.T) {
	orig := &http.Client{}
	c := Client(orig)
	if c == orig || orig.Transport != nil || c.Transport == nil {
		t.Errorf("Client changed its argument or did not wrap the transport")
	}
	if Client(nil).Transport == nil {
		t.Error("Client(nil) has no transport")
	}
}
