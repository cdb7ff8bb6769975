package engine

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ctxkit/ctxkit/textfmt"
)

// The context windows a user may ask for: below MinWindow no request
// leaves room for a prompt beside the response reserve; above MaxWindow no
// model has one. Every command that takes a window checks it with
// ParseWindow, so each says the same thing.
const (
	MinWindow = 1_000
	MaxWindow = 10_000_000
)

// ErrWindow is wrapped by ParseWindow's errors.
var ErrWindow = errors.New("a context window is a whole number of tokens")

// ParseWindow reads a context window in tokens as a user typed it, and
// fails, in the user's words, unless it is a whole number from MinWindow to
// MaxWindow.
func ParseWindow(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < MinWindow || n > MaxWindow {
		return 0, fmt.Errorf("%w from %s to %s, not %q", ErrWindow,
			textfmt.Thousands(MinWindow), textfmt.Thousands(MaxWindow), s)
	}
	return int(n), nil
}
