// Package micro is micro-compaction: rungs 1 and 2 of the fidelity ladder
// (DESIGN.md), run before every request, and the oversize guard.
//
// # What moves down
//
// A [Clearer]'s Step looks at the tool results of the conversation:
//
//   - A result is consumed once an assistant message follows it; only
//     consumed results are touched (seed 003), and the Keep (3) most recent
//     consumed results stay whole (rung 0).
//   - An older result larger than SkipChars (100) becomes a one-line
//     placeholder naming the tool, its key argument, its exit status and
//     size, and the recall id (rung 2):
//     [cleared: Bash "go test ./..." exit 1, 240 lines — recall b17].
//     The block keeps its id and tool_use_id, so the pairing is untouched.
//   - Results of tools on the Preserve list (read-file tools by default:
//     seed 003 keeps them because clearing reference material makes the
//     model read it again, and again) are not cleared while fresh; once
//     their round has ended they get the per-tool compressed form of
//     package toolresult (rung 1). A preserved read becomes clearable when
//     it is stale: a later call edited or wrote the file, or read it again
//     covering the same lines (any later view supersedes an SWE-agent
//     window). A stale copy is noise, not reference.
//   - Pinned blocks, blocks not marked compactable and user and assistant
//     text are never touched.
//
// The placeholder's words are toolresult.Facts: the same line a
// compaction's recall index gives each result it takes out (package
// compact).
//
// Every change is a conv.Edit of kind EditRung. Step passes it to the
// [Keeper] (transcript.Store in the agent, [MemoryKeeper] in tests and
// the benchmark) and applies it only when Keep succeeded, so nothing leaves
// the context before its original is durable; the recall id resolves to
// the original there.
//
// # The oversize guard
//
// A new tool result over GuardTokens (Guard: 25,000, and a quarter of a
// window under 100,000) never reaches the model
// whole: Step writes it to a file in the session folder through a
// [Spiller] (the Keeper, when it is one) and leaves head and tail with the
// path and the recall id. Reads and listings keep 80% head, command output
// 80% tail. A single result can then never overflow the window before any
// other rule gets a chance to run.
//
// # Policies: when to clear
//
// Which clearable blocks move down now is a [Policy]'s decision, by name:
// eager (every request: seed 003), batched (only when a batch frees at
// least N tokens, like the API's clear_at_least) and cache-aware, the
// default. Every policy clears everything when the request is above
// HighWater (80%) of the window.
//
// Why a policy at all: a provider with a prompt cache bills the prefix it
// has seen at the read price r and everything after the first changed
// block at the write price w. Take the previous request as cached, and a
// batch that frees F tokens and whose first change makes the provider
// write T tokens of that prefix again (the batch included; see "Where the
// rewrite starts" for T). Compared with keeping it, clearing now costs, in
// this request,
//
//	(T−F)·w − T·r = (T−F)·(w−r) − F·r
//
// (the rest of the prefix is written instead of read; the freed tokens are
// not read), and saves F·r in every later request, which would otherwise
// read the freed tokens from the cache. Over H requests, this one
// included, clearing now rather than never saves
//
//	H·F·r − C,  with the rewrite  C = (T−F)·(w−r).
//
// That is not the whole story: the alternative to clearing now is mostly
// clearing later, together with results that become clearable meanwhile,
// and each clear rewrites the tail behind its first block. Clearing every
// request pays that rewrite every request: this is why keeping the last 10
// turns' results costs 2.6× sending everything at Anthropic's prices
// (DESIGN.md). Waiting costs rent, F·r per request. If f tokens become
// clearable per request and g tokens follow the newest of them, clearing
// every B requests costs g·(w−r)/B + f·r·(B−1)/2 per request, least at
// B* = √(2g(w−r)/(f·r)), where the rent paid over a cycle equals the
// rewrite. f and g are not known in advance; the online rule with that
// property is rent-or-buy (ski rental): pay rent until the rent paid
// equals the price of buying, then buy — never more than twice the best
// schedule in hindsight. With a prediction of how long the session goes
// on, learning-augmented ski rental (Purohit, Svitkina, Kumar, NeurIPS
// 2018) buys early when the prediction says buying pays and late when it
// does not. Late buying is the part that does harm: the rent a batch has
// paid is paid by sending everything too, so clearing after it buys
// nothing back and adds C. [CacheAware] therefore clears only a batch that
// pays over the horizon, and waits for part of the rent first, in case
// the prediction is wrong:
//
//	H·F·r  ≥  C   and   rent = (W + F)·r  ≥  λ·C
//
// where W is the rent already paid: each offer's freed tokens times the
// earlier requests that sent it while it was clearable, so that (W+F)·r is
// the rent paid including this request; H is the predicted number of
// requests to come (below), no more than the requests left before
// compaction; and λ = 0.5. A long session still clears what pays: the
// horizon grows with the requests made. C may be negative: freed tokens
// this request would write anyway (past the cached prefix, or all of them
// when the cache has expired) save w − r each now. Besides the rewrite, C counts the
// recall round trips the keep value asks ([RecallTrips]: one at the
// default, the request read once more at r), since a cleared result the
// model needs again costs one — or one for each result of a recall call
// in the batch (Batch.Recalled), when it holds more than one: the model
// asked to have each back, so it has shown it needs it, and clearing it
// again costs the round trip that fetched it. With no prompt cache (r = w = 0: every
// token costs p in every request and there is nothing to rewrite) the
// risk a clearing takes is only that round trip: cache-aware clears a
// batch when H·F, what it saves over the horizon, covers the request's
// tokens.
//
// # Do no harm: the horizon
//
// Against sending everything, what a batch costs is C now and what it
// saves is F·r in each request still to come: it pays for itself only if
// at least A = C/(F·r) more requests come. The rent paid before is paid
// either way. How long a session goes on is not known; package horizon
// holds the prior (Lindy's: a session that has made n requests makes at
// least x more with probability n/(n+x)) and gives the horizon a session
// reaches with probability P = 0.9: H = n/9, with n the requests so far
// clamped to [10, 200]. A batch predicted to pay (H·F·r ≥ C) therefore
// pays for itself nine times in ten; a session that stays far from the
// window sees few such batches, and one that comes near it clears anyway
// (at HighWater, before the compaction the schedule expects, or for free
// in the compaction request). With the horizon at two chances in three
// (H = n/2), a batch at request 20 of a 21-request session predicted to
// pay back within 10 cost 8.5% more than sending everything; with the
// median (H = n), 5.8% on a 44-request session.
//
// A worked case, Anthropic prices ($/MTok: p 3, w 3.75, r 0.30), 30
// requests so far (H = 30/9, 3 requests), a batch F = 8,000 tokens with
// T = 20,000 (and a request too small for the round trip to matter):
// C = 12,000·3.45 = 41,400, F·r = 2,400, so it pays back after A = 17.25
// requests, which the horizon reaches only from 162 requests on (H = 18).
// Until then the batch is kept, however long it has waited — sooner if
// more results join it, and at once if the context nears the window or
// the compaction point.
//
// Nine times in ten is not every time. The engine therefore gives the
// Clearer what the session has saved so far against sending everything
// (SetSaved; the engine's account), and a batch carrying it
// (Batch.Accounted) is cleared only when its stake — C less the F·r the
// request carrying the change reads less — is covered by Batch.Saved:
// should the session end right after, it has still cost no more than
// sending everything. Without a cache there is no rewrite to stake.
//
// # Where the rewrite starts
//
// With automatic prefix caching (OpenAI: CacheAware's prices say
// Automatic) the provider reads the longest prefix an earlier request
// shared, so T runs from the batch's first block to the end of the
// previous request. With explicit anchors (Anthropic) it does not: a
// request reads only a prefix an earlier request wrote at one of its
// anchors, found by looking back at most 20 blocks from an anchor of its
// own. A change in the middle of a long round therefore rewrites from the
// deepest anchored prefix before it that no change has touched since — with
// anchors only at the system prompt and the newest messages, from the
// system prompt. The Clearer keeps that picture (the cuts): every
// request's end, where the newest message's anchor wrote it, and the
// frontier of every batch, less whatever a later change cut off; T runs
// from the deepest cut at or before the batch's first message (at least
// MinCacheTokens long, or none) to the end of the previous request. With
// Config.Clock set, a cut no request wrote, read or anchored within
// CacheTTL counts as expired: the provider keeps an entry alive only while
// requests use it, and the frontier, anchored by every request that holds
// it, lives as long as it is held. A change another layer makes between
// Steps (the engine's rung 1 at a round's end, priced with
// [Clearer.Rewrite]) is reported with [Clearer.Changed] and treated as a
// batch of micro's own: the cuts after it are gone, the frontier moves,
// and the next request holds the cut before it.
//
// [Clearer.Hold] hands the assembler what it needs for the provider to
// bill that and no more (assemble.Builder.BuildHeld): an anchor at that
// cut, which this request reads, and one at the frontier — the end of the
// message before the oldest result still kept whole, below which nothing
// changes until a result there goes stale — which this request writes and
// the next batch, whose first block lies at or after it, reads back. A
// worked case at Anthropic prices: the previous request ended at 24,000
// tokens of messages; the last batch left its frontier at 20,000; four
// results after it, F = 2,000, are clearable now. T = 24,000 − 20,000 =
// 4,000 and C = 2,000·3.45 = 6,900. Without the frontier the request would
// read only the system prompt: T = 24,000 and C = 22,000·3.45 = 75,900,
// eleven times what a rule that starts the rewrite at the first cleared
// block believes.
//
// The first block decides where the rewrite starts, so a batch is every
// pending offer from some position on, and Step offers the policy each
// such batch that starts after a different cut, largest first, and clears
// the first it accepts: a read gone stale far back does not hold up the
// results behind the frontier, which may pay on their own, nor ride along
// on their rent.
//
// # Compaction
//
// Compaction (rung 3) rewrites the whole prompt after its summary, and
// what it summarizes leaves the context anyway. With Config.CompactAt set
// to where the compactor expects to compact next (the engine moves it
// before every request with Clearer.SetCompactAt: compact.Ladder.NextAt (the schedule of the previous request),
// the cost model's due point once an early compaction pays, else the
// soft threshold), the horizon H is capped at the
// requests left before the context, less the batch, reaches it at the rate
// the context has grown: 1 + (CompactAt − Total + F)·n/grown. With
// CompactAt 30,000, a context of 27,000 tokens, F = 2,000 and 450 tokens
// grown per request, H ≤ 1 + 5,000/450 = 12. And once a compaction has
// run, [Clearer.Compacted] clears, in the same request, everything the
// rules allow: that request writes everything after the summary anyway,
// so the clearing costs no rewrite there, where it would at any later
// request.
//
// A cold cache changes the arithmetic: once the provider's cache has
// expired (an idle session, a resumed one) everything is written anyway,
// C is 0 and every pending batch clears. [Clearer.Expire] says so for
// the next Step; with Config.Clock set, Step notices by itself when more
// than CacheTTL (5 minutes) passed since the previous request — Claude
// Code's time-based microcompact, derived instead of assumed.
//
// # Cost per turn
//
// A Clearer keeps incremental state (per-result entries, the Keep
// boundary, a Fenwick tree of per-message token counts, the files whose
// reads are watched for staleness, the cuts), so Step costs what the turn
// added plus what it changes and what is pending, not the length of the
// history (see BenchmarkStep). A conversation changed other than by
// appending (a summary replacing turns) is detected and the state rebuilt
// once.
package micro
