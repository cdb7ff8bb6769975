package toolresult

import (
	"bytes"
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/shellcmd"
)

// Kind is the family of a tool, which decides how its result is
// compressed and when a later call makes it stale.
type Kind string

const (
	KindOther Kind = "other"
	KindRead  Kind = "read"
	KindWrite Kind = "write"
	KindEdit  Kind = "edit"
	KindLS    Kind = "ls"
	KindGrep  Kind = "grep"
	KindBash  Kind = "bash"
)

// Call is what a tool call says about the result it produced.
type Call struct {
	Tool string // the tool's name as called
	Kind Kind
	// Path is the file or directory the call is about, as given (it may be
	// relative). Empty when unknown: an SWE-agent `edit 3:5` or `goto 120`
	// acts on the file opened last.
	Path string
	// Pattern is a search's pattern or a listing's glob; for a tool of
	// unknown kind, its first string argument.
	Pattern string
	Command string // the shell command, for shell tools
	// From and To are the 1-based inclusive line range of a read; 0, 0 is
	// the whole file, To 0 an open end, -1, -1 a part that cannot be told
	// (tail, sed with a regexp).
	From, To int
	// Window marks a windowed view (SWE-agent open/goto/scroll, about 100
	// lines around a position): any later view of the same file
	// supersedes it.
	Window bool
}

// Shell reports whether the call ran a shell command (whose kind was
// told from the command line) rather than a dedicated tool.
func (c Call) Shell() bool { return c.Command != "" }

// Whole reports whether the call read the whole file.
func (c Call) Whole() bool { return c.Kind == KindRead && c.From == 0 && c.To == 0 && !c.Window }

// Covers reports whether read c shows at least the lines read d showed,
// so that d is a stale copy once c exists.
func (c Call) Covers(d Call) bool {
	switch {
	case c.Kind != KindRead || d.Kind != KindRead:
		return false
	case c.Whole(), d.Window:
		return true
	case c.Window || c.From < 0 || d.From < 0 || d.Whole():
		return false
	}
	return c.From <= d.From && (c.To == 0 || d.To != 0 && d.To <= c.To)
}

// Arg is the call's key argument, for a one-line placeholder: the command
// of a shell call, the pattern of a search or a listing by name, the path
// of anything else that has one, and an unknown tool's main argument.
func (c Call) Arg() string {
	if c.Shell() {
		return c.Command
	}
	switch c.Kind {
	case KindGrep, KindLS:
		if c.Pattern != "" {
			return c.Pattern
		}
	case KindOther:
		return c.Pattern
	}
	return c.Path
}

// aliases maps lower-cased tool names to their kind. Names that need the
// input to decide (str_replace_editor) are handled in Classify.
var aliases = map[string]Kind{
	"read": KindRead, "read_file": KindRead, "readfile": KindRead, "view": KindRead, "view_file": KindRead,
	"cat": KindRead, "open": KindRead, "goto": KindRead, "scroll_up": KindRead, "scroll_down": KindRead,
	"notebookread": KindRead, "file_read": KindRead, "read_many_files": KindRead,

	"write": KindWrite, "create": KindWrite, "write_file": KindWrite, "create_file": KindWrite,
	"write_to_file": KindWrite, "file_write": KindWrite,

	"edit": KindEdit, "multiedit": KindEdit, "multi_edit": KindEdit, "str_replace": KindEdit,
	"edit_file": KindEdit, "replace": KindEdit, "apply_patch": KindEdit, "insert": KindEdit,
	"notebookedit": KindEdit, "file_edit": KindEdit,

	"ls": KindLS, "list_dir": KindLS, "list_directory": KindLS, "list_files": KindLS, "glob": KindLS,
	"find_file": KindLS, "find_files": KindLS, "file_search": KindLS,

	"grep": KindGrep, "search": KindGrep, "search_file": KindGrep, "search_dir": KindGrep,
	"search_files": KindGrep, "grep_search": KindGrep, "rg": KindGrep, "ripgrep": KindGrep,
	"codebase_search": KindGrep, "search_file_content": KindGrep,

	"bash": KindBash, "execute_bash": KindBash, "run": KindBash, "shell": KindBash, "sh": KindBash,
	"exec": KindBash, "run_command": KindBash, "execute_command": KindBash, "run_shell_command": KindBash,
	"terminal": KindBash, "local_shell": KindBash, "run_terminal_cmd": KindBash, "bashoutput": KindBash,
	"execute_ipython_cell": KindBash, "run_ipython": KindBash, "python": KindBash, "ipython": KindBash,
}

