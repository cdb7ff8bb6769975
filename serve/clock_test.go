package serve

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

func TestRequestTime(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	recorded := time.Date(2025, 3, 1, 9, 30, 15, 250_000_000, time.UTC)
	tests := []struct {
		name    string
		replay  bool
		header  string
		want    time.Time
		wantErr string
	}{
		{"no header", true, "", now, ""},
		{"the recorded time", true, recorded.Format(time.RFC3339Nano), recorded, ""},
		{"with an offset", true, "2025-03-01T10:30:15.25+01:00", recorded, ""},
		{"not a time", true, "yesterday", time.Time{}, `X-Ctxkit-Replay-Time "yesterday" is not an RFC 3339 time`},
		{"ignored without --replay-clock", false, recorded.Format(time.RFC3339Nano), now, ""},
		{"not even read without --replay-clock", false, "yesterday", now, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{cfg: Config{Clock: func() time.Time { return now }, ReplayClock: tt.replay}}
			h := http.Header{}
			if tt.header != "" {
				h.Set(HeaderReplayTime, tt.header)
			}
			got, err := s.requestTime(h)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestReplayTimeHeader: the header never goes upstream, and with
// --replay-clock a malformed one is refused in the provider's error format
// before anything is forwarded.
func TestReplayTimeHeader(t *testing.T) {
	for _, replay := range []bool{false, true} {
		up := llmtest.NewServer(t, llmtest.Config{})
		p := newProxy(t, up.URL, Config{ReplayClock: replay})
		send := func(value string) (*http.Response, []byte) {
			return p.postWith(t, "/v1/messages", "", sim{name: "rc", resultSize: 100}.body(2), http.Header{HeaderReplayTime: {value}})
		}
		if resp, data := send("2025-03-01T09:30:15Z"); resp.StatusCode != http.StatusOK {
			t.Fatalf("replay clock %v: %d %s", replay, resp.StatusCode, data)
		}
		// The conversation's engine judges the cache by the recorded
		// time with --replay-clock, by the proxy's own clock without.
		recorded := time.Date(2025, 3, 1, 9, 30, 15, 0, time.UTC)
		if got := mirrorNow(t, p.srv); got.Equal(recorded) != replay {
			t.Fatalf("replay clock %v: the engine's clock says %v", replay, got)
		}
		resp, data := send("yesterday")
		switch {
		case replay && (resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), `"invalid_request_error"`) || !strings.Contains(string(data), "RFC 3339")):
			t.Fatalf("a malformed time with --replay-clock: %d %s", resp.StatusCode, data)
		case !replay && resp.StatusCode != http.StatusOK:
			t.Fatalf("a malformed time without --replay-clock: %d %s", resp.StatusCode, data)
		}
		want := 1
		if !replay {
			want = 2
		}
		if n := len(up.Calls()); n != want {
			t.Fatalf("replay clock %v: %d calls upstream, want %d", replay, n, want)
		}
		for _, c := range up.Calls() {
			if v := c.Header.Get(HeaderReplayTime); v != "" {
				t.Fatalf("%s went upstream: %q", HeaderReplayTime, v)
			}
		}
	}
}

// mirrorNow is the engine clock of srv's only conversation.
func mirrorNow(t *testing.T, srv *Server) time.Time {
	t.Helper()
	srv.mirrors.mu.Lock()
	defer srv.mirrors.mu.Unlock()
	if len(srv.mirrors.m) != 1 {
		t.Fatalf("%d conversations, want 1", len(srv.mirrors.m))
	}
	for _, el := range srv.mirrors.m {
		m := el.Value.(*mirror)
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.now
	}
	return time.Time{}
}
