// Package shellcmd reads the shell commands coding agents run, without
// running them: which programs a command line calls with which arguments,
// what each writes through redirections, and what here-documents it feeds
// them. toolresult tells from it what a bash call did (a read, a search, an
// edit); summarize recovers the files a session touched.
//
// [Parse] parses with mvdan.cc/sh (bash syntax) and never fails: agents
// type things no shell accepts (an unterminated quote, a half-written
// here-document), so a command the parser rejects is read line by line,
// and a line that is still not shell becomes its whitespace-separated
// words, with plain > and >> redirections recognised. SWE-agent's
// multi-line commands (edit 3:5 … end_of_edit) are not shell at all:
// [SWEBlock] tells them apart, and Parse reads only their first line.
package shellcmd
