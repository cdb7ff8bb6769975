package summarize

import (
	"regexp"
	"strings"

	"github.com/ctxkit/ctxkit/shellcmd"
)

// FileOp is one operation a tool call did to a file.
type FileOp struct {
	Path string
	// Op is what happened: created, written, edited, appended, deleted,
	// renamed, read, reverted, patched.
	Op string
	// How is a short description: the tool and a hint of the change.
	How string
	// Failed is set when the call's result was an error.
	Failed bool
}

// Writes reports whether the op changed the file (everything but read).
func (o FileOp) Writes() bool { return o.Op != OpRead }

// File operation names.
const (
	OpCreated  = "created"
	OpWritten  = "written"
	OpEdited   = "edited"
	OpAppended = "appended"
	OpDeleted  = "deleted"
	OpRenamed  = "renamed"
	OpRead     = "read"
	OpReverted = "reverted"
	OpPatched  = "patched"
)

// ShellOps returns the file operations a shell command performs, as far as
// they can be seen without running it: output redirections (> >> &> and
// heredocs written with cat > f <<EOF), sed -i, perl -i, tee, mv, cp, rm,
// touch, patch, git apply / checkout / restore / rm / mv, Python one-liners
// that open a file for writing, and SWE-agent's create/edit/open commands.
// It is best effort: shellcmd.Parse reads a command that is not shell line
// by line, as words.
func ShellOps(cmd string) []FileOp {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return nil
	}
	var s shellScan
	// SWE-agent's edit blocks ("edit 10:12\n<code>\nend_of_edit") are not
	// shell: the body would parse as commands.
	if head, ok := shellcmd.SWEBlock(cmd); ok {
		if strings.HasPrefix(head, "edit") {
			s.add(FileOp{Path: sweCurrentFile, Op: OpEdited, How: "edit " + strings.TrimSpace(strings.TrimPrefix(head, "edit"))})
		}
		return s.ops
	}
	for _, pl := range shellcmd.Parse(cmd) {
		for _, c := range pl {
			s.redirects(c)
			s.call(c.Args)
		}
	}
	return s.ops
}

// sweCurrentFile stands for "the file open in SWE-agent's editor"; the
// caller that tracks open/create commands replaces it.
const sweCurrentFile = "\x00current"

type shellScan struct {
	ops []FileOp
}

func (s *shellScan) add(op FileOp) {
	if op.Path == "" || isDevice(op.Path) {
		return
	}
	s.ops = append(s.ops, op)
}

func isDevice(p string) bool {
	return strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "&") || strings.HasPrefix(p, "/proc/")
}

func (s *shellScan) redirects(c shellcmd.Command) {
	heredoc := c.Heredoc
	name := c.Name()
	for _, r := range c.Redirects {
		if r.Fd == "2" { // stderr captured to a log
			if r.Op == ">" || r.Op == ">>" {
				s.add(FileOp{Path: r.Path, Op: OpWritten, How: "stderr redirect"})
			}
			continue
		}
		if r.Append() {
			s.add(FileOp{Path: r.Path, Op: OpAppended, How: ">> redirect"})
			continue
		}
		how := "> redirect"
		if heredoc != "" && (name == "cat" || name == "") {
			how = "heredoc (" + lineCount(heredoc) + ")"
		} else if name != "" {
			how = name + " > redirect"
		}
		s.add(FileOp{Path: r.Path, Op: OpWritten, How: how})
	}
	if heredoc != "" && (name == "patch" || name == "git") {
		for _, p := range diffTargets(heredoc) {
			s.add(FileOp{Path: p.Path, Op: p.Op, How: name + " (inline diff)"})
		}
	}
	if heredoc != "" && isPython(name) {
		for _, p := range pythonWrites(heredoc) {
			s.add(FileOp{Path: p, Op: OpWritten, How: "python script"})
		}
	}
}

