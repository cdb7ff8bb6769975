package micro

import "github.com/ctxkit/ctxkit/toolresult"

// The clearing rules as functions, for a caller that decides without a
// Clearer (ctxkit serve, which sees each request whole and keeps no
// conversation between them) and must decide alike.

// Defaults returns cfg with every zero field set to its default, as New
// uses it.
func (cfg Config) Defaults() Config { return cfg.withDefaults() }

// Preserves reports whether results of call are kept until stale: the
// call's tool or kind is on Config.Preserve (its default when nil).
func (cfg Config) Preserves(call toolresult.Call) bool {
	cfg = cfg.withDefaults()
	return cfg.preserved(call)
}

// Stales reports whether later, a call made after read, makes read's
// result a stale copy: it reads, edits or writes the same file, and a
// read covers the lines read showed (package doc).
func Stales(later, read toolresult.Call) bool {
	switch later.Kind {
	case toolresult.KindRead, toolresult.KindEdit, toolresult.KindWrite:
	default:
		return false
	}
	if later.Path == "" || read.Path == "" || !samePath(read.Path, later.Path) {
		return false
	}
	return later.Kind != toolresult.KindRead || later.Covers(read)
}
