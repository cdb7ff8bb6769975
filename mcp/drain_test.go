package mcp_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/mcp"
)

// nopWriteCloser is a buffer standing for standard output.
type nopWriteCloser struct{ *bytes.Buffer }

func (nopWriteCloser) Close() error { return nil }

// TestDrainedAnswersQueuedRequests: a client that writes its requests and
// closes its end at once (a script) gets an answer to every one, and
// serverInfo carries the version it was given (issue 24 row 17).
func TestDrainedAnswersQueuedRequests(t *testing.T) {
	st, _ := tenants(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall","arguments":{"id":"nope"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"recall","arguments":{"id":"0000000000000000"}}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := mcp.New(mcp.Scope{Store: st}, "v1.2.3").Run(ctx, mcp.Drained(io.NopCloser(strings.NewReader(in)), nopWriteCloser{&out}, 10*time.Second))
	if err != nil && ctx.Err() != nil {
		t.Fatalf("run: %v", err)
	}
	got := out.String()
	for _, want := range []string{`"serverInfo":{"name":"ctxkit","version":"v1.2.3"}`, `"id":2,"result"`, `"id":3,"result"`, `"id":4,"result"`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
}
