// Package mcp serves ctxkit's recall tool over the Model Context Protocol
// (the official Go SDK, github.com/modelcontextprotocol/go-sdk), reading
// the store ctxkit serve writes: a proxied agent whose tool result was
// cleared to a placeholder gets the original back by its recall id.
//
//	claude mcp add ctxkit -- ctxkit mcp
package mcp
