// Package jsonenc encodes JSON the one way ctxkit writes it: compact, and
// without HTML escaping. encoding/json's Marshal escapes <, > and & as
// \u003c, \u003e and \u0026; tool output and code are full of them, and
// escaping would change tool inputs as the model wrote them, inflate token
// counts, and break the byte-identical requests prompt caching depends on.
// The wire encoders, the transcript, the tools' structured results and the
// importers all encode through [Marshal].
package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal returns the JSON encoding of v as json.Marshal does, but without
// escaping <, > and &, and without a trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
