// Package paste reads a terminal's input for a line editor and turns each
// bracketed paste into one piece of text the editor cannot take apart.
//
// A terminal in bracketed-paste mode (Enable, "ESC[?2004h") wraps what the
// user pastes in "ESC[200~" … "ESC[201~", so a program can tell a paste
// from typing. A line editor that does not know the mode (github.com/peterh/liner
// does not) would take every newline of a paste for Enter and send each
// line as a message of its own. Filter sits between the terminal and the
// editor: typed bytes pass through unchanged; a paste of one short line
// passes through as if typed; any other paste is held, and the editor gets
// a placeholder ("[Pasted text #1 +2000 lines]") in its place, which Expand
// turns back into the pasted text once the line is entered. Alt-Enter
// (ESC CR) becomes a backslash and Enter, the REPL's way of going on to
// another line.
package paste
