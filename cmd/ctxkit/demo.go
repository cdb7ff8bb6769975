package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/importer"
)

// demoJSON is the demo session: ctxkit's own agent, driven by a scripted
// model (llmtest) with its real tools over a copy of this repository,
// recorded by agent/internal/demogen as Anthropic Messages JSON.
//
//go:embed demo/demo-session.json
var demoJSON []byte

// demoName is the name the demo session is reported under.
const demoName = "demo: ctxkit's agent on its own source tree"

// demoSession returns the demo session embedded in ctxkit, imported like
// any recorded session file.
func demoSession(ctx context.Context) (bench.Session, error) {
	dir, err := os.MkdirTemp("", "ctxkit-demo-")
	if err != nil {
		return bench.Session{}, fmt.Errorf("demo session: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "demo-session.json")
	if err := os.WriteFile(path, demoJSON, 0o600); err != nil {
		return bench.Session{}, fmt.Errorf("demo session: %w", err)
	}
	s, err := importer.Load(ctx, path, importer.Options{Format: importer.FormatAnthropic, Strict: true})
	if err != nil {
		return bench.Session{}, fmt.Errorf("demo session: %w", err)
	}
	return bench.Session{Name: demoName, Conv: s.Conv}, nil
}
