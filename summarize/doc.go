// Package summarize turns a span of an agent conversation into a structured
// summary: rung 3 of the fidelity ladder (DESIGN.md). The compact package
// decides what to summarize and when; this package only writes summaries.
//
// Two summarizers implement the small [Summarizer] interface:
//
//   - [LLM] asks a model through an [llm.Provider]. Where the provider
//     caches prompts it sends the agent's own request (same system, tools
//     and messages, so the history is a cache read) with the instruction
//     appended to the final user message; otherwise, or when that request
//     is too long, it sends the region as a transcript to a configurable,
//     possibly cheaper, model. The instruction opens with a no-tools guard
//     and asks for an <analysis> scratchpad, which is stripped, and a
//     <summary> with the template's sections. A focus instruction is
//     honoured. A summary request that is itself too long is retried with
//     its oldest rounds dropped (3 times by default).
//   - [Extractive] builds the same sections from the messages' structure,
//     without a model: deterministic and offline. It is the fallback and
//     the default when no model is configured.
//
// Templates: [Coding] (default) — task and intent; every user requirement
// verbatim; the execution frontier (done, in progress, pending, exact next
// action); key decisions and why; the artifact trail (every file created,
// modified or deleted, and how); errors and fixes; current work — plus
// [General] and [Research].
//
// The target size is about a fifth of the region ([Target]: region/5,
// clamped to [256, 8000] tokens by default; the compact package may ask
// for less, the budget its cost model gives summaries). Summaries that
// together grow past their budget are merged into one ([Merger],
// [MergeText]), keeping the turn ranges they cover. An earlier summary of
// the same round (Input.Earlier) is folded by [LLM] into the summary it
// writes, in the same request ([Output].Folded), so a round compacted
// again costs one model call.
//
// [Artifacts] and [ShellOps] recover the files a session touched from its
// tool calls — ctxkit's tools, Claude Code's, SWE-agent's, OpenHands', and
// shell commands that write files (redirections, heredocs, sed -i, tee, mv,
// cp, rm, touch, patch, git apply/checkout/rm/mv, python open(..., "w")).
package summarize
