package attempt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm"
)

func unavailable(msg string) *Retryable {
	return &Retryable{Err: &llm.APIError{Kind: llm.ErrUnavailable, Status: 529, Type: "overloaded_error", Message: msg}}
}

func fast(attempts int) Loop {
	return Loop{Name: "test", Policy: llm.Retry{Attempts: attempts, Base: time.Millisecond, Max: 2 * time.Millisecond, MaxWait: time.Second},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestLoop(t *testing.T) {
	ok := &llm.Response{ID: "r"}
	auth := &llm.APIError{Kind: llm.ErrAuth, Status: 401, Message: "invalid x-api-key"}
	cases := []struct {
		name     string
		results  []error // nil: success
		attempts int
		wantErr  error
		wantMsg  string
		tries    int
		retries  int
	}{
		{"first try", []error{nil}, 3, nil, "", 1, 0},
		{"final error passes", []error{auth}, 3, llm.ErrAuth, "invalid x-api-key", 1, 0},
		{"retry then success", []error{unavailable("Overloaded"), nil}, 3, nil, "", 2, 1},
		{"gives up", []error{unavailable("a"), unavailable("b"), unavailable("c")}, 3, llm.ErrUnavailable, "c (gave up after 3 attempts)", 3, 2},
		{"single attempt", []error{unavailable("a")}, 1, llm.ErrUnavailable, "gave up after 1 attempts", 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			var evs []llm.Event
			resp, err := fast(tc.attempts).Run(context.Background(), func(e llm.Event) { evs = append(evs, e) },
				func(context.Context) (*llm.Response, error) {
					err := tc.results[n]
					n++
					if err != nil {
						return nil, err
					}
					return ok, nil
				})
			if n != tc.tries {
				t.Errorf("tried %d times, want %d", n, tc.tries)
			}
			if len(evs) != tc.retries {
				t.Errorf("%d retry events, want %d", len(evs), tc.retries)
			}
			for _, e := range evs {
				if e.Kind != llm.EventRetry || !strings.Contains(e.Text, "retrying in") {
					t.Errorf("event %+v", e)
				}
			}
			if tc.wantErr == nil {
				if err != nil || resp != ok {
					t.Fatalf("got %v, %v", resp, err)
				}
				return
			}
			var ae *llm.APIError
			if !errors.Is(err, tc.wantErr) || !errors.As(err, &ae) || !strings.Contains(ae.Message, tc.wantMsg) {
				t.Errorf("err = %v, want %v with %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

func TestLoopRetryAfter(t *testing.T) {
	n := 0
	var text string
	start := time.Now()
	_, err := fast(2).Run(context.Background(), func(e llm.Event) { text = e.Text }, func(context.Context) (*llm.Response, error) {
		n++
		if n == 1 {
			r := unavailable("slow down")
			r.After, r.HasAfter = 80*time.Millisecond, true
			return nil, r
		}
		return &llm.Response{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("retried after %s, the server asked for 80ms", d)
	}
	if !strings.Contains(text, "retrying in 80ms (attempt 2 of 2)") || !strings.Contains(text, "529 overloaded_error: slow down") {
		t.Errorf("retry event says %q", text)
	}
}

func TestLoopRetryAfterTooLong(t *testing.T) {
	n := 0
	_, err := fast(5).Run(context.Background(), nil, func(context.Context) (*llm.Response, error) {
		n++
		r := unavailable("rate limited")
		r.After, r.HasAfter = time.Hour, true
		return nil, r
	})
	if n != 1 || !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "asked to retry after 1h0m0s") {
		t.Errorf("after %d tries: %v", n, err)
	}
}

func TestLoopCancelWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := fast(5)
	l.Policy.Base, l.Policy.Max = time.Hour, time.Hour
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err := l.Run(ctx, nil, func(context.Context) (*llm.Response, error) { return nil, unavailable("x") })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestTraceSilence(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server notices when the client leaves
		switch r.URL.Path {
		case "/silent":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		case "/trickle":
			// A byte every 100ms for 600ms: longer than the timeout in
			// all, but never silent for that long.
			for range 6 {
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: Transport(nil)}
	get := func(path string, timeout time.Duration) (*Trace, []byte, error) {
		ctx, tr := Start(context.Background(), timeout)
		defer tr.Stop()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader([]byte(`{"q":1}`)))
		resp, err := hc.Do(req)
		if err != nil {
			return tr, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return tr, data, err
	}
	tr, _, err := get("/silent", 60*time.Millisecond)
	if err == nil || !tr.Silent() {
		t.Errorf("silent server: err %v, silent %v", err, tr.Silent())
	}
	if string(tr.Body()) != `{"q":1}` {
		t.Errorf("body recorded = %q", tr.Body())
	}
	if msg := Unreachable(srv.URL, tr, err).Err.Message; !strings.Contains(msg, "no response from 127.0.0.1") || !strings.Contains(msg, "60ms") {
		t.Errorf("message = %q", msg)
	}
	tr, data, err := get("/trickle", 400*time.Millisecond)
	if err != nil || tr.Silent() || len(data) != 6 {
		t.Errorf("trickling server: %v, silent %v, %d bytes", err, tr.Silent(), len(data))
	}
	tr, data, err = get("/trickle", 0)
	if err != nil || len(data) != 6 {
		t.Errorf("without a timeout: %v, %d bytes", err, len(data))
	}
}

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Post", URL: "http://x", Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid"}}, "cannot resolve api.example.invalid: no such host"},
		{&url.Error{Op: "Post", URL: "http://x", Err: errors.New("dial tcp: connection refused")}, "cannot reach api.example.com: dial tcp: connection refused"},
		{io.ErrUnexpectedEOF, "the connection to api.example.com broke off mid-response: unexpected EOF"},
		{errors.New("invalid character 'x'"), "bad response from api.example.com: invalid character 'x'"},
	} {
		r := Unreachable("https://api.example.com/v1", nil, tc.err)
		if r.Err.Message != tc.want || !errors.Is(r, llm.ErrUnavailable) {
			t.Errorf("Unreachable(%v) = %q, want %q", tc.err, r.Err.Message, tc.want)
		}
	}
}

func TestSaveRequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session", "new")
	body := []byte(`{"model":"m","messages":[]}`)
	path, err := SaveRequest(dir, body)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "bad-request-") {
		t.Errorf("saved as %s", path)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(data, body) {
		t.Errorf("read back %q, %v", data, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	second, _ := SaveRequest(dir, body)
	if second == path {
		t.Errorf("a second request overwrote the first")
	}
	if _, err := SaveRequest(filepath.Join(path, "x"), body); err == nil {
		t.Errorf("saving under a file succeeded")
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"40"}, "Retry-After": {"3"}}, 40 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := RetryAfter(tc.h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%v) = %s %v", tc.h, got, ok)
		}
	}
	d, ok := RetryAfter(http.Header{"Retry-After": {time.Now().Add(time.Minute).UTC().Format(http.TimeFormat)}})
	if !ok || d <= 0 || d > time.Minute {
		t.Errorf("HTTP date gave %s %v", d, ok)
	}
}

// TestNetworkRefused: a connection refused on loopback fails at once (a
// local server that is not running will not start by itself); anywhere
// else it is retried.
func TestNetworkRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, refused := http.Get("http://" + addr + "/v1/messages")
	if refused == nil {
		t.Skip("something answered on a closed port")
	}
	for _, tc := range []struct {
		base      string
		err       error
		retryable bool
		want      string
	}{
		{"http://" + addr, refused, false, "nothing is listening at " + addr + " (connection refused)"},
		{"http://localhost:1/v1", refused, false, "nothing is listening at localhost:1"},
		{"https://api.example.com/v1", refused, true, "cannot reach api.example.com"},
		{"http://" + addr, io.ErrUnexpectedEOF, true, "broke off mid-response"},
	} {
		err := Network(tc.base, nil, tc.err)
		var r *Retryable
		if errors.As(err, &r) != tc.retryable || !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Network(%s, %v) = %v (retryable %v), want %q, retryable %v", tc.base, tc.err, err, errors.As(err, &r), tc.want, tc.retryable)
		}
	}
}
