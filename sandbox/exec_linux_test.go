package sandbox

import (
	"path/filepath"
	"testing"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// TestRulesForVanishedPaths: a path Rules listed that is gone when the
// Landlock rules are built (another process removed it in between, as
// happens in a busy home or /tmp) is skipped; the command still runs.
func TestRulesForVanishedPaths(t *testing.T) {
	if ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	gone := filepath.Join(t.TempDir(), "gone")
	rs := RuleSet{Rules: []Rule{
		{Path: gone, Access: Read},
		{Path: gone, Access: Read, Dir: true},
		{Path: gone, Access: List, Dir: true},
		{Path: gone, Access: Write, Dir: true},
		{Path: gone, Access: Write},
	}}
	fd, _, err := landlock.V7.BestEffort().NewRulesetFD(landlockRules(rs, ABI())...)
	if err != nil {
		t.Fatalf("rules with a vanished path: %v", err)
	}
	if fd >= 0 {
		unix.Close(fd)
	}
}
