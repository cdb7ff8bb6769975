// Package permission decides whether the coding agent may run a tool call
// on its own, must ask the user first, or must not run it at all.
//
// Reads (Read, LS, Grep, recall, TodoWrite) are free. File changes (Write,
// Edit, MultiEdit) and Bash commands follow the [Mode]:
//
//	ask           ask before every change and every command (the REPL's default)
//	accept-edits  file changes run unasked; commands are asked
//	plan          nothing that changes files or runs a command; the model plans
//	bypass        everything runs unasked
//
// [Rules] allow or deny calls by pattern, as Claude Code's settings do:
// "Bash(go test:*)" matches every command that starts with "go test",
// "Bash(git status)" that command exactly, "Edit(docs/**)" file changes
// under docs/, "Write" every Write. Deny rules win over allow rules, and
// both over the mode. A [Checker] answers each call with a [Decision]; the
// caller asks the user when it says [Ask], and may add the rule the user
// chose for the rest of the session ([Checker.Allow]).
//
// [Guard] puts a Checker in front of a tool runner: a denied or refused
// call never reaches the tool, and the model gets the reason back as the
// call's error result.
package permission
