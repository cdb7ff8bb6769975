// Package compact is rung 3 of the fidelity ladder (DESIGN.md): when even
// compressed history fills the window, old turns become a structured
// summary. It decides when to compact and what, asks a summarize.Summarizer
// for the summary, and turns the outcome into one conv.Edit per region,
// which a Keeper (the transcript) makes durable before it is applied.
//
// # Triggers
//
// The context is measured by seed 000's A6 rule: the usage the provider
// reported for the last response (prompt + output, see Ladder.Observe)
// plus an estimate of what was appended since; with no report, an estimate
// of the whole conversation. Nothing happens below MinMessages (3)
// messages. Thresholds are fractions of the effective window, which
// reserves the model's output and a buffer as Claude Code does:
//
//	effective = window − min(max output, 20,000) − 13,000
//
// (on small windows where that is under half the window, reserve and
// buffer shrink in proportion so it is half). They combine like this:
//
//	usage <  soft (0.70 × effective): nothing, unless the cost model
//	                 says a compaction is due (below)
//	usage ≥ soft: compact (round mode: everything before the pinned tail)
//	usage ≥ hard (0.90 × effective): the same
//	usage > limit: whatever it takes (the ladder below), always
//
// Seed 000's 0.8 × window sits between soft and hard for large windows;
// set Soft to move it. Ladder.Before runs before every request, so an
// overshooting turn is caught before the provider rejects it;
// Ladder.Reactive runs when the provider answers prompt-too-long anyway,
// and the agent retries once (a second prompt-too-long is an overflow, not
// a loop).
//
// # When compaction is due: the cost model
//
// With Config.Pricing set (the engine sets it), the cost model decides
// when to compact anywhere below the hard threshold — the soft threshold
// no longer forces it: where the rent the growing context pays between two
// compactions equals what a compaction costs. A compaction at T leaving S
// costs once A = (w−r)·S + r·S + w·I + o·O with a prompt cache (rewrite
// and read of what it keeps, the summary instruction I, the summary O at
// the output price), p·S + p·I + o·O without; the context then grows by g
// a request and costs c (r, or p without a cache) a token a request. Per
// request, over a cycle of D = T − S,
//
//	cost(D) = c·(S + D/2) + g·A/D,  least at D* = √(2·g·A/c)
//
// so the next compaction is due at S + D* (never after the hard
// threshold), and cost grows with S. What a compaction keeps beyond what it
// must (the summaries it carries, the user's words, the pinned tail) is
// sized by the same arithmetic (Floor, schedule.go): one more kept token
// costs c/2 + g·(a·T + K)/D² a request and is worth Config.KeepValue·c/2
// (the knob between cost and recall, v: a token in view is worth v times
// its read price a request, and a kept token adds half a token in view on
// average over the shortened cycle), so at v ≤ 1, the default, a
// compaction keeps only what it must. S is what a compaction would keep
// now, or what the last one left when that is more (the summaries it
// carried and merged, the recall index), g the growth since the last
// compaction (or since the start). An early compaction pays back after
// A / (c·(T − S)) requests; it happens only when that fits the horizon
// micro's rule trusts (package horizon: a session that has made n requests
// makes n/9 more nine times in ten under the Lindy prior), or when the
// session reaches the threshold within that horizon anyway (a compaction
// comes there regardless), so a short session goes on whole to the hard
// threshold. Ladder.ScheduleAt shows the
// arithmetic; Ladder.NextAt tells micro where the next compaction is
// expected (clearing pays only until then). Worked case (Anthropic, a
// 200,000 window, engine/testdata/schedule.txt): after 52 requests growing
// 438 tokens each, a compaction would keep S = 8,230 and cost A ≈ 78,772
// $/M·tokens, so D* = 15,158 and the next one is due at 23,388 tokens,
// where the soft threshold is 125,166; it pays back in 18.3 requests,
// beyond the horizon of 5.8, so it waits. Later in that session
// compactions come at about 71,000 tokens, every 22 requests.
//
// # The recall index
//
// A summary keeps what the work needs, not every tool result's text. So
// every summary and truncation marker ends with a recall index (after
// IndexHeader): one line per tool result the compaction took out of the
// context, newest first — "recall b17: Bash "go test ./..." exit 1"
// (toolresult.Facts.Brief: the tool, its key argument, a failing exit) —
// within 4,000 tokens (about 200 results) and half the summary budget.
// The recall tool returns any of them from the transcript, so a compaction
// loses no more than clearing does: the model can get back what a later
// turn needs. The ladder writes
// the index itself (no model writes it, so none can drop it); merged
// summaries and later compactions carry the entries of the indexes they
// replace, and WithoutIndex gives what a summarizer wrote.
//
// # The window is a hard limit
//
// No request the compactor lets through is larger than Budget.Limit
// (DESIGN.md, invariant 6): the window less the response reserve
// (min(MaxOutput, OutputReserve), at most half the window), divided by
// 1 + CountError so that a count that is low by the counter's worst
// measured error (10%) still fits. [conv.CheckWindow] is the one check of
// it and [Ladder.Fits] applies it with the compactor's figures; tests
// run it after every mutation. When the configured mode cannot get the
// context under the soft threshold, Before escalates down a ladder
// instead of giving up, and reports the rungs used in Result.Ladder:
//
//  1. the configured mode (round by default: one summary of everything
//     before the pinned tail; region mode region by region);
//  2. round mode, when the configured mode is region;
//  3. "all": one summary of everything before the last KeepRecentTurns
//     turns, as /compact does;
//  4. "drop", while still over the limit: the oldest messages up to a
//     round boundary (a step boundary when one round is too long) become
//     one truncation marker naming the turns, the files they changed,
//     the constraints and recent errors, and the recall ids of what went
//     (the originals are in the transcript); earlier summaries are merged
//     into one and the newest of the user's words (UserBudget) stay;
//  5. "shrink", when the last step alone is over the limit (a huge paste,
//     result or tool input): the largest blocks are cut to head and tail
//     with a note and the recall id, down to a common size (tool inputs
//     keep their keys; images become a note).
//
// Rungs 4 and 5 call no model. The only error left is a system prompt and
// tool schemas that alone exceed the limit (*OverflowError): nothing in
// the conversation can fix that.
//
// The user's own words are kept verbatim up to UserBudget (Codex keeps
// 20,000 tokens of them; here min(20,000, target/4)) in the summary
// messages and in the drop marker, newest first; older words are
// summarized with their region, constraints carried verbatim. Before them
// goes, as it is and up to UserBudget of its own, the context the client
// opened the session with: its hook and reminder text in the first
// message (CLAUDE.md, AGENTS.md, the environment context), which the
// clients send again after compacting themselves. A summary
// message also carries the newest current read of each file touched
// last, within the floor (files.go).
//
// # Planning
//
// The recent tail is pinned: the last step always, then whole steps back
// to KeepRecentTurns (4) assistant turns and KeepRecentTokens tokens,
// capped at half the target. KeepRecentTokens is 2% of the window: seed
// 001's 20,000 for a 1,000,000-token window, 1,280 for 64,000. Whatever
// the pin holds is written to the prompt cache again after the compaction
// and then read on every request until the next one (or paid in full
// every request without a cache), so a tail larger than the four turns
// costs in every pricing regime. Replayed on the corpus (ctxkit bench,
// window 64,000), a flat 20,000 — which the cap made half the target,
// 10,700 tokens — cost 1.5–3.5% more than 2% of the window, for evidence
// recall 0.987 either way (0.975 against 0.973 without a cache); at
// 32,000 2% more, for 0.974 against 0.973. Round mode (the default; seeds
// 000, 002, 003) summarizes everything before the pinned tail in one
// summary call: what a compaction keeps is read by every request until the
// next one, and the next one comes sooner the more it keeps (the cost model
// above). Region mode (seed 001 §3.2–3.3) summarizes, largest first, each
// round's tool work, from its opening user message up to its last
// assistant message, which stays, one summary call per region, until the
// target (0.50 × effective) is reached.
// Either way a region starts at a user message that answers no tool call
// and ends before an assistant message or a round opener, so every
// tool_use keeps its tool_result; the replacement is one user message
// (earlier summaries and kept words, then the new summary block, then, when
// the region ends at a round opener, that opener's content), so roles
// still alternate. Summaries are pinned and never summarized again, except
// by the hierarchical merge: when a round is cut twice, or when all
// summaries exceed SummaryBudget (0.25) of the target, they are merged into
// one (Merged = true) that covers the union of their turns. A round cut
// twice costs one summarizer call, not two: the summarizer is given the
// round's earlier summary (summarize.Input.Earlier) and the model's folds
// it into its own (Output.Folded; when it reuses the agent's prompt, the
// earlier summary is already in what it summarizes), taking its turns and
// recall index as a merge would; another summarizer's summary is merged
// with it. Summaries of different rounds past their budget are merged
// (KindMerged): a call of its own for a Merger. Constraint
// messages from the user (must, never, do not, 必须, 禁止, …) and the most
// recent error results are carried verbatim into the summary when the
// summarizer left them out. When the plan cannot get under the
// threshold, the ladder (above) takes over.
//
// # Fallbacks
//
// Each summary goes down this chain, and every step is reported in
// Result.Fallbacks:
//
//  1. the configured summarizer, bounded by Timeout (120 s);
//  2. on error, timeout, or a summary not smaller than what it replaces
//     (the inflation guard): the extractive summarizer;
//  3. if that fails too: the oldest compactable region is replaced by the
//     marker "[Earlier turns truncated due to compactor error]" (with the
//     files changed and the critical content).
//
// A summary request that is itself too long is retried by the LLM
// summarizer with its oldest rounds dropped. A compaction where the
// configured summarizer failed counts as a failure; after MaxFailures (3)
// in a row automatic compaction stops (ErrCircuitOpen). When the context is
// back at the threshold within ThrashTurns (3) requests of an automatic
// compaction that could not get it under the soft threshold (something
// large is pinned or re-read every turn), ThrashRepeats (3) times in a
// row, it stops too (ErrThrashing). A compaction that made room is not
// counted: on a small window big outputs refill it quickly, and that is
// not a loop. Both stop *model calls*, never the limit: while stopped,
// Before still compacts over the hard threshold and keeps every request
// under the limit with the extractive summarizer and rungs 4–5, and
// returns the *StoppedError for the CLI to show next to a request that
// fits. Manual compaction still works and a success clears them. In every
// case the Keeper holds the originals before the edit is applied, and the
// edit is checked against conv.Check on a copy first.
//
// # Manual and model-invoked compaction
//
// Ladder.Compact is the library call behind "/compact [focus]";
// Tool and Ladder.RunTool are the compact tool the model may call. The
// agent handles a compact call after the turn's other tool results are
// appended, then sends the next request: the loop continues from the
// summary, whose header says the task is not finished.
package compact
