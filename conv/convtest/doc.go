// Package convtest builds conversations for tests and fuzz targets: random
// conversations that pass conv.Check, driven by a byte string so that
// `go test -fuzz` can explore them, and a list of mutations that each break
// one invariant on purpose.
//
// It lives beside conv so that every package working on conversations
// (assembly, compaction, the codecs) can fuzz against the same shapes:
// parallel tool calls, thinking, images, summaries, injections, many rounds.
package convtest
