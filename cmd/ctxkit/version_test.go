package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install @version", "v0.3.0", vcs, "v0.3.0 (go1.26.8)"},
		{"checkout", "(devel)", vcs, "devel 0123456789ab (go1.26.8)"},
		{"checkout with changes", "(devel)", dirty, "devel 0123456789ab-dirty (go1.26.8)"},
		{"-buildvcs=false", "(devel)", nil, "devel (go1.26.8; built without version control information, so no commit)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/ctxkit/ctxkit", Version: tt.version}, Settings: tt.settings}
			if got := versionOf(bi); got != tt.want {
				t.Errorf("versionOf = %q, want %q", got, tt.want)
			}
		})
	}
}
