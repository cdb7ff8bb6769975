// Package serve is ctxkit serve: an HTTP proxy in front of the Anthropic
// Messages API and the OpenAI chat completions and Responses APIs that
// applies ctxkit's context engineering to every request an agent sends —
// any agent that lets its base URL be changed (ANTHROPIC_BASE_URL,
// OPENAI_BASE_URL).
//
// # Faithful forwarding (DESIGN.md invariant 7)
//
// The proxy changes only what was decided: every other byte of the
// client's request is the client's. It never re-serializes a body; it
// finds the parts it may change with a scanner that reports byte offsets
// and splices its edits (a tool result's content replaced by a
// placeholder, a run of messages cut out, a summary block appended to the
// first user message) into the original bytes, so unknown fields, key
// order and escaping stay as they were and the provider's prompt cache
// sees the client's prefix. Thinking blocks and their signatures are
// never touched; the client's context_management is forwarded as sent.
// Headers go verbatim (keys are never logged or stored), streams are
// copied and flushed as they arrive (pings included), a client disconnect
// cancels the upstream call, and upstream errors come back unmodified.
//
// # Sessions and decisions
//
// A request belongs to a session: Claude Code's x-claude-code-session-id
// header, else the session in metadata.user_id, else OpenAI's
// prompt_cache_key, else a hash of the system prompt and the first user
// message. Every decision names the content it applies to by hash (the
// block's bytes without cache_control, which clients move), is stored in
// a store.Store under a compare-and-set on the session's version, and is
// applied again to every later request that still carries that content:
// the client resends its whole history every turn, and the proxy's
// rewrite of it stays byte-stable, so later requests read the cache.
//
// A [Decider] decides; [Thresholds] is the built-in one until the engine
// package's turn loop is wired in.
//
// # Summaries
//
// A summary is written by the upstream with the client's credentials, on
// the client's own request: the bytes the upstream last saw (the session's
// earlier decisions applied) with the instruction appended as the final
// user turn, so the upstream reads the client's cached prefix. Another
// Config.SummaryModel (caches are per model), a Responses request, or a
// request too long for the window sends the span as a transcript instead;
// then an extractive summary; then a truncation marker.
//
// # Windows and speed
//
// Each request's window is its model's (package llm's model table) unless
// Config.Window sets one. The client resends its whole history every
// turn, so the parse of each message is cached under a hash of its bytes:
// a request costs one hash pass over the history, and only its new
// messages are scanned and hashed (BenchmarkAddedLatency).
//
// # Failing open
//
// A body the proxy cannot parse, or any internal failure, sends the
// original request upstream unchanged, logged and counted
// (ctxkit_serve_fail_open_total); Config.FailClosed answers 502 instead.
package serve
