package shellcmd

import (
	"fmt"
	"strings"
	"testing"
)

// show renders pipelines compactly: commands joined by " | ", pipelines by
// " ; ", each command as its words, then >path / >>path, <<heredoc and
// (nested).
func show(pls []Pipeline) string {
	var out []string
	for _, pl := range pls {
		var cmds []string
		for _, c := range pl {
			parts := append([]string(nil), c.Args...)
			for _, r := range c.Redirects {
				parts = append(parts, r.Fd+r.Op+r.Path)
			}
			if c.HasHeredoc {
				parts = append(parts, fmt.Sprintf("<<%q", c.Heredoc))
			}
			if c.Nested {
				parts = append(parts, "(nested)")
			}
			cmds = append(cmds, strings.Join(parts, " "))
		}
		out = append(out, strings.Join(cmds, " | "))
	}
	return strings.Join(out, " ; ")
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", ""},
		{"plain", "go test ./...", "go test ./..."},
		{"quotes removed", `grep -rn "def foo" 'src dir'/ --include=*.py`, "grep -rn def foo src dir/ --include=*.py"},
		{"escapes", `echo a\ b "c\"d"`, `echo a b c"d`},
		{"and or semicolon", "cd /w && make || echo no; ls", "cd /w ; make ; echo no ; ls"},
		{"background", "server & sleep 1", "server ; sleep 1"},
		{"pipeline", "cat a.py | grep -n import | head", "cat a.py | grep -n import | head"},
		{"redirections", "python run.py > out.txt 2>&1", "python run.py >out.txt"},
		{"append and stderr", "make 2> err.log >> build.log", "make 2>err.log >>build.log"},
		{"all and clobber", "x &> all.log; y >| f", "x &>all.log ; y >|f"},
		{"input is not output", "sort < in.txt", "sort"},
		{"here-document", "cat > a.ts << 'EOF'\nexport const a = 1;\ncat b\nEOF", `cat >a.ts <<"export const a = 1;\ncat b\n"`},
		{"here-document expands", "cat <<EOF > t.txt\nhome=$HOME\nEOF", `cat >t.txt <<"home=\n"`},
		{"here-string", "python3 <<< 'print(1)'", "python3"},
		{"variables keep their text", `cat "$f" ${DIR}/x $(pwd)/y`, "cat $f ${DIR}/x $(pwd)/y"},
		{"assignments are not words", "FOO=1 BAR=2 env", "env"},
		{"export", "export PATH=/x:$PATH", "export PATH"},
		{"subshell and group", "(cd x && cat f); { ls; }", "cd x ; cat f ; ls"},
		{"loop", "for f in *.go; do cat $f; done", "cat $f (nested)"},
		{"condition", "if [ -f a ]; then rm a; fi", "[ -f a ] (nested) ; rm a (nested)"},
		{"while", "while read l; do echo $l; done < list", "read l (nested) ; echo $l (nested)"},
		{"function", "f() { touch x; }; f", "touch x (nested) ; f"},
		{"lone redirection", "> empty.txt", ">empty.txt"},
		{"comment", "ls # list", "ls"},
		{"continuation", "grep -rn \\\n  foo .", "grep -rn foo ."},
		{"not shell: unterminated quote", "echo \"unterminated > x.txt\nrm gone.txt", `echo "unterminated >x.txt ; rm gone.txt`},
		{"not shell: here-document body skipped", "echo 'a <<EOF\nrm not-a-command\nEOF\nls", "echo 'a <<\"\" ; ls"},
		{"swe-agent edit", "edit 1:1\nimport numpy\nend_of_edit", "edit 1:1"},
		{"swe-agent edit, body cut off", "edit 10:12\n    if a > b:", "edit 10:12"},
		{"swe-agent open", "open reproduce.py 20", "open reproduce.py 20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(Parse(tt.src)); got != tt.want {
				t.Errorf("Parse(%q)\n got %s\nwant %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestSWEBlock(t *testing.T) {
	tests := []struct {
		src, head string
		ok        bool
	}{
		{"edit 3:5\nx = 1\nend_of_edit", "edit 3:5", true},
		{"edit 3:5", "edit 3:5", true},
		{"  edit 10:12  \n  y\nend_of_edit\n", "edit 10:12", true},
		{"insert 4\nz\nend_of_edit", "insert 4", true},
		{"edit file.txt", "", false},
		{"echo end_of_edit", "", false},
		{"ls\nedit 3:5", "", false},
	}
	for _, tt := range tests {
		head, ok := SWEBlock(tt.src)
		if head != tt.head || ok != tt.ok {
			t.Errorf("SWEBlock(%q) = %q, %v; want %q, %v", tt.src, head, ok, tt.head, tt.ok)
		}
	}
}

func TestCommandName(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"/usr/bin/python3", "x.py"}, "python3"},
		{[]string{"ls"}, "ls"},
	} {
		if got := (Command{Args: tt.args}).Name(); got != tt.want {
			t.Errorf("Name of %q = %q, want %q", tt.args, got, tt.want)
		}
	}
}
