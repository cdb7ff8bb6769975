// Package conv holds the conversation model every other part of ctxkit works
// on: blocks with their trust tier, source, token count, pin and compact
// flags and rung on the fidelity ladder; messages; the conversation with its
// system blocks, tool schemas and pending injections; rounds; and the
// invariant checker and Repair that keep a conversation acceptable to the
// providers (DESIGN.md, invariants 1–3). What ctxkit does not read is kept,
// not dropped: an opaque block holds a block of an unknown type as its
// provider's bytes, and a server tool call is a call the provider ran
// itself, which no tool_result answers (docs/formats.md).
//
// conv imports nothing else of ctxkit. Token counting goes through the
// one-method [Counter] it declares, so counts are cached per block and a
// conversation that grew by one message costs only that message to count.
package conv
