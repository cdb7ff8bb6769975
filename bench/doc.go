// Package bench replays recorded agent sessions through context-management
// strategies — ctxkit's own and models of its peers' — and measures what
// each would have cost and what the model could still see.
//
// The replay walks a recording turn by turn. Before each recorded
// assistant message a strategy is given the history so far, as a live
// engine would have had it (its own earlier clearing and summaries
// persist), and builds the request it would send. The recorded assistant
// message and tool results are then appended and the walk goes on: the
// model's behaviour is the recording's; only what is sent varies.
//
// Cost is billed from the request bytes with a simulated prompt cache
// ([Cache]): at each breakpoint a strategy places, a prefix an earlier
// request wrote is read (looking back 20 blocks, as the Anthropic API
// does) and the rest up to the breakpoint is written; with automatic
// caching (OpenAI-style) the longest prefix shared with any earlier request
// is read. Evidence recall ([Evidence]) is the share of the terms a turn
// uses — identifiers, paths, numbers, quoted strings, error names — that
// came from an earlier tool result (and no user or system text) and are
// still visible in the request the strategy built for that turn.
package bench
