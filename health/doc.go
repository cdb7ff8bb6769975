// Package health watches the prompt cache and keeps the metrics of a
// session (seed 001 §7.4, §10.8): per turn the input, output, cache-write
// and cache-read tokens and the hit ratio; totals, the session's hit rate
// and the number of compactions in a [Stats] value the CLI (and later a
// metrics endpoint) reads; and thrash detection.
//
// # Thrash detection
//
// A cache read is expected on a turn when the previous request put
// something in the cache (its usage shows a cache write or read, or, for a
// provider that caches prefixes by itself, its prompt reached the minimum
// cacheable length), it was sent within the cache's time to live, and no
// compaction happened in between (a compaction rewrites the conversation
// on purpose). A turn that reads nothing although a read was expected is a
// miss; Threshold misses in a row (3 by default) produce a warning, logged
// with slog and returned in the [Report], naming what changed: the model,
// the tool definitions (which tool), the system prompt (which block), or
// the message and block where the request first differs from the previous
// one. Requests are compared block by block on what the provider sees
// (ids, metadata and cache_control markers excluded). When nothing before
// the previous request's last anchor changed, the warning says so and
// whether this request's nearest anchor lies beyond the provider's
// 20-block lookback from it.
//
// A Monitor is safe for concurrent use: the agent records turns while the
// CLI reads Stats.
package health
