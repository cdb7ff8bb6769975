package main

import (
	"context"
	"errors"

	"github.com/ctxkit/ctxkit/bench"
)

// demoSession returns the demo session embedded in ctxkit. (Being recorded
// by the agent's generator; until then bench needs session files.)
func demoSession(ctx context.Context) (bench.Session, error) {
	return bench.Session{}, errors.New("no demo session embedded yet: pass session files or directories")
}
