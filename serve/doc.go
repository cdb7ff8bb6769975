// Package serve is ctxkit serve: an HTTP proxy in front of the Anthropic
// Messages API, the OpenAI chat completions and Responses APIs and the
// Gemini API that applies ctxkit's context engineering to every request
// an agent sends — any agent that lets its base URL be changed
// (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, a Codex model provider,
// GOOGLE_GEMINI_BASE_URL; docs/clients.md).
//
// # Faithful forwarding (DESIGN.md invariant 7)
//
// The proxy changes only what was decided: every other byte of the
// client's request is the client's. It never re-serializes a body; it
// finds the parts it may change with a scanner that reports byte offsets
// and splices the engine's edits (a tool result's content replaced by a
// placeholder, a run of messages replaced by the engine's summary message,
// a text or tool input cut to head and tail) into the original bytes, so unknown fields, key
// order and escaping stay as they were and the provider's prompt cache
// sees the client's prefix. Thinking blocks and their signatures are
// never touched, nor are the Responses API's encrypted reasoning items
// (redacted thinking to the engine: removed only with their turn, never
// parted from the call after them), a Codex compaction item and the
// history before it (fixed, like the system prompt), or Gemini parts that
// carry a thoughtSignature (pinned: never cut); the client's
// context_management is forwarded as sent.
// Headers go verbatim (keys are never logged or stored), streams are
// copied and flushed as they arrive (pings included), a client disconnect
// cancels the upstream call, and upstream errors come back unmodified.
//
// # One engine
//
// The proxy decides nothing itself: every decision about a conversation
// is the engine's (package engine), with its defaults and its token
// counter, the decisions the agent and ctxkit bench make. For each
// conversation the proxy keeps a mirror (mirror.go): the engine's
// conv.Conversation built from the client's messages — one conv block per
// content part, its id the shortest prefix (six hex digits or more) of
// the hash of the part's bytes (without cache_control, which clients
// move) that no earlier part took, so recall ids are as short as the
// engine's — and an Engine deciding on it. The
// client resends its whole history every turn; the mirror appends what is
// new and steps the engine once per request the history holds, as
// engine.Replay does for a recorded session: the round ends (rung 1: a
// 60 kB Bash log is compressed once its round ended), engine.Admit (a
// text of the newest message larger than the oversize guard,
// micro.Guard: 25,000 tokens, a quarter of a smaller window's, becomes
// its head and tail with its recall id; the guard does the same for a
// tool result), then Prepare: clearing (rung 2, micro's cache-aware rule
// on the provider's prices), compaction (rung 3: one summary of
// everything before the pinned tail, earlier summaries merged, never
// summarized again, with the recall index), and the escalation to the
// hard limit (drop, shrink: an oversize first message or paste is cut to
// head and tail with its recall id). Only a system prompt and tools over
// the limit go upstream over it (ctxkit_serve_over_window_total).
//
// What the engine decided is then spliced into the client's bytes
// (render.go): a result's content, a text, a tool call's input replaced in
// place; the messages a compaction replaced cut out, and the message the
// engine put in their place (the summary, or the drop marker, with the
// user's kept words and the recall index) written in the client's wire
// format where they stood. Blocks the engine carries on keep their bytes,
// and so does the newest message.
//
// # Cache anchors
//
// The engine's clearing prices a rewrite assuming the request carries a
// cache breakpoint on each block [engine.Engine.Hold] names (the cached
// prefix the request reads, the latest batch's frontier), as the agent's
// assembly places them. On Anthropic's wire the proxy splices one onto
// each held block (anchor.go), in the client's own cache_control form
// (its ttl kept, copied from the client's nearest breakpoint after the
// block), unless the client anchored it already. The API takes at most 4:
// when adding would exceed them, the client's message breakpoints go,
// oldest first — never the system prompt's or the tools', never the
// newest message's — and then the held block named last goes without. A
// client that sends no breakpoint gets none; OpenAI and Gemini cache by
// themselves.
//
// Every placeholder, cut note and index line says what it replaces — the
// tool, its key argument, its exit status (toolresult.Facts) — and names
// the recall tool the client offers its model: "call
// mcp__ctxkit__recall with id …", whether the tool is listed or deferred
// (Claude Code with tool search names a deferred MCP tool only in a
// <system-reminder>); without one, "recall <id>".
//
// # Tenants
//
// Every request belongs to a tenant: an HMAC of the credential it carries
// (x-api-key, a Bearer token, x-goog-api-key or ?key=; or, with [Keys],
// of the proxy key's tenant name) keyed with the
// install's secret kept in the store. Sessions, decisions, summaries,
// originals and usage are stored under the tenant (store.Scope) and a
// request reaches the store only through its tenant's view ([Server]
// keeps no unscoped store for request code), so nothing crosses tenants
// whatever session ids or content collide, and a conversation's mirror is
// its tenant's (the tenant is part of its key). The HTTP edge also checks the
// Host (and a browser's Origin) against the allowed hosts, reads bodies
// as they arrive under a deadline and a cap on bodies in flight, and
// returns upstream redirects unfollowed. docs/security.md has the whole
// model.
//
// # Sessions, replicas and the store
//
// Within its tenant, a request belongs to a session: Claude Code's x-claude-code-session-id
// header, else the session in metadata.user_id, else OpenAI's
// prompt_cache_key, else a hash of the system prompt and the first user
// message. A mirror is a cache, keyed by the session, the window, the
// model and the first message (a client's side requests share its session
// but not its history). What the engine decides is a function of the
// client's history, of the summaries it was given, and of what the
// provider reported for each response and when each request was sent
// (observe.go: the agent's engine has the same inputs) — block ids are
// content hashes, a summary is stored under the hash of the region it
// replaces and read back before any model is asked, and the reports and
// times are stored per request (store.KindObserved) — so a restarted
// proxy, or a second replica, rebuilds the mirror from the history and
// decides alike.
//
// A request the upstream refuses for its size (the model's window is
// smaller than the proxy took it to be) is retried as the agent retries
// one: the engine decides again at the sizes the refusal states
// (engine.Engine.Retry) and the request goes upstream once more before
// anything reaches the client; the sizes are stored with its decisions
// (store.KindRefused) and a rebuilt mirror retries at the same request
// (refused.go).
//
// Nothing is stored before the upstream accepted the request: once it
// answers 2xx, the originals of what left the context are stored (recall
// reads them), then the summaries, then the decisions under a
// compare-and-set on the session's version, before the answer reaches the
// client. A request the upstream refuses (a wrong key, an overload) leaves
// no trace, and the mirror that decided as if it had gone through is
// dropped. A summary another replica stored first for the same region
// wins. A store that does not answer makes the proxy fail open.
//
// # Summaries
//
// A summary is written by the upstream with the client's credentials, on
// the client's own request: the bytes the upstream last saw (the engine's
// decisions so far spliced in) with the instruction appended as the final
// user turn (a Responses request gets it as a final user input item, its
// encrypted reasoning as it came), so the upstream reads the client's
// cached prefix. Another Config.SummaryModel (caches are per model), or a
// request too long for the window, sends the region as a transcript
// instead (a Gemini conversation always: generateContent with the
// client's x-goog-api-key only); failing that the engine's extractive
// summarizer writes it, and then the engine's own fallback chain (a
// truncation marker) applies.
//
// # Speed
//
// Each request's window is its model's (package llm's model table) unless
// Config.Window sets one. The parse of each message is cached under a hash
// of its bytes, and the mirror holds the engine's incremental state, so a
// request costs one hash pass over the history plus the engine's work for
// what is new (BenchmarkAddedLatency).
//
// # Failing open
//
// A body the proxy cannot parse, or any internal failure, sends the
// original request upstream unchanged, logged and counted
// (ctxkit_serve_fail_open_total); Config.FailClosed answers 502 instead.
package serve
