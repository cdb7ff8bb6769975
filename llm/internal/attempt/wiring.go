package attempt

import (
	"fmt"
	"net/http"

	"github.com/ctxkit/ctxkit/llm"
)

// Client returns the HTTP client an adapter sends through: a copy of c (an
// empty client when c is nil) whose transport is wrapped by Transport, so
// that c itself is never changed.
func Client(c *http.Client) *http.Client {
	hc := &http.Client{}
	if c != nil {
		*hc = *c
	}
	hc.Transport = Transport(hc.Transport)
	return hc
}

// Outcome turns the provider's error e, answered with headers h, into what
// the loop acts on. An unavailable server is retried, after what
// Retry-After says, unless the server said not to (X-Should-Retry: false)
// or final is set; a request the provider rejected as malformed is saved
// into badDir when it is set, and the error names the file.
func Outcome(e *llm.APIError, h http.Header, tr *Trace, badDir string, final bool) error {
	switch e.Kind {
	case llm.ErrUnavailable:
		if h.Get("X-Should-Retry") == "false" || final {
			return e
		}
		r := &Retryable{Err: e}
		r.After, r.HasAfter = RetryAfter(h)
		return r
	case llm.ErrBadRequest:
		if badDir != "" {
			if body := tr.Body(); body != nil {
				path, serr := SaveRequest(badDir, body)
				if serr != nil {
					return fmt.Errorf("%w (%v)", e, serr)
				}
				return fmt.Errorf("%w (the request was saved to %s)", e, path)
			}
		}
	}
	return e
}
