package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/store"
)

// TestStatusPageCount: the status page counts its sessions in English
// ("1 recent session", not "1 recent sessions").
func TestStatusPageCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{1, "· 1 recent session</p>"}, {2, "· 2 recent sessions</p>"}} {
		var buf bytes.Buffer
		err := statusPage.Execute(&buf, statusData{Host: "127.0.0.1:8788", Sessions: make([]store.Session, tt.n)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), tt.want) {
			t.Errorf("%d sessions: the page does not say %q", tt.n, tt.want)
		}
	}
}

// TestStatusPageKeepValue: the status page says the knob the proxy runs
// at when it is not the default, so a team sees what it pays for.
func TestStatusPageKeepValue(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{{0, "each model's window · 0 recent"}, {4, "each model's window · keep value 4 · 0 recent"}} {
		var buf bytes.Buffer
		if err := statusPage.Execute(&buf, statusData{KeepValue: tt.v}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), tt.want) {
			t.Errorf("keep value %v: the page does not say %q", tt.v, tt.want)
		}
	}
}

// TestErrorsCountedApart: a request the upstream answers with an error, or
// that the proxy answers with its own 502 (upstream unreachable), is not
// a session's request: it is counted as an error on the status page and
// in ctxkit_serve_errors_total (issue 24 row 17).
func TestErrorsCountedApart(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	p := newProxy(t, up.URL, Config{})
	s := sim{name: "errors", resultSize: 200}
	if resp, data := p.post(t, "/v1/messages", "err-1", s.body(1)); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	up.Enqueue(llmtest.Fail(llmtest.Fault{Kind: llmtest.ServerError}))
	if resp, _ := p.post(t, "/v1/messages", "err-1", s.body(2)); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d, want the upstream's 500", resp.StatusCode)
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	gone := newProxy(t, dead.URL, Config{Store: p.store})
	if resp, _ := gone.post(t, "/v1/messages", "err-1", s.body(2)); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want the proxy's 502", resp.StatusCode)
	}

	x, err := p.tenant(t).Session(context.Background(), "cc:err-1")
	if err != nil {
		t.Fatal(err)
	}
	if x.Totals.Requests != 1 {
		t.Errorf("the session counts %d requests, want 1: errors are not requests", x.Totals.Requests)
	}
	for _, tt := range []struct {
		p    *proxy
		want string
	}{{p, `ctxkit_serve_errors_total{provider="anthropic",status="500"} 1`}, {gone, `ctxkit_serve_errors_total{provider="anthropic",status="502"} 1`}} {
		// The error is counted once its response is out: wait for it.
		m := metricsText(t, tt.p)
		for i := 0; i < 200 && !strings.Contains(m, tt.want); i++ {
			time.Sleep(10 * time.Millisecond)
			m = metricsText(t, tt.p)
		}
		if !strings.Contains(m, tt.want) {
			t.Errorf("metrics lack %s:\n%s", tt.want, grep(m, "errors_total"))
		}
	}
	resp, err := http.Get(p.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(page), "errors<b>1</b>") || !strings.Contains(string(page), "requests<b>1</b>") {
		t.Errorf("the status page does not show 1 request and 1 error:\n%s", page)
	}
}
