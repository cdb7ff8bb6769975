// Package tools holds the workspace tools of ctxkit's coding agent: Read,
// Write, Edit, MultiEdit, LS, Grep, Bash and TodoWrite. A [Set] is opened on
// one workspace folder with [New]; [Set.Schemas] gives the tool schemas for
// the provider and [Set.Run] runs one call.
//
// # Confinement
//
// Every file tool goes through an [os.Root] opened on the workspace: paths
// may be relative to it or absolute inside it, and anything that leads out
// of it — "..", an absolute path elsewhere, a symbolic link pointing out
// (or absolute, which os.Root refuses too) — is an error result. Bash is
// not confined this way: it runs bash -c with the workspace as its working
// folder, and confining it is the agent's permission layer's business.
//
// # Results
//
// Run returns a [Result] (seed 000 §3.2): Status "ok", "error" or
// "partial", Data (a pointer to the tool's own struct below), Text (what
// the model reads), Stats (bytes and lines of Text, duration_ms) and Error.
// [Result.Render] is the tool_result content (Text, led by "Error: ..." when
// the call failed); [Result.JSON] is the whole result, to be kept in
// conv.Block.Structured so that the rung-1 compressors read fields instead
// of parsing text; [Result.Block] builds that tool_result block. Bad input —
// an unknown tool, input that is not a JSON object, a missing required
// field, a field of the wrong type — is an error result too, with Data
// omitted; Run never panics.
//
// The JSON fields of Data, per tool (field names are stable; compressors
// rely on them):
//
// Read ([ReadData]): path (workspace-relative, slash separated; for a
// symbolic link, the file it leads to, as for Write and Edit), mtime
// (RFC 3339, UTC), size (bytes), total_lines, start_line and end_line (the
// lines shown, 1-based inclusive, 0 when none), truncated (the file goes on
// after end_line) with truncated_by "limit" | "max_lines" | "max_bytes",
// modified_externally (bool) with previous_mtime, invalid_utf8_lines and
// long_lines (shown lines repaired or cut), crlf. Text is the shown lines,
// each as "%6d\t<line>" (cat -n style), led by a "Note: ..." paragraph
// when modified_externally and followed by "(...)" notes (how to read on,
// cut lines, invalid UTF-8, CRLF).
//
// Write ([WriteData]): path, operation "create" | "update", bytes and lines
// (of the new content), unchanged (content was identical; nothing
// written), and the change: added, removed (lines, whole diff), diff (the
// first lines of a unified diff with "--- a/<path>" or "--- /dev/null" and
// "+++ b/<path>" headers) and diff_lines (length of the whole diff, so
// diff is cut when diff_lines exceeds its line count).
//
// Edit and MultiEdit ([EditData]): path, applied (the file was changed),
// edits (how many were asked for), failed_edit (1-based index of the edit
// that failed, else absent), replacements, modified_externally, and added,
// removed, diff, diff_lines as for Write.
//
// LS ([LSData]): path, entries (the first entries, relative to path, in
// depth-first sorted order; folders end in "/", links read "name ->
// target"), total_entries (true total within depth), truncated, depth,
// ignored (the first names skipped) and total_ignored.
//
// Grep ([GrepData]): pattern, path, glob, matches (the first matching lines
// as "file:line:text", file workspace-relative, text cut at 300 bytes),
// total_matches (every matching line), files and total_files (files with a
// match; files is filled in files_with_matches mode), truncated,
// files_searched, skipped_binary, skipped_large.
//
// Bash ([BashData]): command, exit_code (-1 when killed or not started),
// signal, stdout and stderr (each capped, head and tail kept around a
// "... [N bytes omitted of M] ..." line), stdout_bytes and stderr_bytes
// (true sizes), truncated, timed_out, cancelled, timeout_ms, duration_ms.
// A non-zero exit is status "error"; a timeout or a cancellation is
// "partial". Text is stdout, then "stderr:" and stderr, then the exit code
// or the timeout note. The command gets /dev/null as stdin and, beyond the
// agent's environment without its credentials (no provider keys, nothing
// named like *_API_KEY, *_TOKEN, *_SECRET, *PASSWORD*, no cloud
// credentials: Options.Env), PAGER=cat, GIT_PAGER=cat, GIT_TERMINAL_PROMPT=0,
// TERM=dumb, NO_COLOR=1, CTXKIT_AGENT=1 and Options.BashEnv. Its process
// group is killed when the shell exits, times out or ctx is cancelled, so
// "cmd &" does not outlive the call; only a process that starts a session of
// its own (setsid) escapes, and the call then stops reading its output
// after a short grace.
//
// TodoWrite ([TodoData]): todos (each content, status "pending" |
// "in_progress" | "completed", activeForm), and the counts pending,
// in_progress, completed.
//
// # What the Set remembers
//
// The Set records each file's mtime and size when the agent reads or
// writes it (seed 000 §3.6). A Read of a file that changed since reports
// modified_externally with a note; so does an Edit, which still applies
// because its old text matched. Write, which replaces the whole file,
// refuses to overwrite an existing file the agent has not read in this
// session, or one that changed since it last read it: a blind overwrite
// would lose content the model never saw. Edit and MultiEdit do not require
// a prior Read — the exact old text is proof enough of what the model
// knows — which spares a round trip when the text came from Grep. Changes
// made through Bash count as external.
//
// The Set also holds the todo list ([Set.Todos]) for the prompt's recap
// layer. Writes are atomic (temporary file in the same folder, fsync,
// rename, fsync of the folder) and keep the file's mode; file changes are
// serialized, and all methods are safe for concurrent use.
package tools
