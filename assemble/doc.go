// Package assemble turns a conversation into the request sent to the
// model: the layered prompt of seed 000 §3.3, the user message of a turn
// with its tagged injections (seed 001 §2.2–2.3), @file mentions, oversize
// inputs, and prompt-cache anchors (seed 001 §4).
//
// # Two steps
//
// [Builder.Turn] (or [Builder.Message]) builds the user message of a turn
// and appends it: the tool results first, then the pending injections and
// the reminders preprocessing made, each wrapped in the tag of its source
// ([Tag]; content that contains the tag's closing text is escaped, see
// [Escape], so a file or a tool output cannot close the tag and speak as
// the harness), then the user's words. @file mentions ([Mentions]: quoted
// paths with spaces, non-ASCII paths, duplicates merged, at most five) are
// checked through os.Root and become one system reminder telling the model
// to read them with the Read tool, or saying that a path does not exist or
// lies outside the workspace (a symlink leading out counts as outside). An
// input larger than MaxInputBytes is saved through a [Spiller] and replaced
// by a reference with its first lines. This step does file work, once,
// and what it produces is stored in the conversation.
//
// [Builder.Build] is pure: the same conversation, todo list and config
// give a byte-identical request. No Go map is ever iterated on the way,
// tool inputs stay raw bytes, and the project rules are read once per
// session ([Builder.Reload] re-reads them after /clear or a compaction).
//
// # Where the layers go
//
// The provider caches prefixes in the order tools, system, messages, so
// what changes least goes first:
//
//   - L1 system blocks and tool schemas, as the conversation holds them.
//   - L2 project rules (the first of CODE_LAW.md, AGENTS.md, CLAUDE.md
//     found) as one more system block, inside <project-rules>: they
//     change only when reloaded, so they belong to the system prefix.
//   - L3 history, L4 the question that opened the current round and L6 the
//     scratchpad of the round are the messages, as they are; which block
//     sits on which rung of the fidelity ladder is the policy's business,
//     done with conv.Edit before Build.
//   - L5 the todo recap goes last: a <system-reminder> appended to the
//     request's copy of the newest user message, after every cache anchor,
//     so the recap can change every turn without touching a cached byte.
//     It is never stored; the next request has the then-current list.
//
// # Cache anchors
//
// An anchor is cache_control {"type":"ephemeral"} (with "ttl":"1h" when
// configured) set on the request's copy of a block or tool, never on the
// conversation; any cache_control imported blocks carry is dropped from
// the copies. Candidates are the end of the tools/system/rules prefix, the
// newest summary, the end of the history before the current round, the
// end of the message before the newest user message, and the end of the
// newest user message's stored blocks (its new tool results are then
// written to the cache once, instead of billed as input now and written
// next turn). When the previous request's last write lies further back
// than the provider's 20-block lookback from every candidate, one more
// candidate is placed within reach of it, or this turn would read nothing
// of the conversation from the cache.
//
// A candidate whose prefix is shorter than MinCacheTokens is dropped (the
// provider would silently not cache it), and so is any position on a
// thinking block or an empty text block (which cannot carry one). Of the
// rest, at most four are kept, the newest message's always (the next
// request reads it back): the set with the highest expected value,
// where an anchor is worth its cached size times the chance it is the
// deepest one the next request repeats (each kind has a fixed chance, from
// 0.99 for the system prefix down to 0.8 for the newest message), plus the
// previous write's size when the set reads it back this turn. Every
// subset is tried, so the choice is exact and deterministic.
//
// Some positions only the layer that changes the history knows, and
// Builder.BuildHeld takes them as held anchors (micro.Clearer.Hold says
// which): the provider reads only a prefix an earlier request wrote at an
// anchor, looking back at most 20 blocks from one of this request's, so
// when a block in the middle of a long round is cleared, a request with
// anchors only at the system prompt and the newest messages reads nothing
// past the system prompt and writes the whole conversation again. An
// anchor held at the deepest prefix still cached before the changed block
// makes it read up to there; one held at the frontier below which nothing
// changes before the next batch makes this request write it, for that
// batch to read back. Held anchors are in every set tried, like the
// newest message's; the rest are chosen as above.
//
// Build checks what it returns: the request passes conv.CheckRequest and
// carries no more anchors than allowed.
package assemble
