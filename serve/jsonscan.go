package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"
)

// A small JSON scanner that reports byte offsets, so the proxy can find the
// parts of a request body it may change and splice edits into the client's
// own bytes instead of re-serializing them (re-serialized JSON changes key
// order and escaping, and the provider's prompt cache then misses).

var errSyntax = errors.New("malformed JSON")

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// valueEnd returns the index just after the JSON value starting at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: unexpected end at byte %d", errSyntax, i)
	}
	switch c := b[i]; c {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, err := stringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%w: unclosed %c at byte %d", errSyntax, c, i)
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || isWS(c) {
				break
			}
			j++
		}
		if j == i {
			return 0, fmt.Errorf("%w: unexpected %q at byte %d", errSyntax, c, i)
		}
		return j, nil
	}
}

func stringEnd(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, fmt.Errorf("%w: unterminated string at byte %d", errSyntax, i)
		}
		q := j + k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// span is a byte range [s, e) of the body.
type span struct{ s, e int }

func (p span) ok() bool { return p.e > p.s }

// members calls f for each member of the object b[s:e] (s at '{') with
// the raw key (quotes included) and the value's span.
func members(b []byte, sp span, f func(key []byte, val span) error) error {
	return membersScan(b, sp, nil, f)
}

// membersScan is members, except that scan, if not nil, may read a
// member's value itself and return its end (ok true), so that a large
// value — the messages array — is scanned once, not once to skip it and
// again to read it.
func membersScan(b []byte, sp span, scan func(key []byte, at int) (end int, ok bool, err error), f func(key []byte, val span) error) error {
	if !sp.ok() || b[sp.s] != '{' {
		return fmt.Errorf("%w: want an object at byte %d", errSyntax, sp.s)
	}
	i := skipWS(b, sp.s+1)
	if i < sp.e && b[i] == '}' {
		return nil
	}
	for i < sp.e {
		ke, err := stringEnd(b, i)
		if err != nil || b[i] != '"' {
			return fmt.Errorf("%w: want a key at byte %d", errSyntax, i)
		}
		key := b[i:ke]
		i = skipWS(b, ke)
		if i >= sp.e || b[i] != ':' {
			return fmt.Errorf("%w: want ':' at byte %d", errSyntax, i)
		}
		i = skipWS(b, i+1)
		ve, scanned := 0, false
		if scan != nil {
			if ve, scanned, err = scan(key, i); err != nil {
				return err
			}
		}
		if !scanned {
			if ve, err = valueEnd(b, i); err != nil {
				return err
			}
		}
		if err := f(key, span{i, ve}); err != nil {
			return err
		}
		i = skipWS(b, ve)
		if i < sp.e && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < sp.e && b[i] == '}' {
			return nil
		}
		return fmt.Errorf("%w: want ',' or '}' at byte %d", errSyntax, i)
	}
	return fmt.Errorf("%w: unclosed object at byte %d", errSyntax, sp.s)
}

// elems calls f for each element of the array b[s:e] (s at '[').
func elems(b []byte, sp span, f func(i int, val span) error) error {
	if !sp.ok() || b[sp.s] != '[' {
		return fmt.Errorf("%w: want an array at byte %d", errSyntax, sp.s)
	}
	i := skipWS(b, sp.s+1)
	if i < sp.e && b[i] == ']' {
		return nil
	}
	for n := 0; i < sp.e; n++ {
		ve, err := valueEnd(b, i)
		if err != nil {
			return err
		}
		if err := f(n, span{i, ve}); err != nil {
			return err
		}
		i = skipWS(b, ve)
		if i < sp.e && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < sp.e && b[i] == ']' {
			return nil
		}
		return fmt.Errorf("%w: want ',' or ']' at byte %d", errSyntax, i)
	}
	return fmt.Errorf("%w: unclosed array at byte %d", errSyntax, sp.s)
}

// elemSpans reads the array starting at b[i] ('['): its elements' spans
// and the index just after it.
func elemSpans(b []byte, i int) ([]span, int, error) {
	if i >= len(b) || b[i] != '[' {
		return nil, 0, fmt.Errorf("%w: want an array at byte %d", errSyntax, i)
	}
	var out []span
	j := skipWS(b, i+1)
	if j < len(b) && b[j] == ']' {
		return nil, j + 1, nil
	}
	for j < len(b) {
		ve, err := valueEnd(b, j)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, span{j, ve})
		j = skipWS(b, ve)
		if j < len(b) && b[j] == ',' {
			j = skipWS(b, j+1)
			continue
		}
		if j < len(b) && b[j] == ']' {
			return out, j + 1, nil
		}
		return nil, 0, fmt.Errorf("%w: want ',' or ']' at byte %d", errSyntax, j)
	}
	return nil, 0, fmt.Errorf("%w: unclosed array at byte %d", errSyntax, i)
}

