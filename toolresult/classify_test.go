package toolresult

import (
	"encoding/json"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		tool  string
		input string
		want  Call
	}{
		{"claude read", "Read", `{"file_path":"/p/a.go"}`, Call{Kind: KindRead, Path: "/p/a.go"}},
		{"claude read range", "Read", `{"file_path":"/p/a.go","offset":100,"limit":50}`, Call{Kind: KindRead, Path: "/p/a.go", From: 100, To: 149}},
		{"case-insensitive alias", "READ_FILE", `{"path":"a.go"}`, Call{Kind: KindRead, Path: "a.go"}},
		{"editor view", "str_replace_editor", `{"command":"view","path":"/w/x.py","view_range":[10,40]}`, Call{Kind: KindRead, Path: "/w/x.py", From: 10, To: 40}},
		{"editor view to end", "str_replace_editor", `{"command":"view","path":"/w/x.py","view_range":[10,-1]}`, Call{Kind: KindRead, Path: "/w/x.py", From: 10}},
		{"editor create", "str_replace_editor", `{"command":"create","path":"/w/n.py","file_text":"x"}`, Call{Kind: KindWrite, Path: "/w/n.py"}},
		{"editor str_replace", "str_replace_editor", `{"command":"str_replace","path":"/w/x.py"}`, Call{Kind: KindEdit, Path: "/w/x.py"}},
		{"sweagent open", "open", `{"path":"setup.py","line_number":20}`, Call{Kind: KindRead, Path: "setup.py", Window: true}},
		{"sweagent goto", "goto", `{"line_number":300}`, Call{Kind: KindRead, Window: true}},
		{"multiedit", "MultiEdit", `{"file_path":"/p/a.go","edits":[]}`, Call{Kind: KindEdit, Path: "/p/a.go"}},
		{"write", "Write", `{"file_path":"/p/b.go","content":"x"}`, Call{Kind: KindWrite, Path: "/p/b.go"}},
		{"create", "create", `{"filename":"repro.py"}`, Call{Kind: KindWrite, Path: "repro.py"}},
		{"ls", "LS", `{"path":"/p"}`, Call{Kind: KindLS, Path: "/p"}},
		{"glob", "Glob", `{"pattern":"**/*.ts"}`, Call{Kind: KindLS, Pattern: "**/*.ts"}},
		{"grep", "Grep", `{"pattern":"func main","path":"cmd"}`, Call{Kind: KindGrep, Pattern: "func main", Path: "cmd"}},
		{"search_dir", "search_dir", `{"search_term":"Pixel","dir":"src"}`, Call{Kind: KindGrep, Pattern: "Pixel", Path: "src"}},
		{"unknown tool", "WebFetch", `{"url":"https://x.dev","prompt":"p"}`, Call{Kind: KindOther, Pattern: "https://x.dev"}},
		{"unknown tool, description first", "Task", `{"subagent_type":"general","prompt":"long","description":"Explore the repo"}`, Call{Kind: KindOther, Pattern: "Explore the repo"}},
		{"unknown tool, first string", "Frob", `{"n":3,"mode":"fast","x":"y"}`, Call{Kind: KindOther, Pattern: "fast"}},

		// Shell commands, as bash tools of every agent run them.
		{"bash plain", "Bash", `{"command":"go test ./..."}`, Call{Kind: KindBash, Command: "go test ./..."}},
		{"bash cat", "bash", `{"command":"cat src/a.py"}`, Call{Kind: KindRead, Path: "src/a.py", Command: "cat src/a.py"}},
		{"bash cd cat", "bash", `{"command":"cd /testbed && cat -n src/a.py"}`, Call{Kind: KindRead, Path: "src/a.py", Command: "cd /testbed && cat -n src/a.py"}},
		{"bash sed range", "bash", `{"command":"sed -n '100,150p' a.py"}`, Call{Kind: KindRead, Path: "a.py", From: 100, To: 150, Command: "sed -n '100,150p' a.py"}},
		{"bash sed in place", "bash", `{"command":"sed -i 's/a/b/' a.py"}`, Call{Kind: KindEdit, Path: "a.py", Command: "sed -i 's/a/b/' a.py"}},
		{"bash head", "bash", `{"command":"head -n 40 a.py"}`, Call{Kind: KindRead, Path: "a.py", From: 1, To: 40, Command: "head -n 40 a.py"}},
		{"bash tail", "bash", `{"command":"tail -20 log.txt"}`, Call{Kind: KindRead, Path: "log.txt", From: -1, To: -1, Command: "tail -20 log.txt"}},
		{"bash grep", "execute_bash", `{"command":"grep -rn \"def foo\" src/ --include=*.py"}`, Call{Kind: KindGrep, Pattern: "def foo", Path: "src/", Command: "grep -rn \"def foo\" src/ --include=*.py"}},
		{"bash grep piped", "bash", `{"command":"grep -rn foo . | head -20"}`, Call{Kind: KindGrep, Pattern: "foo", Path: ".", Command: "grep -rn foo . | head -20"}},
		{"bash cat into grep", "bash", `{"command":"cat a.py | grep -n import"}`, Call{Kind: KindGrep, Pattern: "import", Path: "a.py", Command: "cat a.py | grep -n import"}},
		{"bash find xargs grep", "bash", `{"command":"find . -name '*.go' | xargs grep -l Foo"}`, Call{Kind: KindGrep, Pattern: "Foo", Path: ".", Command: "find . -name '*.go' | xargs grep -l Foo"}},
		{"bash ls", "bash", `{"command":"ls -la src"}`, Call{Kind: KindLS, Path: "src", Command: "ls -la src"}},
		{"bash find", "bash", `{"command":"find src -name '*.pony'"}`, Call{Kind: KindLS, Path: "src", Pattern: "*.pony", Command: "find src -name '*.pony'"}},
		{"bash heredoc write", "Bash", `{"command":"cat > types/a.ts << 'EOF'\nexport const a = 1;\ncat b\nEOF"}`, Call{Kind: KindWrite, Path: "types/a.ts", Command: "cat > types/a.ts << 'EOF'\nexport const a = 1;\ncat b\nEOF"}},
		{"bash mkdir then heredoc", "Bash", `{"command":"mkdir -p t && cat <<EOF > t/x.txt\nhi\nEOF"}`, Call{Kind: KindWrite, Path: "t/x.txt", Command: "mkdir -p t && cat <<EOF > t/x.txt\nhi\nEOF"}},
		{"bash echo redirect", "bash", `{"command":"echo 'x = 1' >> conf.py"}`, Call{Kind: KindWrite, Path: "conf.py", Command: "echo 'x = 1' >> conf.py"}},
		{"bash run with redirect", "bash", `{"command":"python run.py > out.txt 2>&1"}`, Call{Kind: KindBash, Command: "python run.py > out.txt 2>&1"}},
		{"bash two things", "bash", `{"command":"cat a.py && python a.py"}`, Call{Kind: KindBash, Command: "cat a.py && python a.py"}},
		{"bash devnull", "bash", `{"command":"grep -q x a.txt 2>/dev/null"}`, Call{Kind: KindGrep, Pattern: "x", Path: "a.txt", Command: "grep -q x a.txt 2>/dev/null"}},
		{"bash timeout wrapper", "bash", `{"command":"timeout 30 cat big.log"}`, Call{Kind: KindRead, Path: "big.log", Command: "timeout 30 cat big.log"}},
		{"bash swe-agent open", "bash", `{"command":"open reproduce.py 20"}`, Call{Kind: KindRead, Path: "reproduce.py", Window: true, Command: "open reproduce.py 20"}},
		{"bash swe-agent edit", "bash", `{"command":"edit 1:1\nimport numpy\nend_of_edit"}`, Call{Kind: KindEdit, Command: "edit 1:1\nimport numpy\nend_of_edit"}},
		{"bash git grep", "bash", `{"command":"git grep -n TODO -- src"}`, Call{Kind: KindGrep, Pattern: "TODO", Path: "src", Command: "git grep -n TODO -- src"}},
		{"unknown with command", "runner", `{"command":"ls"}`, Call{Kind: KindLS, Path: ".", Command: "ls"}},
		{"unknown with shell command", "runner", `{"command":"make build"}`, Call{Kind: KindBash, Command: "make build"}},
		{"codex shell argv", "shell", `{"command":["bash","-lc","cat opk/cli.py"],"timeout_ms":120000}`, Call{Kind: KindRead, Path: "opk/cli.py", Command: "cat opk/cli.py"}},
		{"codex shell plain argv", "shell", `{"command":["pytest","-q"]}`, Call{Kind: KindBash, Command: "pytest -q"}},
		{"codex shell argv, unknown tool", "container.exec", `{"cmd":["/bin/sh","-c","ls src"]}`, Call{Kind: KindLS, Path: "src", Command: "ls src"}},
		{"bad input", "Read", `not json`, Call{Kind: KindRead}},
		{"ipython runs code, not commands", "ipython", `{"code":"open_file('/w/a.css')"}`, Call{Kind: KindBash, Command: "open_file('/w/a.css')"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.tool, json.RawMessage(tt.input))
			tt.want.Tool = tt.tool
			if got != tt.want {
				t.Errorf("Classify(%s, %s)\n got %+v\nwant %+v", tt.tool, tt.input, got, tt.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	whole := Call{Kind: KindRead, Path: "a"}
	r10_50 := Call{Kind: KindRead, Path: "a", From: 10, To: 50}
	r20_30 := Call{Kind: KindRead, Path: "a", From: 20, To: 30}
	r40_end := Call{Kind: KindRead, Path: "a", From: 40}
	tailRead := Call{Kind: KindRead, Path: "a", From: -1, To: -1}
	window := Call{Kind: KindRead, Path: "a", Window: true}
	tests := []struct {
		name string
		c, d Call
		want bool
	}{
		{"whole covers range", whole, r10_50, true},
		{"whole covers whole", whole, whole, true},
		{"superset", r10_50, r20_30, true},
		{"subset", r20_30, r10_50, false},
		{"open end covers", r40_end, Call{Kind: KindRead, From: 45, To: 90}, true},
		{"range does not cover open end", r10_50, r40_end, false},
		{"range does not cover whole", r10_50, whole, false},
		{"unknown part covers nothing", tailRead, r20_30, false},
		{"any view supersedes a window", r20_30, window, true},
		{"window covers nothing else", window, r20_30, false},
		{"not reads", Call{Kind: KindEdit}, whole, false},
	}
	for _, tt := range tests {
		if got := tt.c.Covers(tt.d); got != tt.want {
			t.Errorf("%s: Covers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestArg(t *testing.T) {
	tests := []struct {
		c    Call
		want string
	}{
		{Call{Kind: KindRead, Path: "a.go"}, "a.go"},
		{Call{Kind: KindGrep, Pattern: "foo", Path: "src"}, "foo"},
		{Call{Kind: KindLS, Pattern: "*.go", Path: "src"}, "*.go"},
		{Call{Kind: KindLS, Path: "src"}, "src"},
		{Call{Kind: KindBash, Command: "make"}, "make"},
		{Call{Kind: KindRead, Command: "cat a.go", Path: "a.go"}, "cat a.go"},
		{Call{Kind: KindLS, Command: "ls -F", Path: "."}, "ls -F"},
		{Call{Kind: KindEdit, Command: "edit 1:2"}, "edit 1:2"},
		{Call{Kind: KindOther, Pattern: "https://x"}, "https://x"},
	}
	for _, tt := range tests {
		if got := tt.c.Arg(); got != tt.want {
			t.Errorf("%+v.Arg() = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("bash", `{"command":"cat a | grep 'x\"y' > f <<EOF\nbody\nEOF"}`)
	f.Add("Read", `{"file_path":"a","offset":-3,"limit":1e9}`)
	f.Add("str_replace_editor", `{"command":"view","view_range":[5]}`)
	f.Fuzz(func(t *testing.T, name, input string) {
		c := Classify(name, json.RawMessage(input))
		_ = c.Arg()
		_ = c.Covers(c)
	})
}
