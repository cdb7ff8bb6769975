// Package mcp serves ctxkit's recall tool over the Model Context Protocol
// (the official Go SDK, github.com/modelcontextprotocol/go-sdk), reading
// the store ctxkit serve writes: a proxied agent whose tool result was
// cleared to a placeholder gets the original back by its recall id.
//
//	claude mcp add ctxkit -- ctxkit mcp
//
// A server recalls within a [Scope]: one tenant's view of the store and,
// optionally, one session; ids from elsewhere are refused like ids that
// do not exist ([ErrForeign]). Large originals come back in pages of at
// most [PageBytes] (offset and limit in lines), so they pass the client's
// MCP output limit whole.
package mcp