func isPython(name string) bool {
	return name == "python" || name == "python3" || strings.HasPrefix(name, "python3.")
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func (s *shellScan) call(args []string) {
	for len(args) > 0 && (args[0] == "sudo" || args[0] == "command" || args[0] == "env" || args[0] == "time" || strings.Contains(args[0], "=")) {
		args = args[1:]
	}
	if len(args) == 0 {
		return
	}
	name, rest := baseName(args[0]), args[1:]
	files := func() []string { return operands(rest) }
	switch name {
	case "sed", "perl":
		inPlace := false
		for _, a := range rest {
			if a == "-i" || strings.HasPrefix(a, "-i") || a == "--in-place" || strings.HasPrefix(a, "--in-place=") || (name == "perl" && strings.HasPrefix(a, "-") && strings.Contains(a, "i") && !strings.HasPrefix(a, "--")) {
				inPlace = true
			}
		}
		if !inPlace {
			return
		}
		ops := sedOperands(rest)
		for _, f := range ops {
			s.add(FileOp{Path: f, Op: OpEdited, How: name + " -i " + clip(firstScript(rest), 60)})
		}
	case "tee":
		op := OpWritten
		for _, a := range rest {
			if a == "-a" || a == "--append" {
				op = OpAppended
			}
		}
		for _, f := range files() {
			s.add(FileOp{Path: f, Op: op, How: "tee"})
		}
	case "mv":
		fs := files()
		if len(fs) >= 2 {
			dst := fs[len(fs)-1]
			for _, src := range fs[:len(fs)-1] {
				s.add(FileOp{Path: src, Op: OpRenamed, How: "mv to " + dst})
			}
			s.add(FileOp{Path: dst, Op: OpWritten, How: "mv from " + strings.Join(fs[:len(fs)-1], ", ")})
		}
	case "cp":
		fs := files()
		if len(fs) >= 2 {
			s.add(FileOp{Path: fs[len(fs)-1], Op: OpWritten, How: "cp from " + strings.Join(fs[:len(fs)-1], ", ")})
		}
	case "rm", "unlink":
		for _, f := range files() {
			s.add(FileOp{Path: f, Op: OpDeleted, How: "rm"})
		}
	case "touch":
		for _, f := range files() {
			s.add(FileOp{Path: f, Op: OpCreated, How: "touch"})
		}
	case "patch":
		// patch [options] [originalfile [patchfile]]; with -i the patch.
		fs := files()
		if len(fs) > 0 {
			s.add(FileOp{Path: fs[0], Op: OpPatched, How: "patch"})
		}
	case "git":
		s.git(rest)
	case "create": // SWE-agent
		if len(rest) > 0 {
			s.add(FileOp{Path: rest[0], Op: OpCreated, How: "create"})
		}
	case "open": // SWE-agent: makes the file current
		if len(rest) > 0 {
			s.add(FileOp{Path: rest[0], Op: OpRead, How: "open"})
		}
	case "ssh":
		// The remote command is shell too: ssh host "cat > f <<EOF …".
		if remote := sshCommand(rest); remote != "" {
			for _, op := range ShellOps(remote) {
				s.add(op)
			}
		}
	case "bash", "sh", "zsh", "dash":
		for i, a := range rest {
			if a == "-c" && i+1 < len(rest) {
				for _, op := range ShellOps(rest[i+1]) {
					s.add(op)
				}
			}
		}
	case "python", "python3":
		for i, a := range rest {
			if a == "-c" && i+1 < len(rest) {
				for _, p := range pythonWrites(rest[i+1]) {
					s.add(FileOp{Path: p, Op: OpWritten, How: "python -c"})
				}
			}
		}
	}
}

// sshCommand is the remote command of an ssh invocation: the operands
// after the destination, joined by spaces as ssh itself joins them.
// Options that take a value (-p 22, -i key, -o Opt=v, …) are skipped with
// their value.
func sshCommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			if i < len(args) {
				return strings.Join(args[i+1:], " ")
			}
			return ""
		}
		if strings.HasPrefix(a, "-") {
			if len(a) == 2 && strings.ContainsRune("bcDEeFIiJLlmOopQRSWw", rune(a[1])) {
				i++
			}
			continue
		}
		return strings.Join(args[i+1:], " ")
	}
	return ""
}

