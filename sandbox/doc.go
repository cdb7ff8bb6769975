// Package sandbox confines the shell commands of ctxkit's coding agent
// with Linux's Landlock, as Codex CLI does: by default ([WorkspaceWrite])
// a command reads anything but the hidden paths (~/.ssh, the ctxkit home)
// and writes only in the workspace and the session's temporary folder;
// [ReadOnly] writes nowhere; [Off] confines nothing. TCP connect and bind
// are denied too unless [Policy].Network allows them, where the kernel's
// Landlock ABI is 4 or newer ([NetworkABI]).
//
// Landlock confines the thread that asks and everything it executes after,
// for good: ctxkit must never confine itself. So a confined command runs
// through a helper mode of ctxkit's own binary: [Sandbox.Wrap] turns
// "bash -c CMD" into "ctxkit __sandbox-exec POLICY -- bash -c CMD"; the
// program's main calls [Main] when its first argument is [ExecArg], which
// works out the rules ([Rules]), applies them (with no_new_privs) and
// executes the command in its own place, so the command keeps the pid,
// process group and pipes the caller gave the helper. A helper that cannot
// apply the rules exits with status 126 and says why; it never runs the
// command unconfined. A test binary that runs confined commands calls Main
// from its TestMain in the same way.
//
// [Rules] is the deterministic part: Landlock only adds permissions, so
// "everything but ~/.ssh" is written as read rules on every entry of each
// folder on the way to a hidden path, and a list-only rule on those
// folders themselves (the names in ~/.ssh can be listed, not read). A
// symbolic link among those entries is granted only if it does not lead to
// a hidden path. A hidden path inside a writable folder cannot be hidden
// and is reported in [RuleSet].Exposed. [RuleSet.Allows] answers as the
// kernel would, for tests.
//
// [New] takes the kernel's ABI ([ABI]): on a kernel without Landlock it
// returns [ErrUnsupported], and the caller must fall back to asking before
// each command rather than run it unconfined. A denied operation fails in
// the command as any EACCES does ("Permission denied", a non-zero exit);
// [Sandbox.Denied] recognises it in the error output and [Sandbox.Note] is what
// the model reads next to it.
//
// What Landlock does not stop (docs/sandbox.md): reading what is not
// hidden, UDP, pathname Unix sockets (a Docker socket is a way out),
// processes that were started before the sandbox, and anything done
// through a server the command can talk to. Signals and abstract Unix
// sockets are scoped to the command (ABI 6).
//
// The dependency github.com/landlock-lsm/go-landlock holds the system
// calls and the ABI-version downgrades, kept by Landlock's maintainers;
// hand-written raw syscalls are what its docs advise against.
package sandbox
