// Package llmtest holds in-process HTTP servers that stand in for the
// Anthropic Messages API, the OpenAI chat completions and Responses APIs
// and the Gemini API (generateContent, streamGenerateContent, countTokens)
// in tests, and
// a conformance suite every llm.Provider passes against them, in the
// spirit of net/http/httptest and testing/slogtest.
//
// A [Server] speaks the real wire formats: JSON and server-sent-event
// streams with the real event sequences, the real error bodies, and usage
// with prompt caching simulated the way each service caches (Anthropic at
// explicit breakpoints with the 20-block lookback and a minimum cacheable
// length; OpenAI automatically by longest prefix). Replies are scripted
// ([Server.Enqueue], [Server.Handle]); faults are injected the same way
// (429 with retry-after, 529, 500, 401, 403, a stream cut mid-way or ended
// early, an error event mid-stream, a server too slow for the client's
// timeout). Requests over [Config.Window] tokens get the provider's
// prompt-too-long error.
//
// Every request is checked against the real API's rules — alternation,
// tool_use/tool_result pairing, at most 4 cache_control breakpoints, known
// block types, non-empty text, valid tool names, untouched thinking; for
// Responses, every call answered by its output and every encrypted
// reasoning item byte-identical ([EncryptedContent]) and followed by the
// item it came with; for Gemini, function responses right after their
// call turn and as many, every thoughtSignature verified against its part
// ([ThoughtSignature]) and present on the current turn's calls — and
// answered with a 400 in the provider's error shape, worded as the real
// API words it, when it breaks one. (Two consecutive messages of one role,
// which the Anthropic API would silently merge, are refused too: merging
// would hide an engine bug and move the cache prefix.) A
// Server made with [NewServer] fails its test at cleanup if any request was
// rejected that the test did not take back with [Server.TakeRejected], so
// a test fails whenever the engine produces a request a real provider
// would refuse.
//
// Token counts are deterministic: a block costs a small framing overhead
// plus one token per four bytes of its text ([Tokens]), so tests can
// predict prompt sizes, cache reads and the prompt-too-long threshold.
package llmtest
