// Package importer reads recorded agent sessions into conv conversations:
// Load detects the format from the content (Options.Format overrides it),
// imports the file, repairs what the recording itself broke and checks the
// invariants, so that what comes back is a conversation the rest of ctxkit
// can replay, measure and send.
//
// Formats (see Formats):
//
//   - claude-code: Claude Code session logs (~/.claude/projects/…/*.jsonl),
//     written against 1.0.98–1.0.108 and 2.0.72–2.1.16. Records split from
//     one response (same message.id) are merged, also when tool results
//     were logged between them, and its usage (repeated on every record)
//     is kept once; parallel tool results become one user message;
//     sidechain records (Task sub-agents) are dropped, and a file that is
//     all sidechain (subagents/agent-*.jsonl) imports as that thread;
//     toolUseResult, progress, summary, snapshot, system, attachment,
//     permission-mode, last-prompt and queue records are skipped (counted
//     in Conv.Skipped), as are API-error and "<synthetic>" replies, which
//     Claude Code wrote itself; isMeta text is injected (SourceHook), so it
//     does not open a round; an isCompactSummary message (after a
//     compact_boundary) becomes a summary block that starts a new epoch
//     (Conv.Epochs). A tool result that is the <persisted-output> preview
//     of an output saved under <session>/tool-results/ stays the preview
//     the model saw; Options.FullOutputs reads the saved file back, or
//     marks it missing. Sub-agent logs beside the session
//     (<session>/subagents/agent-*.jsonl) are listed in Session.Subagents.
//   - codex: Codex CLI rollouts (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl),
//     written against codex_cli_rs 0.34 and the current {timestamp, type,
//     payload} schema (codex-rs/protocol RolloutItem), and the earlier
//     unwrapped rollouts. The conversation is the response_item sequence,
//     each item a Responses API item decoded by wire.DecodeResponsesItem:
//     user, developer (injected) and assistant messages; reasoning as
//     redacted thinking holding encrypted_content (opaque, never sent back
//     as text; its token count is the response's recorded reasoning
//     tokens); function_call, custom_tool_call ({"input": text}) and
//     local_shell_call paired with their outputs by call_id, outputs kept
//     verbatim as the model saw them; compacted records start a new epoch
//     with their summary (and replacement history when recorded);
//     event_msg token_count is the recorded usage of one response;
//     session_meta instructions are the system prompt, turn_context gives
//     the model; ghost_snapshot and the other event_msg records are
//     skipped.
//   - gemini-cli: Gemini CLI sessions (~/.gemini/tmp/<project hash>/chats/),
//     written against the chatRecordingService of late 2025 (one JSON
//     document, session-*.json) and of 2026 (a JSONL log, session-*.jsonl:
//     a metadata line, message records where a later record with the same
//     id replaces the earlier one, $rewindTo records that drop the messages
//     from one on, $set records whose messages replace the history), and
//     /chat save checkpoints (checkpoint-*.json, the Gemini API history
//     [{role, parts}]). A gemini message is one response: its text and
//     toolCalls, whose results (functionResponse output or error) become
//     the next user message; tokens are the recorded usage (thoughts
//     counted as output); thought summaries and info, error and warning
//     messages (shown, never sent) are skipped.
//   - cline: Cline and Roo Code task histories
//     (<VS Code globalStorage>/saoudrizwan.claude-dev/tasks/<id>/api_conversation_history.json,
//     rooveterinaryinc.roo-cline likewise), written against Cline 3.x
//     (ClineStorageMessage: Anthropic messages with ts, modelInfo and
//     metrics) and Roo Code 3.2x (isSummary, condenseParent). Native
//     tool_use and tool_result blocks are kept; in the older XML tool
//     format the "[tool] Result:" text is tool output and
//     <environment_details> injected; metrics.tokens is the recorded usage;
//     a Roo Code summary starts a new epoch; document and reasoning blocks
//     are skipped.
//   - opencode: opencode sessions, written against the SQLite store of
//     opencode 1.x (~/.local/share/opencode/opencode.db, tables session,
//     message, part; read with the pure-Go modernc.org/sqlite driver,
//     read-only) and the JSON storage of 0.x (storage/session/<project>/<id>.json
//     with message/<id>/ and part/<message>/). A database holds many
//     sessions: FILE#SESSION_ID or Options.Session names one, else the most
//     recently updated is imported with a warning. As opencode sends them:
//     each step of an assistant message is one response (step-finish
//     tokens are its usage) followed by its tool results (compacted results
//     read "[Old tool result content cleared]", pending ones
//     "[Tool execution was interrupted]"); failed responses are skipped;
//     a compaction request and its summary start a new epoch.
//   - mini-swe-agent (*.traj.json), 1.x (trajectory_format
//     mini-swe-agent-1, written against 1.15) and 2.x (mini-swe-agent-1.1,
//     written against 2.2.7). 2.x responses carry native tool_calls, role
//     "tool" messages are their results and the final role "exit" message
//     (the submission, never sent) is skipped; the usage in
//     extra.response is kept. In 1.x a response's single ```bash block
//     becomes a bash tool_use with input {"command": …} and the next
//     message its tool_result, unwrapped from <returncode>/<output>
//     (long-output heads, tails and elision notes kept) with the exit code
//     on a last line ("[exit code 1]", an error when non-zero); the text
//     around the block (the THOUGHT) stays assistant text; a response with
//     no or several bash blocks makes no call and the harness's complaint
//     is injected text.
//   - swe-agent (*.traj): history without is_demo messages; text actions
//     as above (the command from action, else the last fenced block); the
//     function-calling variant maps tool_calls and role tool natively.
//   - openhands: evaluation records; actions with tool_call_metadata are
//     tool calls (several from one model response share a message), the
//     observation naming an action by cause is its result (with the exit
//     code suffix the model saw), harness errors and recalled context are
//     injected text, tool schemas come from the system event.
//   - openhands-resolver: the older flat history, paired by position;
//     run is bash, run_ipython is ipython.
//   - anthropic, openai: request bodies, through the wire package; a bare
//     JSON array is read as the messages list.
//   - gemini: a Gemini API generateContent request body (v1beta, as Gemini
//     CLI 0.61 sends it), through the wire package; responses pair with
//     the calls of the turn before by id, else by tool and rank.
//
// Every block gets a stable id ("b1", "b2", … in order, so re-importing
// gives the same ids) and the source and tier of who produced it: the
// user's words SourceUser, injected text SourceHook or SourceReminder,
// tool output SourceTool. Tool call ids a format lacks are generated in
// order (call_1, call_2, …). A format that records no tool schemas gets a
// minimal one per tool used ({"type":"object"}; for bash the command
// schema), so that the conversation converts to a valid request.
//
// # Nothing silently lost
//
// Records an importer recognises but leaves out are counted by type in
// Conv.Skipped. A record of a type the importer does not know (a newer
// version of the format) is skipped with a warning naming the types and
// counts; a file that yields no conversation fails with that warning in
// the error.
//
// # Bad input
//
// Errors are *Error values naming the file and, for JSONL and located JSON
// errors, the line; they wrap ErrEmpty, ErrUnknownFormat (the message
// lists the supported formats), ErrMalformed, ErrDamaged, ErrInvalidUTF8,
// ErrNoMessages or ErrInvariant, or a file system error such as
// fs.ErrNotExist. Without Options.Strict a damaged or truncated JSONL line
// is skipped and reported in Session.Warnings with its number, and invalid
// UTF-8 is replaced with U+FFFD and reported; with Strict either is an
// error. A file that yields no conversation is an error, never an empty
// success.
//
// # Memory
//
// Large files are streamed: JSONL is read line by line (lines up to
// MaxLine, longer ones count as damaged), and the JSON documents of the
// other session formats token by token, decoding one message or event at
// a time and skipping what is not needed (SWE-agent's per-step
// trajectory, mini-swe-agent's raw responses) without holding it. Memory
// follows the conversation kept, not the file: a generated 500 MB Claude
// Code log keeping 130 MB of conversation peaks at about 320 MB of heap
// (see TestBigSession). Request bodies are read whole.
package importer
