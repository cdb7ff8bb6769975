package summarize

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func opsString(ops []FileOp) string {
	var parts []string
	for _, o := range ops {
		parts = append(parts, o.Op+" "+o.Path)
	}
	return strings.Join(parts, ", ")
}

func TestShellOps(t *testing.T) {
	tests := []struct {
		cmd  string
		want string
	}{
		{`ls -la`, ``},
		{"ssh root@host \"cat > /root/check.sh << 'EOF'\n#!/bin/sh\necho hi\nEOF\nchmod +x /root/check.sh\"", `written /root/check.sh`},
		{`ssh -p 2222 -o BatchMode=yes root@host "grep -q x /etc/crontabs/root || echo '*/5 * * * * /root/c.sh' >> /etc/crontabs/root"`, `appended /etc/crontabs/root`},
		{`ssh host 'cat /etc/hosts'`, ``},
		{`bash -c 'echo hi > out.txt'`, `written out.txt`},
		{`grep -n foo bar.py > /dev/null 2>&1`, ``},
		{`echo hi > out.txt`, `written out.txt`},
		{`echo hi >> log.txt`, `appended log.txt`},
		{`cat <<'EOF' > check_timezone.py
import os
x = 1 > 2
EOF`, `written check_timezone.py`},
		{`cat > "dir with space/a.go" <<EOF
package a
EOF`, `written dir with space/a.go`},
		{`sed -i 's/foo/bar/g' a.py b.py`, `edited a.py, edited b.py`},
		{`sed -i '401a\    print(f"DEBUG: dt={dt!r}")' django/db/backends/sqlite3/base.py`, `edited django/db/backends/sqlite3/base.py`},
		{`sed -n '40,60p' django/db/backends/mysql/operations.py`, ``},
		{`sed -i.bak -e 's/a/b/' -e 's/c/d/' conf.ini`, `edited conf.ini`},
		{`perl -pi -e 's/a/b/' x.pl`, `edited x.pl`},
		{`echo x | tee -a notes.md`, `appended notes.md`},
		{`mv old.go new.go`, `renamed old.go, written new.go`},
		{`cp a.txt b.txt`, `written b.txt`},
		{`rm -rf build tmp.txt`, `deleted build, deleted tmp.txt`},
		{`touch empty.go && git add .`, `created empty.go`},
		{`cd repo && git checkout -- src/x.py`, `reverted src/x.py`},
		{`git checkout main`, ``},
		{`git checkout django/db/backends/sqlite3/base.py`, `reverted django/db/backends/sqlite3/base.py`},
		{`git rm old.txt`, `deleted old.txt`},
		{`git apply <<'EOF'
diff --git a/pkg/x.go b/pkg/x.go
--- a/pkg/x.go
+++ b/pkg/x.go
@@ -1 +1 @@
-a
+b
diff --git a/new.txt b/new.txt
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hi
EOF`, `patched pkg/x.go, created new.txt`},
		{`git apply fix.patch`, `read fix.patch`},
		{`patch -p1 src/a.c < fix.diff`, `patched src/a.c`},
		{`python3 - <<'EOF'
with open("gen/out.json", "w") as f:
    f.write("{}")
EOF`, `written gen/out.json`},
		{`python -c "open('x.txt','w').write('1')"`, `written x.txt`},
		{`create reproduce.py`, `created reproduce.py`},
		{`edit 10:12
    if a > b:
        return 1
end_of_edit`, `edited ` + sweCurrentFile},
		{`python reproduce.py 2> err.log`, `written err.log`},
		// Not parseable as shell: the line scan still finds redirections.
		{`echo "unterminated > x.txt
rm gone.txt`, `written x.txt, deleted gone.txt`},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			got := opsString(ShellOps(tt.cmd))
			if got != tt.want {
				t.Errorf("ShellOps(%q)\n got %q\nwant %q", tt.cmd, got, tt.want)
			}
		})
	}
}

func TestDiffTargetsCodex(t *testing.T) {
	patch := "*** Begin Patch\n*** Update File: a/b.go\n@@\n-x\n+y\n*** Add File: c.go\n+package c\n*** Delete File: d.go\n*** End Patch"
	got := opsString(diffTargets(patch))
	want := "edited a/b.go, created c.go, deleted d.go"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOperands(t *testing.T) {
	got := operands([]string{"-f", "--", "-weird", "a"})
	if !slices.Equal(got, []string{"-weird", "a"}) {
		t.Errorf("operands = %q", got)
	}
}
