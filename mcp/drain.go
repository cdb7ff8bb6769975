package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Drained returns a newline-delimited JSON transport over in and out that
// answers every request read before in ends: a client may write its
// requests and close its end at once (a script, a test), and the server
// would otherwise stop with them unanswered. At the end of in it waits,
// at most wait, until a response has been written for every request read.
func Drained(in io.ReadCloser, out io.WriteCloser, wait time.Duration) *sdk.IOTransport {
	var c counts
	return &sdk.IOTransport{
		Reader: &drainReader{ReadCloser: in, c: &c, wait: wait},
		Writer: &countWriter{WriteCloser: out, c: &c},
	}
}

// counts are the requests read and the responses written so far.
type counts struct {
	mu                  sync.Mutex
	requests, responses int
}

func (c *counts) add(requests, responses int) {
	c.mu.Lock()
	c.requests += requests
	c.responses += responses
	c.mu.Unlock()
}

func (c *counts) answered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.responses >= c.requests
}

// lines splits a stream into frames and counts the ones keep accepts.
type lines struct {
	partial []byte
}

func (l *lines) feed(p []byte, keep func(frame []byte) bool) int {
	n := 0
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p...)
			return n
		}
		frame := append(l.partial, p[:i]...)
		if keep(frame) {
			n++
		}
		l.partial, p = l.partial[:0], p[i+1:]
	}
}

// frame holds the fields that tell a request from a response.
type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func isRequest(b []byte) bool {
	var f frame
	return json.Unmarshal(b, &f) == nil && len(f.ID) > 0 && f.Method != ""
}

func isResponse(b []byte) bool {
	var f frame
	return json.Unmarshal(b, &f) == nil && len(f.ID) > 0 && (len(f.Result) > 0 || len(f.Error) > 0)
}

type drainReader struct {
	io.ReadCloser
	c    *counts
	l    lines
	wait time.Duration
}

func (r *drainReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.add(r.l.feed(p[:n], isRequest), 0)
	if err == io.EOF {
		deadline := time.Now().Add(r.wait)
		for !r.c.answered() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return n, err
}

type countWriter struct {
	io.WriteCloser
	c  *counts
	mu sync.Mutex
	l  lines
}

func (w *countWriter) Write(p []byte) (int, error) {
	n, err := w.WriteCloser.Write(p)
	w.mu.Lock()
	k := w.l.feed(p[:n], isResponse)
	w.mu.Unlock()
	w.c.add(0, k)
	return n, err
}
