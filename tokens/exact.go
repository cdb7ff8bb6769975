package tokens

import (
	"errors"
	"fmt"

	"github.com/tiktoken-go/tokenizer"
)

// ErrUnknownEncoding is returned by NewExact for an encoding it does not
// support.
var ErrUnknownEncoding = errors.New("tokens: unknown encoding")

// Encodings lists the encodings NewExact supports.
func Encodings() []string { return []string{"o200k_base", "cl100k_base"} }

// Exact counts tokens exactly for one of OpenAI's encodings, with the
// vocabulary compiled into the binary (no network). It is much slower than
// the Estimator; use it where an exact count matters. It is safe for
// concurrent use.
type Exact struct {
	name  string
	codec tokenizer.Codec
}

// NewExact returns an exact counter for encoding, "o200k_base" or
// "cl100k_base".
func NewExact(encoding string) (*Exact, error) {
	var enc tokenizer.Encoding
	switch encoding {
	case "o200k_base":
		enc = tokenizer.O200kBase
	case "cl100k_base":
		enc = tokenizer.Cl100kBase
	default:
		return nil, fmt.Errorf("%w %q (supported: o200k_base, cl100k_base)", ErrUnknownEncoding, encoding)
	}
	c, err := tokenizer.Get(enc)
	if err != nil {
		return nil, fmt.Errorf("tokens: load %s: %w", encoding, err)
	}
	// Invalid UTF-8 counts as U+FFFD, as tiktoken's default decoding does.
	c.SetErrorMode(tokenizer.ErrorModeReplace)
	return &Exact{name: encoding, codec: c}, nil
}

// Encoding returns the encoding's name.
func (e *Exact) Encoding() string { return e.name }

// Count returns the number of tokens text encodes to.
func (e *Exact) Count(text string) int {
	n, err := e.codec.Count(text)
	if err != nil {
		// Only a regexp2 timeout can fail here, and none is set; count
		// something rather than nothing.
		return NewEstimator().Count(text)
	}
	return n
}
