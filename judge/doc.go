// Package judge measures, with a model, whether a context strategy keeps
// what an agent needs to know: the consistency test of seed 002 §27.5, with
// probe questions of the four kinds Factory.ai's evaluation uses.
//
// Probes generates the questions from a recorded session, deterministically:
// recall (what was the original error?), artifact (which files were changed,
// and how?), continuation (what is the next step?) and decision (what was
// decided, and why?), each asked before a chosen recorded assistant message.
// Run asks every question twice — from the full context (what strategy
// "none" sends at that turn) and from what the strategy under test sends at
// the same turn, the question appended as the final user message — and a
// judge model says whether the two short answers agree (YES or NO; any other
// reply is an error, counted and reported). The result is the share of
// agreeing answers per strategy and per probe kind.
//
// The model calls are bounded: per session, one full-context answer per
// probe, and per strategy and probe one answer and one verdict; a strategy
// that sent exactly the full context needs no call. When no model can be
// reached Run fails with ErrUnreachable and the bench skips the section.
package judge
