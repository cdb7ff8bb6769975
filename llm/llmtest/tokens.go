package llmtest

import "github.com/ctxkit/ctxkit/conv"

// Tokens is the servers' token count of a text: one token per four bytes,
// rounded up. It is deliberately simple so that tests can predict it.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// Framing the servers add, like the real services, so that many small
// blocks are not free.
const (
	blockTokens   = 3
	messageTokens = 4
	toolTokens    = 8
	imageTokens   = conv.ImageTokens
)
