package serve

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// responsesBody is a Responses API request after n tool rounds.
func responsesBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-5.1","input":[{"role":"user","content":"fix the tests"}`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `,{"type":"function_call","call_id":"c%d","name":"shell","arguments":%s}`, i, q(fmt.Sprintf(`{"cmd":"go test ./p%d"}`, i)))
		fmt.Fprintf(&b, `,{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(fmt.Sprintf("ok p%d\n", i)))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestParseCacheSameAsParse: a request parsed with the cache, after the
// session's earlier requests filled it, is the request parsed afresh —
// spans, hashes and the links from results to calls included — also when
// a body is padded so every message moves, and when a cache breakpoint
// moves from one message to the next.
func TestParseCacheSameAsParse(t *testing.T) {
	s := sim{name: "pc", resultSize: 500, say: 100}
	shift := func(b []byte) []byte { return append([]byte("  \n"), b...) }
	tests := []struct {
		name   string
		body   func(n int) []byte
		cached func(pc *parseCache, b []byte) (*request, error)
		fresh  func(b []byte) (*request, error)
	}{
		{"anthropic", s.body, (*parseCache).anthropic, parseAnthropic},
		{"anthropic moved", func(n int) []byte { return shift(s.body(n)) }, (*parseCache).anthropic, parseAnthropic},
		{"chat", func(n int) []byte { return chatBody("pc", n, 300) }, (*parseCache).chat, parseChat},
		{"responses", responsesBody, (*parseCache).responses, parseResponses},
	}
	for _, tt := range tests {
		pc := newParseCache()
		for n := 1; n <= 6; n++ {
			for _, b := range [][]byte{tt.body(n), shift(tt.body(n))} {
				got, err := tt.cached(pc, b)
				if err != nil {
					t.Fatalf("%s turn %d: %v", tt.name, n, err)
				}
				want, err := tt.fresh(b)
				if err != nil {
					t.Fatalf("%s turn %d: %v", tt.name, n, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s turn %d: the cached parse differs:\n got %+v\nwant %+v", tt.name, n, got.Messages, want.Messages)
				}
			}
		}
		if len(pc.cur) == 0 {
			t.Errorf("%s: nothing was cached", tt.name)
		}
	}
}

// TestParseCacheBounded: the cache never holds more than two generations.
func TestParseCacheBounded(t *testing.T) {
	pc := newParseCache()
	for i := range 3*parseCacheSize + 5 {
		pc.putLocked(msgKey{h: uint64(i), n: 1, kind: kindAnthropic}, message{})
	}
	if n := len(pc.cur) + len(pc.old); n > 2*parseCacheSize {
		t.Fatalf("%d messages cached, want at most %d", n, 2*parseCacheSize)
	}
	if _, ok := pc.getLocked(msgKey{h: 3*parseCacheSize + 4, n: 1, kind: kindAnthropic}); !ok {
		t.Fatal("the newest message is not cached")
	}
}
