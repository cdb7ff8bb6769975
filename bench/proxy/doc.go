// Package proxy measures a context-management proxy with ctxkit bench: it
// replays each recorded session as its client would have sent it — the
// whole history every turn, with the client's own cache anchors — through
// the proxy, into a stand-in upstream ([Upstream]) that speaks the
// provider's wire format (package llm/llmtest: it validates every request
// and answers it), answers the proxy's summary requests with the bench's
// offline summarizer, and records what the proxy sent. The requests that
// went upstream are handed to the bench's replay, which bills them with
// its simulated cache and measures evidence recall on them exactly as it
// does for every other strategy ([bench.StepInfo.AsSent]); the summary
// requests are billed as the model calls they were.
//
// [Serve] is the "serve" strategy: ctxkit serve's real handler
// (serve.New), one in-process instance per session with an in-memory
// store, over loopback HTTP. [Remote] is the same replay through any
// proxy already running at a URL (ctxkit bench --proxy), whose upstream
// the user points at an [Upstream] the bench runs.
//
// # Which client
//
// The wire follows the price table, because the table is the provider: a
// table with explicit caching (Anthropic) replays the session as Claude
// Code sends it — Anthropic Messages, cache_control on the end of the
// system prompt, on the newest message and on the message before the
// newest user message (the breakpoints the bench's peers place,
// bench.ClientAnchors) — and a table with automatic caching (OpenAI)
// replays it as an OpenAI-style client (Codex and SDKs) sends chat
// completions, with no anchors (the provider caches prefixes itself).
// Requests are not streamed; max_tokens is the output reserve ctxkit's
// own strategy takes at the bench's window ([MaxTokens]), so both work
// with the same prompt budget. Recorded thinking blocks carry the
// signature the stand-in gives their text, as a client echoes the
// signatures its provider gave it.
//
// # What the proxy is told, and how its recall ids count
//
// The stand-in reports, for the client's forwarded request, the usage the
// bench bills for it (usage.go), as a provider reports its own. A recall
// id the proxy writes is resolved through the proxy's recall tool
// ([Recaller]; ctxkit serve's store, [StoreRecall]) to the recorded block
// it returns, and then counts under the bench's one rule, as ctxkit's own
// ids do (recall.go).
//
// # Why a package of its own
//
// bench and serve are both apps (DESIGN.md: arrows point down, never
// sideways), so bench may not import serve. This package sits above both
// and cmd/ctxkit wires it in: bench keeps one replay, one cache model and
// one recall measure, and a strategy whose requests are "as sent" skips
// only the bench's own anchoring.
package proxy
