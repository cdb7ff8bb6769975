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
// The wire follows the price table, because the table is the provider
// the session is billed at, and within it the session's own client; --wire
// forces one for every session ([ServeWire], [RemoteWire]; [Wires]). One
// [client] per wire, one file each:
//
//   - with a table of automatic caching (--pricing openai, gemini), a
//     Codex CLI rollout (family "codex") as Codex CLI 0.169 sends the
//     OpenAI Responses API: stateless (store false, the whole history as
//     input every turn), the system prompt as developer messages inside
//     input, streamed, prompt_cache_key the session, every reasoning item
//     sent back with the encrypted content the stand-in issued for it
//     (the recorded ciphertext resealed at its length), apply_patch as a
//     custom tool and custom_tool_call items, no max_output_tokens;
//   - with such a table, a Gemini CLI session (family "gemini…") as
//     Gemini CLI 0.61 sends :streamGenerateContent?alt=sse: contents and
//     parts, the key in x-goog-api-key, thoughts not sent back, the
//     thoughtSignature the stand-in put on the first function call of
//     each answer sent back on it;
//   - with such a table, any other session as an OpenAI-style client
//     (SDKs) sends chat completions, with no anchors (the provider caches
//     prefixes itself);
//   - with a table of explicit caching (Anthropic), every session as
//     Claude Code sends Anthropic Messages — cache_control on the end of
//     the system prompt, on the newest message and on the message before
//     the newest user message (bench.ClientAnchors). Recorded thinking
//     blocks carry the signature the stand-in gives their text.
//
// Requests ask for max_tokens of the output reserve ctxkit's own strategy
// takes at the bench's window ([MaxTokens]) where the wire has the field,
// so both work with the same prompt budget. The run's price table bills
// every strategy alike. When a proxy forwards a
// request without the provider's request id (the Gemini API has none)
// and changed the client's newest message, the forwarded request is the
// last call the proxy made for it: a proxy forwards after its own calls.
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
