package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outputFlag matches an output named on a script line: a flag that writes
// a file, or a shell redirection.
var outputFlag = regexp.MustCompile(`(?:^|\s)(?:-o|--html|--store|--json-out|--out|>)\s*'?(/[^\s']*)`)

// TestScriptsWriteOnlyInWork fails when a CLI script names an output
// outside its work folder without first checking that the path is a
// character device (the [chardev:PATH] condition): a test run as root on a
// machine where /dev/null is a plain file must not replace it.
func TestScriptsWriteOnlyInWork(t *testing.T) {
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "-- ") {
				break // the archive's files, not commands
			}
			if !strings.Contains(line, "exec ") {
				continue // a comment, or a pattern quoting a message
			}
			for _, m := range outputFlag.FindAllStringSubmatch(line, -1) {
				// /proc takes no new files: naming one there writes nothing.
				if !strings.HasPrefix(m[1], "/proc/") && !strings.Contains(line, "[chardev:"+m[1]+"]") {
					t.Errorf("%s:%d: writes to %s, outside the script's folder, without [chardev:%s]", f, i+1, m[1], m[1])
				}
			}
		}
	}
}

// isCharDevice is the [chardev:PATH] script condition.
func isCharDevice(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