// codeTools run code, not shell commands: their input is not classified
// as a command line.
var codeTools = map[string]bool{"execute_ipython_cell": true, "run_ipython": true, "python": true, "ipython": true}

// editorTools take a "command" field saying what they do.
var editorTools = map[string]bool{
	"str_replace_editor": true, "str_replace_based_edit_tool": true, "text_editor": true, "file_editor": true,
}

// Classify tells what a call to tool name with input did. Unknown tools
// whose input carries a shell command are classified by that command;
// anything else is KindOther.
func Classify(name string, input json.RawMessage) Call {
	c := Call{Tool: name, Kind: KindOther}
	in := fields(input)
	lname := strings.ToLower(name)
	if editorTools[lname] {
		c.Path = in.str("path", "file_path", "filename")
		switch in.str("command") {
		case "view":
			c.Kind = KindRead
			c.From, c.To = in.viewRange()
		case "create":
			c.Kind = KindWrite
		default: // str_replace, insert, undo_edit
			c.Kind = KindEdit
		}
		return c
	}
	kind, known := aliases[lname]
	if !known {
		if cmd := in.command("command", "cmd"); cmd != "" {
			c.Command = cmd
			sc := classifyShell(cmd)
			sc.Tool, sc.Command = name, cmd
			if sc.Kind == KindOther {
				sc.Kind = KindBash
			}
			return sc
		}
		if c.Pattern = in.str("description", "query", "url", "path", "file_path", "name"); c.Pattern == "" {
			c.Pattern = firstString(input)
		}
		return c
	}
	c.Kind = kind
	switch kind {
	case KindBash:
		c.Command = in.command("command", "cmd", "code", "script", "input")
		if c.Command == "" || codeTools[lname] {
			return c
		}
		sc := classifyShell(c.Command)
		if sc.Kind == KindOther {
			return c
		}
		sc.Tool, sc.Command = name, c.Command
		return sc
	case KindRead:
		c.Path = in.str("file_path", "path", "filename", "file", "absolute_path", "target_file")
		switch lname {
		case "open", "goto", "scroll_up", "scroll_down":
			c.Window = true
		case "cat":
			if c.Path == "" {
				return shellCall(name, in.str("command", "args"))
			}
		}
		if off, lim := in.num("offset"), in.num("limit"); off > 0 || lim > 0 {
			c.From = max(off, 1)
			if lim > 0 {
				c.To = c.From + lim - 1
			}
		} else if a, b := in.num("start_line", "line_start"), in.num("end_line", "line_end"); a > 0 {
			c.From, c.To = a, b
		} else if r := in.raw("view_range"); r != nil {
			c.From, c.To = in.viewRange()
		}
	case KindWrite, KindEdit:
		c.Path = in.str("file_path", "path", "filename", "file", "target_file", "notebook_path")
	case KindLS:
		c.Path = in.str("path", "dir", "directory", "dir_path", "target_directory")
		c.Pattern = in.str("pattern", "glob", "file_name", "name", "query")
	case KindGrep:
		c.Pattern = in.str("pattern", "search_term", "query", "regex", "term")
		c.Path = in.str("path", "dir", "file", "directory", "include")
	}
	return c
}

func shellCall(name, cmd string) Call {
	c := classifyShell(cmd)
	c.Tool, c.Command = name, cmd
	if c.Kind == KindOther {
		c.Kind = KindBash
	}
	return c
}

// neutral commands neither read nor change what later results show; they
// are skipped when deciding what a compound command does.
var neutral = map[string]bool{
	"cd": true, "pushd": true, "popd": true, "export": true, "source": true, ".": true, "set": true,
	"true": true, "mkdir": true, "clear": true, "sleep": true, "unset": true, "alias": true,
}

