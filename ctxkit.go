// Package ctxkit keeps a long-running LLM coding agent coherent and cheap:
// it decides, before every request, which old tool results move down the
// fidelity ladder (compressed, cleared with a recall id, summarized) and
// assembles the request with prompt-cache anchors, so the context stays
// within the window and the provider's cache keeps paying.
//
// This package is the front door: New builds the engine (package engine,
// whose documentation is the manual: what a turn is, what Ready holds, the
// order of calls), Load reads a recorded session of any agent ctxkit
// knows. Embedding it in an agent takes four calls per turn:
//
//	e, err := ctxkit.New(ctxkit.Config{Model: "claude-sonnet-4-5", Keeper: store})
//	ready, err := e.Prepare(ctx, c)  // before each request: decide, then assemble
//	// send ready.Request; append the response to c
//	e.Observe(c, resp.Usage)          // the provider's count calibrates the engine
//	e.RoundEnded(ctx, c)              // the model answered without a tool
//
// The coding agent (package agent, ctxkit agent), the replay benchmark
// (package bench, ctxkit bench) and ctxkit compact are built on the same
// engine, so what the benchmark measures is what the agent runs.
package ctxkit

import (
	"context"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/micro"
)

// The engine's names, for a library user who imports only this package.
type (
	// Engine owns the context of one conversation (engine.Engine).
	Engine = engine.Engine
	// Config sets an Engine up; Keeper is required (engine.Config).
	Config = engine.Config
	// Ready is what one engine call decided (engine.Ready).
	Ready = engine.Ready
	// Decision is one decision and its reason (engine.Decision).
	Decision = engine.Decision
	// Conversation is the conversation model (conv.Conversation).
	Conversation = conv.Conversation
)

// New returns an engine for cfg (engine.New): zero fields take their
// defaults, an invalid cfg is an error.
func New(cfg Config) (*Engine, error) { return engine.New(cfg) }

// NewMemoryKeeper returns a Keeper that holds originals in memory, for a
// replay or a test; an agent passes its durable transcript instead.
func NewMemoryKeeper() *micro.MemoryKeeper { return engine.NewMemoryKeeper() }

// NewReplay drives e through a recorded session in the agent's call order
// (engine.Replay).
func NewReplay(e *Engine) *engine.Replay { return engine.NewReplay(e) }

// Load reads a recorded session — Claude Code, Codex, mini-SWE-agent,
// SWE-agent, OpenHands, or an Anthropic or OpenAI request body — into a
// Conversation.
func Load(ctx context.Context, path string) (*Conversation, error) {
	s, err := importer.Load(ctx, path, importer.Options{})
	if err != nil {
		return nil, err
	}
	return s.Conv, nil
}
