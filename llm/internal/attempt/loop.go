package attempt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ctxkit/ctxkit/llm"
)

// Retryable marks an attempt's error as worth another try. After is the
// wait the server asked for (retry-after), when HasAfter.
type Retryable struct {
	Err      *llm.APIError
	After    time.Duration
	HasAfter bool
}

func (r *Retryable) Error() string { return r.Err.Error() }
func (r *Retryable) Unwrap() error { return r.Err }

// Loop runs try until it succeeds, fails for good, the caller's context
// ends, or the policy's attempts are spent. An error from try that is not
// a *Retryable ends the loop as it is. After the last attempt the last
// error is returned as an *llm.APIError of kind llm.ErrUnavailable that
// says how many attempts were made.
type Loop struct {
	Name   string // the provider, for messages: "anthropic"
	Policy llm.Retry
	Log    *slog.Logger
}

// Run runs the loop. on, if not nil, gets an llm.EventRetry before each
// retry.
func (l Loop) Run(ctx context.Context, on func(llm.Event), try func(ctx context.Context) (*llm.Response, error)) (*llm.Response, error) {
	pol := l.Policy.WithDefaults()
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	for n := 1; ; n++ {
		resp, err := try(ctx)
		if err == nil {
			return resp, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%s: %w", l.Name, cerr)
		}
		var r *Retryable
		if !errors.As(err, &r) {
			return nil, err
		}
		if n >= pol.Attempts {
			return nil, giveUp(r.Err, fmt.Sprintf("gave up after %d attempts", n))
		}
		wait := pol.Backoff(n)
		if r.HasAfter {
			if r.After > pol.MaxWait {
				return nil, giveUp(r.Err, fmt.Sprintf("the server asked to retry after %s, longer than the %s allowed", r.After, pol.MaxWait))
			}
			wait = max(r.After, 0)
		}
		why := fmt.Sprintf("%s; retrying in %s (attempt %d of %d)", describe(r.Err), wait.Round(time.Millisecond), n+1, pol.Attempts)
		log.Warn(l.Name+": attempt failed", "status", r.Err.Status, "type", r.Err.Type, "error", r.Err.Message,
			"retry_in", wait, "attempt", n+1, "of", pol.Attempts)
		if on != nil {
			on(llm.Event{Kind: llm.EventRetry, Text: why})
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: %w (while waiting to retry after: %v)", l.Name, ctx.Err(), r.Err)
		case <-t.C:
		}
	}
}

func describe(e *llm.APIError) string {
	if e.Status == 0 {
		return e.Message
	}
	if e.Type == "" {
		return fmt.Sprintf("%d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

func giveUp(last *llm.APIError, why string) *llm.APIError {
	e := *last
	e.Kind = llm.ErrUnavailable
	e.Message = fmt.Sprintf("%s (%s)", e.Message, why)
	return &e
}