// classifyShell tells what a shell command does from its first meaningful
// pipeline. A command doing several things is KindOther (the caller makes
// it KindBash).
func classifyShell(src string) Call {
	// shellcmd reads only the first line of SWE-agent's multi-line
	// commands (edit 3:5 … end_of_edit): the rest is not shell.
	var main []shellcmd.Pipeline
	for _, pl := range shellcmd.Parse(src) {
		for _, c := range pl {
			if c.Nested {
				// A loop or a condition: it may do anything any number
				// of times.
				return Call{Kind: KindOther}
			}
		}
		pl = stripWrappers(pl)
		if len(pl) == 0 {
			continue
		}
		first := pl[0]
		if len(pl) == 1 && len(first.Redirects) == 0 && !first.HasHeredoc && (neutral[first.Args[0]] ||
			(first.Args[0] == "echo" || first.Args[0] == "printf") && len(main) > 0) {
			continue
		}
		main = append(main, pl)
	}
	if len(main) != 1 {
		return Call{Kind: KindOther}
	}
	return classifyPipeline(main[0])
}

// stripWrappers removes leading variable assignments and wrappers such as
// sudo, time, timeout 60 and env from every command of pl.
func stripWrappers(pl shellcmd.Pipeline) shellcmd.Pipeline {
	out := pl[:0:0]
	for _, sc := range pl {
		a := sc.Args
		for len(a) > 0 {
			w := a[0]
			switch {
			case strings.Contains(w, "=") && !strings.HasPrefix(w, "=") && !strings.HasPrefix(w, "-"):
				a = a[1:]
			case w == "sudo" || w == "time" || w == "nohup" || w == "env" || w == "command" || w == "exec":
				a = a[1:]
			case w == "timeout" || w == "stdbuf":
				a = a[1:]
				for len(a) > 0 && (strings.HasPrefix(a[0], "-") || isDigits(strings.TrimRight(a[0], "smh"))) {
					a = a[1:]
				}
			default:
				goto done
			}
		}
	done:
		sc.Args = a
		if len(sc.Args) > 0 {
			out = append(out, sc)
		}
	}
	return out
}

// realOut returns the first output redirection that is a file.
func realOut(sc shellcmd.Command) string {
	for _, r := range sc.Redirects {
		if o := r.Path; o != "/dev/null" && o != "/dev/stderr" && o != "/dev/stdout" {
			return o
		}
	}
	return ""
}

