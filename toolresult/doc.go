// Package toolresult holds the per-tool compressors of rung 1 of the
// fidelity ladder (DESIGN.md): the form a tool result takes once its round
// has ended and the model has moved on, small enough to carry for the rest
// of the session and still telling the model what it saw.
//
// A compressor is chosen by the tool's kind, which [Classify] derives from
// the tool's name (case-insensitive, with the aliases the recorded agents
// use: Read, read_file, str_replace_editor view, cat, …) and, for a shell
// tool, from the command it ran: `cat f` is a read, `grep -rn x .` a
// search, `ls`/`find` a listing, `cat > f <<EOF` a write. The table (seed
// 000 §3.2) is the minimum kept:
//
//	LS           first 10 entries, the true total, the path
//	Grep         first 5 matches, the true total, the pattern
//	Read         first 500 lines, the path, mtime and the externally-modified flag
//	Edit         path, applied, replacements, first 10 diff lines
//	Write        path, create or update, first 10 diff lines
//	Bash         stdout head, stderr tail (20 lines), exit code
//	other        status, data and error of a structured result; text and stats dropped;
//	             head and tail with the true line count for plain text
//
// Results of ctxkit's own tools carry their structured form
// ({"status","data","text","stats","error"}, fields as the tools package
// documents them) in Block.Structured; the compressors read its fields
// instead of parsing text and render the known kinds as text again, led
// by a header line with the facts the table keeps:
//
//	[Read internal/store.go: lines 1-650 of 650, mtime 2026-03-03T09:53:12Z, modified externally]
//	     1	package store
//	…
//	[… 150 more lines not shown (652 total); recall b17]
//
// Other structured results follow the generic rule as compact JSON with
// an "omitted" field. Results imported from other agents are plain text
// and are compressed by lines, keeping the wrappers those agents print
// (mini-swe-agent's exit code line, SWE-agent's and OpenHands' status
// footers). Either way the compressed form says what it left out and how
// to get it back ("… 1,240 more lines; recall b17"), never silently: the
// recall id is the block's id, which the transcript resolves to the
// original. [ExitCode] reads a command's exit status from either form.
//
// Compress returns false when the compressed form would not be smaller or
// would leave out nothing worth saying, so a caller never trades a short
// result for a longer one or changes one without a note.
//
// [Touches] follows which files a conversation's calls touched last and
// what was last read or written of each, for what a compaction carries.
package toolresult
