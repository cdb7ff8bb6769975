// Package trust decides which settings a workspace's own config file may
// change, and remembers the workspaces the user trusts.
//
// A repository can carry a .ctxkit.json, and anyone can write one: cloning
// a stranger's repository must not let it redirect the user's API key to
// its own server, run its own commands, or lift the agent's permission
// checks. Settings that decide where requests and credentials go, what
// runs, or what the agent may do without asking ([Guarded]) are honoured
// from a workspace file only when the user has trusted that workspace,
// by its absolute path, in their own config file ([Store]) — as Claude Code
// and Codex ask before they trust a folder. Everything else in the file
// (model, window, summarizer, …) applies as before.
package trust