func classifyPipeline(pl shellcmd.Pipeline) Call {
	first := pl[0]
	prog := path.Base(first.Args[0])
	args := first.Args[1:]
	if out := realOut(first); out != "" && len(pl) == 1 {
		switch prog {
		case "cat", "echo", "printf", "tee":
			return Call{Kind: KindWrite, Path: out}
		}
		return Call{Kind: KindOther}
	}
	// The last stage of a pipeline writing a file: `... | tee f`.
	if last := pl[len(pl)-1]; len(pl) > 1 && path.Base(last.Args[0]) == "tee" {
		if files := operands(last.Args[1:], nil); len(files) > 0 {
			return Call{Kind: KindWrite, Path: files[0]}
		}
	}
	var c Call
	switch prog {
	case "cat", "nl", "less", "more", "bat", "batcat":
		if first.HasHeredoc {
			return Call{Kind: KindOther}
		}
		files := operands(args, map[string]bool{"-v": false})
		if len(files) == 0 {
			return Call{Kind: KindOther}
		}
		c = Call{Kind: KindRead, Path: files[0]}
	case "head":
		files := operands(args, map[string]bool{"-n": true, "-c": true})
		if len(files) == 0 {
			return Call{Kind: KindOther}
		}
		c = Call{Kind: KindRead, Path: files[len(files)-1], From: 1, To: headCount(args)}
	case "tail":
		files := operands(args, map[string]bool{"-n": true, "-c": true})
		if len(files) == 0 {
			return Call{Kind: KindOther}
		}
		c = Call{Kind: KindRead, Path: files[len(files)-1], From: -1, To: -1}
	case "sed":
		return classifySed(args)
	case "grep", "egrep", "fgrep", "rg", "ag", "ack":
		c = grepCall(prog, args)
	case "git":
		if len(args) > 0 && args[0] == "grep" {
			c = grepCall("grep", args[1:])
		} else {
			return Call{Kind: KindOther}
		}
	case "ls", "tree", "dir", "exa", "eza":
		c = Call{Kind: KindLS, Path: "."}
		if files := operands(args, map[string]bool{"-I": true, "-L": true, "--ignore": true}); len(files) > 0 {
			c.Path = files[0]
		}
	case "find", "fd":
		c = Call{Kind: KindLS, Path: "."}
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "(" && args[0] != "!" {
			c.Path = args[0]
		}
		for i, a := range args {
			if (a == "-name" || a == "-iname" || a == "-path") && i+1 < len(args) {
				c.Pattern = args[i+1]
				break
			}
		}
	// SWE-agent's file viewer and search commands, typed as text actions.
	case "open":
		if len(args) == 0 {
			return Call{Kind: KindOther}
		}
		return Call{Kind: KindRead, Path: args[0], Window: true}
	case "goto", "scroll_up", "scroll_down":
		return Call{Kind: KindRead, Window: true}
	case "search_file", "search_dir":
		c = Call{Kind: KindGrep}
		if len(args) > 0 {
			c.Pattern = args[0]
		}
		if len(args) > 1 {
			c.Path = args[1]
		}
		return c
	case "find_file":
		c = Call{Kind: KindLS}
		if len(args) > 0 {
			c.Pattern = args[0]
		}
		if len(args) > 1 {
			c.Path = args[1]
		}
		return c
	case "create":
		if len(args) == 0 {
			return Call{Kind: KindOther}
		}
		return Call{Kind: KindWrite, Path: args[0]}
	case "edit", "insert", "str_replace", "append":
		return Call{Kind: KindEdit}
	case "str_replace_editor":
		if len(args) < 2 {
			return Call{Kind: KindOther}
		}
		c = Call{Path: args[1]}
		switch args[0] {
		case "view":
			c.Kind = KindRead
		case "create":
			c.Kind = KindWrite
		default:
			c.Kind = KindEdit
		}
		return c
	default:
		return Call{Kind: KindOther}
	}
	// What later stages make of it: `cat f | grep x` searches f; `grep … |
	// head` is still a search; `find | xargs grep` searches too.
	for _, st := range pl[1:] {
		p := path.Base(st.Args[0])
		viaXargs := false
		if p == "xargs" && len(st.Args) > 1 {
			rest := operands(st.Args[1:], map[string]bool{"-I": true, "-n": true, "-P": true})
			if len(rest) > 0 {
				p, viaXargs = path.Base(rest[0]), true
				st.Args = st.Args[len(st.Args)-len(rest):]
			}
		}
		switch p {
		case "grep", "egrep", "fgrep", "rg":
			if c.Kind == KindRead || c.Kind == KindLS && viaXargs {
				g := grepCall(p, st.Args[1:])
				if g.Path == "" {
					g.Path = c.Path
				}
				c = g
			}
		case "head", "tail", "sed", "awk", "cut", "sort", "uniq", "wc":
			if c.Kind == KindRead {
				c.From, c.To = -1, -1
			}
		}
	}
	return c
}

// classifySed tells `sed -n 'a,bp' f` (a read) from `sed -i … f` (an edit).
func classifySed(args []string) Call {
	inPlace, quiet := false, false
	var script string
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "--quiet" || a == "--silent":
			quiet = true
		case strings.HasPrefix(a, "-i") || a == "--in-place":
			inPlace = true
		case a == "-e" && i+1 < len(args):
			script = args[i+1]
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.Contains(a, "n") && !strings.HasPrefix(a, "--") {
				quiet = true
			}
			if strings.Contains(a, "i") && !strings.HasPrefix(a, "--") {
				inPlace = true
			}
		case script == "":
			script = a
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		return Call{Kind: KindOther}
	}
	f := files[len(files)-1]
	if inPlace {
		return Call{Kind: KindEdit, Path: f}
	}
	if !quiet {
		return Call{Kind: KindOther}
	}
	c := Call{Kind: KindRead, Path: f, From: -1, To: -1}
	// 'a,bp' or 'ap'
	s := strings.TrimSuffix(strings.TrimSpace(script), "p")
	a, b, ok := strings.Cut(s, ",")
	if x, err := strconv.Atoi(a); err == nil && x > 0 {
		c.From, c.To = x, x
		if ok {
			if y, err := strconv.Atoi(b); err == nil && y >= x {
				c.To = y
			} else if b == "$" {
				c.To = 0
			} else {
				c.From, c.To = -1, -1
			}
		}
	}
	return c
}