// arrayOf is a membersScan scan that reads the array under key into
// *spans (any other value is skipped as usual).
func arrayOf(b []byte, key []byte, spans *[]span) func(k []byte, at int) (int, bool, error) {
	return func(k []byte, at int) (int, bool, error) {
		if at >= len(b) || b[at] != '[' || !bytes.Equal(k, key) {
			return 0, false, nil
		}
		sps, end, err := elemSpans(b, at)
		*spans = sps
		return end, true, err
	}
}

// str decodes the JSON string at sp ("" when it is not a string).
func str(b []byte, sp span) string {
	if !sp.ok() || b[sp.s] != '"' {
		return ""
	}
	raw := b[sp.s:sp.e]
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) // no escapes
	}
	if s, ok := unescape(inner); ok {
		return s
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// unescape decodes a string's inside with the short escapes (\" \\ \/ \b
// \f \n \r \t) only: ok is false when it has anything else — a \u escape,
// a control character, bytes that are not UTF-8 — which encoding/json
// decodes instead, replacing what it must.
func unescape(inner []byte) (string, bool) {
	if !utf8.Valid(inner) {
		return "", false
	}
	var sb strings.Builder
	sb.Grow(len(inner))
	for len(inner) > 0 {
		k := bytes.IndexByte(inner, '\\')
		if k < 0 {
			k = len(inner)
		}
		for _, c := range inner[:k] {
			if c < 0x20 {
				return "", false
			}
		}
		sb.Write(inner[:k])
		if k+1 >= len(inner) {
			return sb.String(), k == len(inner)
		}
		c := inner[k+1]
		inner = inner[k+2:]
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return "", false
		}
		sb.WriteByte(c)
	}
	return sb.String(), true
}

// strs decodes a JSON array of strings, as json.Unmarshal into a []string
// would (null: none).
func strs(b []byte) ([]string, error) {
	sp := span{skipWS(b, 0), len(b)}
	if bytes.HasPrefix(b[sp.s:], []byte("null")) {
		return nil, nil
	}
	var out []string
	err := elems(b, sp, func(_ int, v span) error {
		if b[v.s] != '"' {
			return fmt.Errorf("%w: want a string at byte %d", errSyntax, v.s)
		}
		out = append(out, str(b, v))
		return nil
	})
	return out, err
}

// splice is one replacement of the body's bytes [s, e) by repl.
type splice struct {
	s, e int
	repl []byte
}

// applySplices returns body with the (sorted, non-overlapping) splices
// applied; every byte outside them is the body's.
func applySplices(body []byte, sp []splice) []byte {
	if len(sp) == 0 {
		return body
	}
	n := len(body)
	for _, x := range sp {
		n += len(x.repl) - (x.e - x.s)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, x := range sp {
		out = append(out, body[at:x.s]...)
		out = append(out, x.repl...)
		at = x.e
	}
	return append(out, body[at:]...)
}

// spliced is a body with splices applied, never materialized: it is sent
// upstream segment by segment (the body's bytes between the splices and
// the replacements), so a request holds one copy of the client's body.
type spliced struct {
	body []byte
	sp   []splice // sorted, non-overlapping
}

// len is the number of bytes of the spliced body.
func (x *spliced) len() int {
	n := len(x.body)
	for _, p := range x.sp {
		n += len(p.repl) - (p.e - p.s)
	}
	return n
}

// bytes materializes the spliced body.
func (x *spliced) bytes() []byte { return applySplices(x.body, x.sp) }

// reader reads the spliced body from its start; forward gives the HTTP
// client a fresh one to replay a request on a new connection.
func (x *spliced) reader() *splicedReader {
	bufs := make(net.Buffers, 0, 2*len(x.sp)+1)
	at := 0
	for _, p := range x.sp {
		bufs = append(bufs, x.body[at:p.s], p.repl)
		at = p.e
	}
	return &splicedReader{Buffers: append(bufs, x.body[at:]), x: x}
}

// splicedReader is a spliced body being read (net.Buffers: Read, WriteTo).
type splicedReader struct {
	net.Buffers
	x *spliced
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // never fails for a string
	// json.Marshal escapes <, >, & for HTML; the API does not need it, but it is
	// valid JSON either way, and deterministic.
	return b
}
