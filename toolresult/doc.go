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
// ({"status","data","text","stats","error"}) in Block.Structured and are
// compressed field by field into compact JSON; results imported from other
// agents are plain text and are compressed by lines. Either way the
// compressed form says what it left out and how to get it back ("… 1,240
// more lines; recall b17"), never silently: the recall id is the block's
// id, which the transcript resolves to the original.
//
// Compress returns false when the compressed form would not be smaller, so
// a caller never trades a short result for a longer one.
package toolresult