// grepCall reads a grep-like command's pattern and first path.
func grepCall(prog string, args []string) Call {
	valued := map[string]bool{
		"-e": true, "-f": true, "-A": true, "-B": true, "-C": true, "-m": true, "--max-count": true,
		"-g": true, "--glob": true, "-t": true, "--type": true, "--include": true, "--exclude": true,
		"--exclude-dir": true, "-T": true, "--type-not": true, "-M": true, "--context": true,
	}
	c := Call{Kind: KindGrep}
	for i := 0; i < len(args); i++ {
		if args[i] == "-e" && i+1 < len(args) && c.Pattern == "" {
			c.Pattern = args[i+1]
			break
		}
	}
	ops := operands(args, valued)
	if c.Pattern == "" && len(ops) > 0 {
		c.Pattern, ops = ops[0], ops[1:]
	}
	if len(ops) > 0 {
		c.Path = ops[0]
	}
	return c
}

// operands returns the non-option arguments; valued names the options that
// take the next argument as their value.
func operands(args []string, valued map[string]bool) []string {
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(ops, args[i+1:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if valued[a] && !strings.Contains(a, "=") {
				i++
			}
		default:
			ops = append(ops, a)
		}
	}
	return ops
}

// headCount is the N of head -n N / head -N, 10 by default.
func headCount(args []string) int {
	for i, a := range args {
		if a == "-n" && i+1 < len(args) {
			if n, err := strconv.Atoi(strings.TrimPrefix(args[i+1], "+")); err == nil {
				return n
			}
		}
		if strings.HasPrefix(a, "-n") {
			if n, err := strconv.Atoi(a[2:]); err == nil {
				return n
			}
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(a, "-")); err == nil && strings.HasPrefix(a, "-") {
			return n
		}
	}
	return 10
}

// fieldMap is a tool input's top-level fields.
type fieldMap map[string]json.RawMessage

func fields(raw json.RawMessage) fieldMap {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// str returns the first of keys holding a non-empty string.
func (in fieldMap) str(keys ...string) string {
	for _, k := range keys {
		var s string
		if v, ok := in[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// command returns the first of keys holding a shell command: a string, or
// an argv array as Codex's shell tool sends it (["bash", "-lc", script]
// is the script; any other argv, its words joined by spaces).
func (in fieldMap) command(keys ...string) string {
	for _, k := range keys {
		v, ok := in[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
		var argv []string
		if json.Unmarshal(v, &argv) != nil || len(argv) == 0 {
			continue
		}
		if len(argv) == 3 && strings.HasPrefix(argv[1], "-") && strings.HasSuffix(argv[1], "c") {
			switch path.Base(argv[0]) {
			case "sh", "bash", "zsh", "dash":
				return argv[2]
			}
		}
		return strings.Join(argv, " ")
	}
	return ""
}

// num returns the first of keys holding a number (or a numeric string).
func (in fieldMap) num(keys ...string) int {
	for _, k := range keys {
		v, ok := in[k]
		if !ok {
			continue
		}
		var f float64
		if json.Unmarshal(v, &f) == nil {
			return int(f)
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			if n, err := strconv.Atoi(s); err == nil {
				return n
			}
		}
	}
	return 0
}

func (in fieldMap) raw(key string) json.RawMessage { return in[key] }

// viewRange reads str_replace_editor's view_range [a, b] (b -1 = to end).
func (in fieldMap) viewRange() (int, int) {
	var r []int
	if json.Unmarshal(in["view_range"], &r) != nil || len(r) != 2 || r[0] < 1 {
		return 0, 0
	}
	if r[1] < 0 {
		return r[0], 0
	}
	return r[0], r[1]
}

// firstString returns the first top-level string value of raw in document
// order.
func firstString(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil { // key
			return ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
