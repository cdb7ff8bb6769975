package shellcmd

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// A Command is one simple command: a program and its arguments.
type Command struct {
	// Args are the words, with quotes and escapes removed. A word that
	// cannot be told without running something ($VAR, $(cmd)) keeps its
	// source text.
	Args []string
	// Redirects are the command's output redirections to files (>, >>,
	// &>, &>>, >|, and 2> and the like); duplications such as 2>&1 are
	// not among them.
	Redirects []Redirect
	// Heredoc is the body of the here-document the command reads (<<EOF
	// or <<-EOF), with parameters expanded as empty where the delimiter is
	// not quoted; HasHeredoc is set even when the body is empty.
	Heredoc    string
	HasHeredoc bool
	// Nested is set for a command inside a loop, a condition, a case or a
	// function body: it may run many times or never.
	Nested bool
}

// Name is the base name of the program the command runs ("" for a
// command without words, such as a lone redirection).
func (c Command) Name() string {
	if len(c.Args) == 0 {
		return ""
	}
	p := c.Args[0]
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// A Redirect is an output redirection to a file.
type Redirect struct {
	Op   string // ">", ">>", "&>", "&>>" or ">|"
	Fd   string // the descriptor before the operator ("2" in 2>err.log), or ""
	Path string
}

// Append reports whether the redirection appends to the file.
func (r Redirect) Append() bool { return r.Op == ">>" || r.Op == "&>>" }

// A Pipeline is commands joined by | (one command for a plain command).
type Pipeline []Command

// Parse returns the pipelines of src in the order they appear, whatever
// joins them (;, &&, ||, &, newlines), including those inside subshells,
// groups, loops and conditions. It never fails (see the package doc).
func Parse(src string) []Pipeline {
	if head, ok := SWEBlock(src); ok {
		src = head
	}
	if pls, ok := parse(src); ok {
		return pls
	}
	// Line by line, skipping the bodies of here-documents the fallback
	// sees opened.
	var out []Pipeline
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if pls, ok := parse(line); ok {
			out = append(out, pls...)
			continue
		}
		cmd := words(line)
		out = append(out, Pipeline{cmd})
		if delim := heredocDelim(line); delim != "" {
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != delim {
				i++
			}
			i++
		}
	}
	return out
}

// parse parses src as bash, reporting false when it is not.
func parse(src string) ([]Pipeline, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, false
	}
	var w walker
	for _, st := range f.Stmts {
		w.stmt(st, false)
	}
	return w.out, true
}

type walker struct {
	out []Pipeline
}

func (w *walker) stmts(list []*syntax.Stmt, nested bool) {
	for _, st := range list {
		w.stmt(st, nested)
	}
}

// stmt adds the pipelines of one statement.
func (w *walker) stmt(st *syntax.Stmt, nested bool) {
	if st == nil {
		return
	}
	if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		var pl Pipeline
		w.pipe(b, &pl, nested)
		if len(st.Redirs) > 0 && len(pl) > 0 {
			last := &pl[len(pl)-1]
			addRedirs(last, st.Redirs)
		}
		if len(pl) > 0 {
			w.out = append(w.out, pl)
		}
		return
	}
	if c, ok := w.command(st, nested); ok {
		w.out = append(w.out, Pipeline{c})
	}
}

// pipe flattens a | b | c into pl; a stage that is not a simple command
// (a subshell, a loop) adds its own pipelines instead.
func (w *walker) pipe(b *syntax.BinaryCmd, pl *Pipeline, nested bool) {
	for _, side := range []*syntax.Stmt{b.X, b.Y} {
		if bb, ok := side.Cmd.(*syntax.BinaryCmd); ok && (bb.Op == syntax.Pipe || bb.Op == syntax.PipeAll) {
			w.pipe(bb, pl, nested)
			continue
		}
		if c, ok := w.command(side, nested); ok {
			*pl = append(*pl, c)
		}
	}
}

