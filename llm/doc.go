// Package llm is the provider layer: the small [Provider] interface the
// engine talks to, the provider-neutral [Request] and [Response], usage
// figures, the errors callers act on, the [Retry] policy providers share,
// and the model table ([LookupModel]: context window, output limit and
// minimum cacheable prefix per model name, with overrides). The adapters
// live in subpackages (anthropic, openai) so that SDK types never leak past
// them; llmtest holds in-process servers that speak the real wire formats
// and the conformance suite every Provider passes.
package llm
