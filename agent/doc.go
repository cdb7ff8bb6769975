// Package agent is ctxkit's coding agent: the ReAct loop on top of the
// context engine. An [Agent] is one session; [Agent.Run] carries out one
// user turn — assemble, send (streaming), run the tool calls, send their
// results — until the model answers without calling a tool. Everything
// outside the process comes in through small interfaces ([Provider],
// [Tools], [Store], a clock), so tests drive the real loop against the
// llmtest servers and a replay can drive it deterministically.
//
// # One request
//
// Before each request the loop runs the context policy: micro-compaction
// (the oversize guard, then rungs 1 and 2 as micro's policy allows), then
// compaction (rung 3) when the context is over its threshold. Automatic
// compaction, the oversize guard and the circuit breaker are always on.
// The request is assembled (package assemble: system and tools, project
// rules, history, the todo recap, cache anchors) and streamed; a
// prompt-too-long answer gets a reactive compaction and one retry. Each
// response's usage goes to the compactor, which measures the context as
// the last reported prompt plus an estimate of what came since (seed
// 000's A6 rule); the agent learns the ratio of the provider's counts to
// its estimate and takes tokens freed in place since the report (results
// compressed or cleared) off that measure, so the two stay comparable.
//
// # Scratchpad and history
//
// Within a round — from the user's words to the model's final answer — the
// model sees its tool results whole (rung 0, seed 000's Scratchpad; only
// micro's policy clears older consumed results in a long round). When the
// round ends, every result of it takes its per-tool compressed form (rung
// 1, package toolresult) and enters the history; the change is one
// conv.Edit kept in the transcript before it is applied.
//
// # Tools
//
// The model gets the workspace tools (package tools), recall (the
// original of any compressed, cleared or summarized block, by its id, from
// the transcript) and compact (a summary now, with an optional focus).
// The calls of one response run in order, except that runs of read-only
// calls (Read, LS, Grep, recall) run at once; their results go back
// together in one message, in the calls' order. A compact call is
// answered with compact.ToolResult and carried out after that message is
// recorded; the loop then goes on from the summary.
//
// # Durability, interruption, resume
//
// Every message is appended to the [Store] (the transcript, fsync'd) as
// first produced, before any lossy step, and every lossy step is an edit
// the store keeps first (DESIGN.md, invariant 5). Cancelling Run's context
// (Ctrl-C) stops the turn where it is: a response still streaming is
// dropped, running tools are stopped (Bash kills its process group), calls
// not finished get the error result "interrupted by the user", and what
// was produced is recorded, so every tool call keeps its result. The
// conversation then ends with a user message the model has not answered
// ([Agent.Pending]); the next Run either sends it as it is (empty prompt)
// or adds the new words to it — an edit replacing that last message — so
// roles keep alternating. [New] on a store holding a session resumes it
// exactly, the engine's account of what the session saved included (the
// transcript's last state record); a tool call left unanswered by a crash
// gets an error result.
//
// # Progress
//
// Config.OnEvent receives [Event]s as things happen — text deltas, tool
// starts and ends, micro-compaction, compaction start and end, retries,
// warnings — for a CLI to stream output and show a spinner.
// [Agent.Context] measures the context by category for /context.
package agent
