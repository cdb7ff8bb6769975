package attempt

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// errSilent is the cause an attempt's context is cancelled with when the
// server said nothing for the whole timeout.
var errSilent = errors.New("server silent past the attempt timeout")

// Trace watches one attempt: it cancels the attempt when the server stays
// silent for the timeout (before the response headers or between any two
// reads of the body, so a long healthy stream is never cut), and keeps the
// request body the attempt sent.
type Trace struct {
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer

	mu   sync.Mutex
	body []byte
}

type traceKey struct{}

// Start begins an attempt under ctx. timeout ≤ 0 disables the silence
// timeout. The caller must call Stop when the attempt is over.
func Start(ctx context.Context, timeout time.Duration) (context.Context, *Trace) {
	t := &Trace{timeout: timeout}
	t.ctx, t.cancel = context.WithCancelCause(ctx)
	if timeout > 0 {
		t.timer = time.AfterFunc(timeout, func() { t.cancel(errSilent) })
	}
	return context.WithValue(t.ctx, traceKey{}, t), t
}

// Kick restarts the silence timeout: the server just said something.
func (t *Trace) Kick() {
	if t.timer != nil {
		t.timer.Reset(t.timeout)
	}
}

// Stop ends the attempt and releases its timer and context.
func (t *Trace) Stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.cancel(context.Canceled)
}

// Silent reports whether the attempt was cancelled by the silence timeout.
func (t *Trace) Silent() bool { return errors.Is(context.Cause(t.ctx), errSilent) }

// Timeout is the silence timeout the attempt ran with.
func (t *Trace) Timeout() time.Duration { return t.timeout }

// Body is the request body the attempt sent, nil if none was sent yet.
func (t *Trace) Body() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.body
}

func (t *Trace) setBody(b []byte) {
	t.mu.Lock()
	t.body = b
	t.mu.Unlock()
}

// Transport wraps base (http.DefaultTransport when nil) so that requests
// made under a Trace record their body and kick its timeout on the
// response headers and on every read of the response body.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return transport{base}
}

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tr, _ := req.Context().Value(traceKey{}).(*Trace)
	if tr == nil {
		return t.base.RoundTrip(req)
	}
	if req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			tr.setBody(b)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		tr.Kick()
		resp.Body = &kickBody{resp.Body, tr}
	}
	return resp, err
}

type kickBody struct {
	io.ReadCloser
	tr *Trace
}

func (b *kickBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.tr.Kick()
	}
	return n, err
}
