package attempt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
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

// Network is the error of an attempt that got no answer from the server
// at baseURL: Unreachable, retried, except a connection refused on this
// machine's loopback, where nothing is listening and waiting will not
// change that: it fails at once, saying so.
func Network(baseURL string, tr *Trace, err error) error {
	u, perr := url.Parse(baseURL)
	if perr == nil && errors.Is(err, syscall.ECONNREFUSED) && isLoopback(u.Hostname()) {
		return &llm.APIError{Kind: llm.ErrUnavailable, Message: fmt.Sprintf(
			"nothing is listening at %s (connection refused): start the server, or give another base URL", u.Host)}
	}
	return Unreachable(baseURL, tr, err)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
