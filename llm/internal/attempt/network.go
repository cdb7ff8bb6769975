package attempt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ctxkit/ctxkit/llm"
)

// Unreachable describes an attempt that got no usable answer from the
// server at baseURL: a failed DNS lookup, a refused or dropped connection,
// a silent server (tr.Silent), or a stream cut off. It is always worth
// another try.
func Unreachable(baseURL string, tr *Trace, err error) *Retryable {
	host := baseURL
	if u, perr := url.Parse(baseURL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var msg string
	var dns *net.DNSError
	var uerr *url.Error
	switch {
	case tr != nil && tr.Silent():
		msg = fmt.Sprintf("no response from %s for %s", host, tr.Timeout())
	case errors.As(err, &dns):
		msg = fmt.Sprintf("cannot resolve %s: %v", dns.Name, dns.Err)
	case errors.As(err, &uerr):
		msg = fmt.Sprintf("cannot reach %s: %v", host, uerr.Err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		msg = fmt.Sprintf("the connection to %s broke off mid-response: %v", host, err)
	case isNet(err):
		msg = fmt.Sprintf("connection to %s failed: %v", host, err)
	default:
		msg = fmt.Sprintf("bad response from %s: %v", host, err)
	}
	return &Retryable{Err: &llm.APIError{Kind: llm.ErrUnavailable, Message: msg}}
}

func isNet(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// RetryAfter reads how long a server asked to wait: retry-after-ms, or
// retry-after in seconds (possibly fractional) or as an HTTP date.
func RetryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t), true
	}
	return 0, false
}
