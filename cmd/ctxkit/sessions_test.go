package main

import (
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ctxkit/ctxkit/importer/importertest"
)

// sessionScriptCmds are the script commands the sessions scripts use to
// lay out a user's home: file times, and an opencode database.
func sessionScriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// mtime FILE 2006-01-02T15:04:05Z sets a file's modification time.
		"mtime": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: mtime FILE TIME")
			}
			t, err := time.Parse(time.RFC3339, args[1])
			ts.Check(err)
			ts.Check(os.Chtimes(ts.MkAbs(args[0]), t, t))
		},
		// opencodedb DESC.json DB writes an opencode database.
		"opencodedb": func(ts *testscript.TestScript, neg bool, args []string) {
			if len(args) != 2 {
				ts.Fatalf("usage: opencodedb DESC.json DB")
			}
			desc, err := os.ReadFile(ts.MkAbs(args[0]))
			ts.Check(err)
			ts.Check(os.MkdirAll(ts.MkAbs(args[1]+"/.."), 0o755))
			ts.Check(importertest.WriteOpencodeDB(ts.MkAbs(args[1]), desc))
		},
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "30d", want: now.AddDate(0, 0, -30)},
		{in: "12h", want: now.Add(-12 * time.Hour)},
		{in: "2w", want: now.AddDate(0, 0, -14)},
		{in: "2026-01-31", want: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)},
		{in: "d", err: true},
		{in: "0d", err: true},
		{in: "3y", err: true},
		{in: "yesterday", err: true},
	} {
		got, err := parseSince(tc.in, now)
		if (err != nil) != tc.err || !tc.err && !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}
