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
// ([Cache]): at each breakpoint, a prefix an earlier request wrote is read
// (looking back 20 blocks, as the Anthropic API does) and the rest up to
// the breakpoint is written; with automatic caching (OpenAI-style) the
// longest prefix shared with any earlier request is read. Entries expire
// after the table's TTL, timed by the recording's timestamps. Every
// strategy's requests get the same breakpoints (system/tools, tail, and a
// frontier at the start of its most recent edit), so strategies differ in
// what they send, not in where the bench anchors them. Each compaction is
// billed as the summary request the strategy's implementation sends
// ([SummaryRequest]), and a turn that needs a term only a recall id shows
// pays a recall round trip.
//
// Evidence recall ([Evidence]) is the share of the terms a turn uses —
// identifiers, paths, numbers, quoted strings, error names — that the
// model had to get from an earlier tool result and that are still visible,
// as whole tokens, in the request the strategy built for that turn.
// "bound" ([Strategies]) is the future-knowing lower bound at recall 1.
//
// The strategies and the sources they are modelled from are listed at
// [Strategies]. Proxies are measured by package bench/proxy: its
// strategies ("serve", "proxy") replay each session through a proxy as
// the client sends it and hand the replay what went upstream, anchors
// included ([StepInfo.AsSent]), and the summary calls the proxy made
// ([StepInfo.Calls]), billed with the same cache and measured for recall
// the same way.
package bench
