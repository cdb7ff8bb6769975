// Package filekind names a file's type in words, for the errors that
// refuse a file that is not a regular one (a FIFO, a device, a socket, a
// link).
package filekind
