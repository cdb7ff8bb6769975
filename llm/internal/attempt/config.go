package attempt

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/llm"
)

// Config is what every adapter is configured with: the settings its
// options change, and the HTTP client it sends through.
type Config struct {
	Name    string        // the adapter's name in the retry log
	Model   string        // the model requests are for unless they name one
	Info    llm.ModelInfo // the model's limits
	BaseURL string        // where requests go
	Timeout time.Duration // how long an attempt may be silent; negative: no limit
	BadDir  string        // where rejected requests are saved; "": nowhere
	Log     *slog.Logger  // where retries are logged
	Retry   llm.Retry     // the retry policy
	HC      *http.Client  // the client given; after Finish, the one to send through
}

// NewConfig is the configuration adapter name starts from for model: the
// model's entry from llm.LookupModel, the base URL from the environment
// variable baseURLEnv (empty when unset) and timeout.
func NewConfig(name, model, baseURLEnv string, timeout time.Duration) Config {
	return Config{Name: name, Model: model, Info: llm.LookupModel(model), BaseURL: os.Getenv(baseURLEnv), Timeout: timeout}
}

// Finish fills in what the options left unset, once they are applied: the
// base URL (defaultURL), the logger (slog.Default()); and makes HC the
// client to send through (see Client).
func (c *Config) Finish(defaultURL string) {
	if c.BaseURL == "" {
		c.BaseURL = defaultURL
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.HC = Client(c.HC)
}

// Run makes a request: once makes one attempt, which the loop retries
// under the retry policy, announcing each retry to on.
func (c *Config) Run(ctx context.Context, on func(llm.Event), once func(context.Context) (*llm.Response, error)) (*llm.Response, error) {
	loop := Loop{Name: c.Name, Policy: c.Retry, Log: c.Log}
	return loop.Run(ctx, on, once)
}

// Cut is the error of an attempt whose stream ended before end (what the
// provider sends last): the server unreachable when the attempt was
// abandoned for silence, else a broken stream, retried.
func (c *Config) Cut(tr *Trace, end string) error {
	if tr.Silent() {
		return Unreachable(c.BaseURL, tr, context.Canceled)
	}
	return &Retryable{Err: &llm.APIError{Kind: llm.ErrUnavailable,
		Message: fmt.Sprintf("the stream from %s ended before %s", c.BaseURL, end)}}
}

// Answered is Outcome for the error answer e to an attempt, with resp the
// HTTP response it came in (nil when there was none) and rejected
// requests saved into BadDir.
func (c *Config) Answered(e *llm.APIError, resp *http.Response, tr *Trace, final bool) error {
	var h http.Header
	if resp != nil {
		h = resp.Header
	}
	return Outcome(e, h, tr, c.BadDir, final)
}

// Message is the message of an error answer with status: msg, or else
// the body as sent (raw), or else the status's text.
func Message(msg, raw string, status int) string {
	if msg != "" {
		return msg
	}
	if raw = strings.TrimSpace(raw); raw != "" {
		return raw
	}
	return http.StatusText(status)
}

// Kind classifies an error answer with status: auth and tooLong say that
// the provider's answer, beyond its status, names a refused key or a
// prompt too long for the model. Timeouts, conflicts, rate limits and
// server errors are worth retrying; other 4xx are the request's fault.
func Kind(status int, auth, tooLong bool) error {
	switch s := status; {
	case auth || s == http.StatusUnauthorized || s == http.StatusForbidden:
		return llm.ErrAuth
	case tooLong:
		return llm.ErrPromptTooLong
	case s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500:
		return llm.ErrUnavailable
	case s >= 400:
		return llm.ErrBadRequest
	}
	return llm.ErrUnavailable
}
