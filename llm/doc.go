// Package llm is the provider layer: the small [Provider] interface the
// engine talks to, the provider-neutral [Request] and [Response], usage
// figures, and the errors callers act on. The adapters live in
// subpackages (anthropic, openai) so that SDK types never leak past them;
// llmtest holds in-process servers that speak the real wire formats.
package llm
