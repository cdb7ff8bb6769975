// Package agent is ctxkit's coding agent: the ReAct loop on top of the
// context engine.
package agent
