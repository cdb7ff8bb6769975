package llmtest

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/ctxkit/ctxkit/internal/jsonenc"
)

// canonical re-encodes a JSON value the way the cache sees it: key order
// kept (the real services render tool inputs in the order given, which is
// why randomised key order breaks caches), strings and numbers in one
// spelling, whitespace gone, and every cache_control key dropped, since
// moving a breakpoint does not change the cached content.
func canonical(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	dropCache := func(key string) bool { return key == "cache_control" }
	if err := jsonenc.Reencode(dec, &buf, dropCache, nil); err != nil {
		return raw
	}
	return buf.Bytes()
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := jsonenc.Marshal(s) // a string always encodes
	buf.Write(b)
}

// jsonString returns s as a JSON string literal.
func jsonString(s string) string {
	var buf bytes.Buffer
	writeString(&buf, s)
	return buf.String()
}

// isBlank reports whether s has no non-whitespace character.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// obj is a JSON object that keeps its keys in the order given, so that
// answers read like the real services' (which put "type" first).
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(&buf, p.k)
		buf.WriteByte(':')
		v, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
