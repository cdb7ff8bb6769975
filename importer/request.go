package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"
	"os"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// request imports a provider request body (Anthropic Messages, OpenAI
// chat completions or Gemini generateContent) through the wire codecs. A bare JSON array is taken
// as the messages list. Request bodies are read whole: they are what one
// API call carries, far below the sizes session logs reach.
func (r *run) request(format string) error {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return err
	}
	data = bytes.TrimPrefix(data, bom)
	if !utf8.Valid(data) {
		if r.strict {
			return r.lineErr(1+bytes.Count(data[:invalidAt(data)], []byte{'\n'}), ErrInvalidUTF8)
		}
		r.w.add("invalid UTF-8 replaced with U+FFFD, the first on line %d", 1+bytes.Count(data[:invalidAt(data)], []byte{'\n'}))
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	var syn *json.SyntaxError
	if err := json.Unmarshal(data, new(json.RawMessage)); errors.As(err, &syn) {
		return r.lineErr(1+bytes.Count(data[:min(int(syn.Offset), len(data))], []byte{'\n'}), fmt.Errorf("%w: %s", ErrMalformed, jsonerr.What(err)))
	} else if err != nil {
		return fmt.Errorf("%w: %s", ErrMalformed, jsonerr.What(err))
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		data = append(append([]byte(`{"messages":`), t...), '}')
	}
	decode := wire.DecodeAnthropic
	switch format {
	case FormatOpenAI:
		decode = wire.DecodeOpenAI
	case FormatGemini:
		decode = wire.DecodeGemini
	}
	req, err := decode(data)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrMalformed, jsonerr.What(err))
	}
	r.fromRequest(req)
	return nil
}

func (r *run) fromRequest(req *llm.Request) {
	r.s.Model = req.Model
	r.b.system = req.System
	r.b.tools = req.Tools
	for _, m := range req.Messages {
		r.b.named(m.Blocks)
		r.b.msgs = append(r.b.msgs, m)
	}
}

// invalidAt returns the offset of the first byte that is not UTF-8.
func invalidAt(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(data)
}