// command returns the simple command of st, or adds the pipelines of a
// compound one and reports false.
func (w *walker) command(st *syntax.Stmt, nested bool) (Command, bool) {
	var c Command
	if st == nil {
		return c, false
	}
	switch x := st.Cmd.(type) {
	case nil: // a lone redirection: > file
	case *syntax.CallExpr:
		for _, a := range x.Args {
			c.Args = append(c.Args, literal(a))
		}
	case *syntax.DeclClause: // export, local, declare, readonly
		c.Args = append(c.Args, x.Variant.Value)
		for _, a := range x.Args {
			if a.Name != nil {
				c.Args = append(c.Args, a.Name.Value)
			} else if a.Value != nil {
				c.Args = append(c.Args, literal(a.Value))
			}
		}
	case *syntax.BinaryCmd: // && and ||
		w.stmt(x.X, nested)
		w.stmt(x.Y, nested)
		return c, false
	case *syntax.Subshell:
		w.stmts(x.Stmts, nested)
		return c, false
	case *syntax.Block:
		w.stmts(x.Stmts, nested)
		return c, false
	case *syntax.IfClause:
		for ic := x; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, true)
			w.stmts(ic.Then, true)
		}
		return c, false
	case *syntax.WhileClause:
		w.stmts(x.Cond, true)
		w.stmts(x.Do, true)
		return c, false
	case *syntax.ForClause:
		w.stmts(x.Do, true)
		return c, false
	case *syntax.CaseClause:
		for _, item := range x.Items {
			w.stmts(item.Stmts, true)
		}
		return c, false
	case *syntax.FuncDecl:
		w.stmt(x.Body, true)
		return c, false
	case *syntax.TimeClause:
		return w.command(x.Stmt, nested)
	case *syntax.CoprocClause:
		return w.command(x.Stmt, nested)
	default: // [[ ]], (( )), let: no files written
		return c, false
	}
	c.Nested = nested
	addRedirs(&c, st.Redirs)
	if len(c.Args) == 0 && len(c.Redirects) == 0 && !c.HasHeredoc {
		return c, false
	}
	return c, true
}

func addRedirs(c *Command, redirs []*syntax.Redirect) {
	for _, r := range redirs {
		op := ""
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			c.HasHeredoc = true
			if r.Hdoc != nil {
				c.Heredoc, _ = expand.Document(&expand.Config{}, r.Hdoc)
				if c.Heredoc == "" {
					c.Heredoc = r.Hdoc.Lit()
				}
			}
			continue
		case syntax.RdrOut:
			op = ">"
		case syntax.AppOut:
			op = ">>"
		case syntax.RdrAll:
			op = "&>"
		case syntax.AppAll:
			op = "&>>"
		case syntax.RdrClob:
			op = ">|"
		default: // <, <<<, 2>&1, <&
			continue
		}
		fd := ""
		if r.N != nil {
			fd = r.N.Value
		}
		c.Redirects = append(c.Redirects, Redirect{Op: op, Fd: fd, Path: literal(r.Word)})
	}
}

// literal returns a word with quotes and escapes removed. Parameters,
// command substitutions and arithmetic keep their source text: telling
// them would mean running something.
func literal(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	unquote(&b, w.Parts, false)
	return b.String()
}

func unquote(b *strings.Builder, parts []syntax.WordPart, quoted bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unescape(b, p.Value, quoted)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			unquote(b, p.Parts, true)
		default:
			if err := syntax.NewPrinter().Print(b, p); err != nil {
				b.WriteString("?")
			}
		}
	}
}

// unescape writes s without the backslashes that escape a character:
// any character outside double quotes, and $ ` " \ and newline inside.
func unescape(b *strings.Builder, s string, quoted bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!quoted || strings.IndexByte("$`\"\\\n", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
}

// words reads a line that is not shell: its whitespace-separated words,
// with > and >> (and 2>, &>) and the word after them as redirections.
func words(line string) Command {
	var c Command
	f := strings.Fields(line)
	for i := 0; i < len(f); i++ {
		w := f[i]
		if m := redirOp.FindStringSubmatch(w); m != nil {
			target := m[3]
			if target == "" && i+1 < len(f) {
				i++
				target = f[i]
			}
			if target != "" && !strings.HasPrefix(target, "&") {
				c.Redirects = append(c.Redirects, Redirect{Op: m[2], Fd: m[1], Path: target})
			}
			continue
		}
		if strings.HasPrefix(w, "<<") {
			c.HasHeredoc = true
			if w == "<<" || w == "<<-" {
				i++
			}
			continue
		}
		c.Args = append(c.Args, w)
	}
	return c
}

var redirOp = regexp.MustCompile(`^([0-9]?)(&>>|&>|>>|>\||>)(.*)$`)

// heredocDelim returns the delimiter of a here-document a line that is not
// shell opens, or "".
func heredocDelim(line string) string {
	i := strings.Index(line, "<<")
	if i < 0 || strings.HasPrefix(line[i:], "<<<") {
		return ""
	}
	f := strings.Fields(strings.TrimLeft(line[i+2:], "-"))
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], `'"`)
}

// sweEditHead is the first line of SWE-agent's edit command.
var sweEditHead = regexp.MustCompile(`^edit\s+\d+:\d+\s*$`)

// SWEBlock reports whether src is one of SWE-agent's multi-line commands
// — edit 3:5, then the new lines, then end_of_edit — whose body is text,
// not shell, and returns its first line.
func SWEBlock(src string) (head string, ok bool) {
	src = strings.TrimSpace(src)
	head, _, multi := strings.Cut(src, "\n")
	head = strings.TrimSpace(head)
	if sweEditHead.MatchString(head) || multi && strings.HasSuffix(src, "end_of_edit") {
		return head, true
	}
	return "", false
}
