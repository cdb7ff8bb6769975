// Package openai is the llm.Provider for OpenAI chat completions and every
// server that speaks them — Ollama, vLLM, the llama.cpp server, DeepSeek —
// on the official SDK (github.com/openai/openai-go/v3). It lives apart
// from the Anthropic adapter so that the Anthropic path does not pay for
// this SDK.
//
// Calls stream with stream_options.include_usage and are retried like the
// Anthropic ones (429, 5xx, connection failures, a stream cut off, a server
// silent past the attempt timeout; retry-after honoured). Only parameters
// every compatible server understands are sent: against api.openai.com the
// output limit goes as max_completion_tokens, elsewhere as max_tokens.
// The key comes from OPENAI_API_KEY and is optional when a base URL is
// given, since local servers need none.
//
// Mapping: system blocks become one system message; tool results become
// tool messages ahead of the user's text; thinking blocks are not sent
// (chat completions has no place for them). Reasoning streamed as
// reasoning_content (DeepSeek, vLLM) or reasoning (Ollama, OpenRouter) is
// passed on as thinking events but not kept in the message, since no
// provider would accept it back. Usage: cache reads are
// prompt_tokens_details.cached_tokens (DeepSeek: prompt_cache_hit_tokens),
// input is the prompt less the cached part.
package openai
