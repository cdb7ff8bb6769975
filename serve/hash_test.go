package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
	"testing"
)

// hashValueRef is the recursive definition hashValue computes: a value
// without "cache_control" is its bytes; an object or array holding one is
// written member by member, compactly, without its cache_control members.
func hashValueRef(h hash.Hash, b []byte, sp span) error {
	if !bytes.Contains(b[sp.s:sp.e], kCacheControl) {
		h.Write(b[sp.s:sp.e])
		return nil
	}
	switch b[sp.s] {
	case '{':
		h.Write([]byte{'{'})
		first := true
		err := members(b, sp, func(key []byte, val span) error {
			if bytes.Equal(key, kCacheControl) {
				return nil
			}
			if !first {
				h.Write([]byte{','})
			}
			first = false
			h.Write(key)
			h.Write([]byte{':'})
			return hashValueRef(h, b, val)
		})
		h.Write([]byte{'}'})
		return err
	case '[':
		h.Write([]byte{'['})
		err := elems(b, sp, func(i int, val span) error {
			if i > 0 {
				h.Write([]byte{','})
			}
			return hashValueRef(h, b, val)
		})
		h.Write([]byte{']'})
		return err
	}
	h.Write(b[sp.s:sp.e])
	return nil
}

// FuzzHashValue: on any valid JSON value hashValue agrees with the
// recursive definition, and on any input it returns without panicking.
func FuzzHashValue(f *testing.F) {
	for _, s := range []string{
		`{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`,
		`{"a": [1, {"cache_control": {"type": "ephemeral"}, "b": "x"}], "c": "\"cache_control\""}`,
		`[{"cache_control":1},{"cache_control":2,"x":[{"cache_control":3}]}]`,
		`{"cache_control":{"cache_control":1}}`,
		`"cache_control"`,
		`{"k":"v"}`,
		`[[[[[{"cache_control":null}]]]]]`,
		`{"a":{"cache_control":1`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sp := span{skipWS(b, 0), len(b)}
		for sp.e > sp.s && isWS(b[sp.e-1]) {
			sp.e--
		}
		if !sp.ok() {
			return
		}
		got := sha256.New()
		err := hashValue(got, b, sp)
		if !json.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > maxDepth {
			return
		}
		want := sha256.New()
		if werr := hashValueRef(want, b, sp); werr != nil {
			return
		}
		if err != nil {
			t.Fatalf("hashValue(%q): %v; the definition hashes it", b, err)
		}
		if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
			t.Fatalf("hashValue(%q) differs from the definition", b)
		}
	})
}

// BenchmarkHashValueNesting hashes ~300 kB values with a cache breakpoint
// at every level, nested 1 to 500 deep: the MB/s column is flat in the
// depth (the recursive definition's cost grew with the square of it).
func BenchmarkHashValueNesting(b *testing.B) {
	for _, depth := range []int{1, 10, 100, 500} {
		var v bytes.Buffer
		v.WriteByte('[')
		for v.Len() < 300_000 {
			if v.Len() > 1 {
				v.WriteByte(',')
			}
			for range depth {
				v.WriteString(`{"cache_control":{"type":"ephemeral"},"text":"some words of content here","v":`)
			}
			v.WriteString(`"x"`)
			v.WriteString(strings.Repeat("}", depth))
		}
		v.WriteByte(']')
		body := v.Bytes()
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			h := sha256.New()
			for b.Loop() {
				h.Reset()
				if err := hashValue(h, body, span{0, len(body)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
