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
// first user message, a text or tool input cut to head and tail) into the original bytes, so unknown fields, key
// order and escaping stay as they were and the provider's prompt cache
// sees the client's prefix. Thinking blocks and their signatures are
// never touched; the client's context_management is forwarded as sent.
// Headers go verbatim (keys are never logged or stored), streams are
// copied and flushed as they arrive (pings included), a client disconnect
// cancels the upstream call, and upstream errors come back unmodified.
//
// # Tenants
//
// Every request belongs to a tenant: an HMAC of the credential it carries
// (or, with [Keys], of the proxy key's tenant name) keyed with the
// install's secret kept in the store. Sessions, decisions, summaries,
// originals and usage are stored under the tenant (store.Scope) and a
// request reaches the store only through its tenant's view ([Server]
// keeps no unscoped store for request code), so nothing crosses tenants
// whatever session ids or content collide. The HTTP edge also checks the
// Host (and a browser's Origin) against the allowed hosts, reads bodies
// as they arrive under a deadline and a cap on bodies in flight, and
// returns upstream redirects unfollowed. docs/security.md has the whole
// model.
//
// # Sessions and decisions
//
// Within its tenant, a request belongs to a session: Claude Code's x-claude-code-session-id
// header, else the session in metadata.user_id, else OpenAI's
// prompt_cache_key, else a hash of the system prompt and the first user
// message. Every decision names the content it applies to by hash (the
// block's bytes without cache_control, which clients move), is stored in
// a store.Store under a compare-and-set on the session's version, and is
// applied again to every later request that still carries that content:
// the client resends its whole history every turn, and the proxy's
// rewrite of it stays byte-stable, so later requests read the cache.
//
// # What is decided, and when
//
// A [Decider] decides; the built-in one, [Ladder], is the fidelity ladder
// ctxkit's own agent runs (package engine), with micro's and compact's
// rules, defaults and arithmetic, not a copy of them. It keeps nothing
// in memory between requests: what its rules need from earlier requests
// is read off the client's history, which every request carries whole —
// so a restarted proxy or a second replica decides alike.
//
// The budget is compact's: for the configured window and the request's
// max_tokens, compact.Config.Budget gives the soft and hard thresholds,
// the target a compaction aims at, and the hard limit (the window less
// the response reserve, less the token counter's 10% error). A request
// is measured at a token per four bytes of its JSON, which over-counts
// escapes and so errs on the safe side, and each base64 image at
// conv.ImageTokens, what providers charge, not its bytes.
//
//   - Clearing (rung 2, micro's rules). A tool result is consumed once an
//     assistant message follows it; the three newest consumed results stay
//     whole, results of 100 bytes or less are never cleared, and a file
//     read stays until a later call edits, writes or re-reads the same
//     file (micro.Stales). The rest is clearable, and clears in one batch
//     when micro.CacheAware says it pays, on the provider's prices: the
//     rent already paid for sending it (each result's tokens times the
//     earlier requests of the history that sent it while clearable) must
//     reach the rewrite the batch causes in the provider's cache, scaled
//     by the Lindy horizon (half the requests so far, capped at the
//     requests left before the soft threshold); above 80% of the window
//     it clears at once. The rewrite runs from the start of the messages
//     to the previous request's end for Anthropic (the client's anchors
//     are at the system prompt and its newest messages) and from the
//     batch's first block for OpenAI (every prefix is cached).
//   - Compaction (rung 3, compact's rules). Everything after the first
//     user message up to the pinned tail (the last four assistant turns
//     and 2% of the window, at most half the target, the last step
//     always) is summarized in one summary: at the soft threshold when
//     that frees at least the gap between the soft threshold and the
//     target, at the hard threshold whenever it frees anything, and
//     earlier where compact.Plan says the next compaction is due and pays
//     back (the cost model: what a compaction costs against the rent the
//     growing context pays; growth read off the messages since the last
//     summary, as the proxy keeps no counters). The run ends before an assistant message, so every
//     tool call keeps its result and roles alternate; the summary is
//     appended to the first user message. The compaction request rewrites
//     the prompt anyway, so every clearable result is cleared with it.
//   - The hard limit. No request goes upstream over the limit while
//     anything is left to cut. Over it, the proxy escalates as compact's
//     ladder does: everything clearable is cleared; everything before the
//     pinned tail is summarized; if the summary would not fit, the oldest
//     steps (the last always stays) are dropped behind a truncation
//     marker (compact.DropMarker) that names the files they changed and
//     the recall ids of their tool results, whose originals are stored
//     first; and if the rest is still over, the largest blocks — tool
//     results, text blocks and string contents (the user's own paste
//     too), tool call inputs (keys kept) — are cut to head and tail at
//     compact's water level (compact.ShrinkLevel), each with a note and
//     the recall id of its original. Thinking blocks and their signatures
//     are never touched. A summary that comes out larger than estimated
//     is caught by deciding again on the rewritten request (at most four
//     rounds). What cannot be cut — a system prompt and tools over the
//     limit, thinking blocks or images alone — goes upstream as it is,
//     the provider answers, and ctxkit_serve_over_window_total counts it.
//     The proxy's own summary requests are cut to the limit too.
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