func (s *shellScan) git(args []string) {
	if len(args) == 0 {
		return
	}
	sub, rest := args[0], args[1:]
	fs := operands(rest)
	switch sub {
	case "checkout", "restore":
		// git checkout <branch> is not a file operation; with "--" or
		// a path-looking operand it reverts files.
		dash := false
		for _, a := range rest {
			if a == "--" {
				dash = true
			}
		}
		for _, f := range fs {
			if dash || strings.ContainsAny(f, "./") {
				s.add(FileOp{Path: f, Op: OpReverted, How: "git " + sub})
			}
		}
	case "rm":
		for _, f := range fs {
			s.add(FileOp{Path: f, Op: OpDeleted, How: "git rm"})
		}
	case "mv":
		if len(fs) >= 2 {
			s.add(FileOp{Path: fs[0], Op: OpRenamed, How: "git mv to " + fs[len(fs)-1]})
			s.add(FileOp{Path: fs[len(fs)-1], Op: OpWritten, How: "git mv from " + fs[0]})
		}
	case "apply", "am":
		for _, f := range fs {
			s.add(FileOp{Path: f, Op: OpRead, How: "git " + sub + " (patch file)"})
		}
	}
}

// operands drops options (-x, --long, --long=value) and a lone "--".
func operands(args []string) []string {
	var out []string
	opts := true
	for _, a := range args {
		if opts && a == "--" {
			opts = false
			continue
		}
		if opts && strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// sedOperands skips sed's script: the first operand unless -e/-f gave it.
func sedOperands(args []string) []string {
	var out []string
	script := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-e" || a == "-f" || a == "--expression" || a == "--file":
			script = true
			i++
		case strings.HasPrefix(a, "-"):
		default:
			out = append(out, a)
		}
	}
	if !script && len(out) > 0 {
		out = out[1:]
	}
	return out
}

func firstScript(args []string) string {
	for i, a := range args {
		if (a == "-e" || a == "--expression") && i+1 < len(args) {
			return args[i+1]
		}
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

var (
	pyOpen      = regexp.MustCompile(`open\(\s*(?:r|f)?(['"])([^'"\n]+)['"]\s*,\s*(?:mode\s*=\s*)?['"][^'"]*[wax+][^'"]*['"]`)
	pyWriteText = regexp.MustCompile(`Path\(\s*(['"])([^'"\n]+)['"]\s*\)\.write_(?:text|bytes)\(`)
)

func pythonWrites(code string) []string {
	var out []string
	for _, m := range pyOpen.FindAllStringSubmatch(code, -1) {
		out = append(out, m[2])
	}
	for _, m := range pyWriteText.FindAllStringSubmatch(code, -1) {
		out = append(out, m[2])
	}
	return out
}

var (
	diffPlus  = regexp.MustCompile(`(?m)^\+\+\+ (?:b/)?(\S+)`)
	diffMinus = regexp.MustCompile(`(?m)^--- (?:a/)?(\S+)`)
	// Codex-style patches: "*** Update File: path".
	codexPatch = regexp.MustCompile(`(?m)^\*\*\* (Add|Update|Delete) File: (.+)$`)
)

// diffTargets returns the files a unified diff (or a Codex-style patch)
// changes.
func diffTargets(diff string) []FileOp {
	var out []FileOp
	minus := diffMinus.FindAllStringSubmatch(diff, -1)
	for i, m := range diffPlus.FindAllStringSubmatch(diff, -1) {
		p, op := m[1], OpPatched
		if p == "/dev/null" {
			if i < len(minus) {
				out = append(out, FileOp{Path: minus[i][1], Op: OpDeleted})
			}
			continue
		}
		if i < len(minus) && minus[i][1] == "/dev/null" {
			op = OpCreated
		}
		out = append(out, FileOp{Path: p, Op: op})
	}
	for _, m := range codexPatch.FindAllStringSubmatch(diff, -1) {
		op := map[string]string{"Add": OpCreated, "Update": OpEdited, "Delete": OpDeleted}[m[1]]
		out = append(out, FileOp{Path: strings.TrimSpace(m[2]), Op: op})
	}
	return out
}

func lineCount(s string) string {
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") && s != "" {
		n++
	}
	if n == 1 {
		return "1 line"
	}
	return itoa(n) + " lines"
}
