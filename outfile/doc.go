// Package outfile writes a command's output file without ever destroying
// what the user gave it.
//
// [Write] refuses an output path that names one of the command's inputs
// (the same file, also through a symbolic or hard link), and refuses to
// replace a device, a FIFO, a socket or a symbolic link with a regular
// file; with Options.Force those are written in place instead, as a shell
// redirection would. Anything else is written to a temporary file in the
// same folder, synced, and renamed over the path, so that a failure never
// leaves a half-written file. A new file gets mode 0666 less the umask,
// like any other tool's output; a replaced file keeps its mode. Errors name
// the path the user gave, never the temporary file.
//
// [Check] runs the same checks without writing, so that a command can fail
// before it does its work.
package outfile
