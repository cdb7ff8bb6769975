package serve

import (
	"fmt"
	"net/http"
	"time"
)

// HeaderReplayTime carries, in RFC 3339, when a replayed request was
// recorded. With Config.ReplayClock the engine judges the provider's cache
// lifetime by it instead of Config.Clock: this is how ctxkit bench --proxy
// gives a running proxy the recording's clock, as the bench gives it to the
// engine it replays directly. It never goes upstream, and without
// ReplayClock it is ignored.
const HeaderReplayTime = "X-Ctxkit-Replay-Time"

// requestTime is when the request in h counts as sent: its HeaderReplayTime
// with Config.ReplayClock, else the clock's now.
func (s *Server) requestTime(h http.Header) (time.Time, error) {
	v := h.Get(HeaderReplayTime)
	if !s.cfg.ReplayClock || v == "" {
		return s.cfg.Clock(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", HeaderReplayTime, v)
	}
	return t, nil
}

// upstreamHeader is the client's headers as they go upstream: all but the
// connection's (hop-by-hop), Accept-Encoding (the transport negotiates
// compression itself, so the proxy can read usage), Content-Length and
// the proxy's own HeaderReplayTime.
func upstreamHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range hopHeaders {
		out.Del(k)
	}
	for _, k := range []string{"Accept-Encoding", "Content-Length", HeaderReplayTime} {
		out.Del(k)
	}
	return out
}
