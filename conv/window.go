package conv

import (
	"errors"
	"fmt"
)

// ErrWindow is the sentinel of a conversation that does not fit the
// context window (DESIGN.md, invariant 6).
var ErrWindow = errors.New("conv: request over the context window")

// WindowError is a request over the window, with its figures. It unwraps
// to ErrWindow.
type WindowError struct {
	Tokens int // what the request needs: system, tools, messages and pending injections
	Limit  int // what it may use
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("conv: the request needs %d tokens and may use %d: over the context window by %d", e.Tokens, e.Limit, e.Tokens-e.Limit)
}

func (e *WindowError) Unwrap() error { return ErrWindow }

// CheckWindow is the one check of invariant 6: the request built from c
// (system blocks, tool schemas, messages and pending injections, counted
// with counter) must be no larger than limit tokens. It returns nil or a
// *WindowError. limit is what a request may use, in the counter's units:
// compact.Budget.Limit is the window less the output reserve, less the
// counter's error margin. Every caller that mutates a conversation before a
// request (the engine, the compactor, their tests) checks with this
// function, so there is one definition of "fits".
func CheckWindow(c *Conversation, limit int, counter Counter) error {
	if n := c.Tokens(counter).Total(); n > limit {
		return &WindowError{Tokens: n, Limit: limit}
	}
	return nil
}
