// Package ctxkit is the root of the ctxkit module: an engine that keeps a
// long-running LLM coding agent coherent and cheap, and the coding agent and
// replay benchmark built on it. The engine lives in the packages below this
// one; see DESIGN in the README for the map.
package ctxkit
