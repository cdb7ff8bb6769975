package summarize

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Artifact is one file and everything done to it, in order.
type Artifact struct {
	Path string
	Ops  []FileOp
}

// Changed reports whether any op wrote to the file.
func (a Artifact) Changed() bool {
	for _, o := range a.Ops {
		if o.Writes() {
			return true
		}
	}
	return false
}

// Artifacts walks the messages' tool calls and returns every file they
// touched, in order of first appearance. It knows ctxkit's own tools,
// Claude Code's (Read, Write, Edit, MultiEdit, NotebookEdit, Bash),
// SWE-agent's (str_replace_editor, create/edit/open), OpenHands' (edit,
// str_replace_editor, execute_bash, execute_ipython_cell), Codex-style
// apply_patch, and shell commands run by any bash-like tool (see ShellOps).
func Artifacts(msgs []conv.Message) []Artifact {
	results := make(map[string]*conv.Block)
	for i := range msgs {
		for j := range msgs[i].Blocks {
			b := &msgs[i].Blocks[j]
			if b.Type == conv.TypeToolResult {
				results[b.ToolUseID] = b
			}
		}
	}
	var t tracker
	for i := range msgs {
		for j := range msgs[i].Blocks {
			b := &msgs[i].Blocks[j]
			if b.Type != conv.TypeToolUse {
				continue
			}
			for _, op := range CallOps(b, results[b.ToolUseID]) {
				t.add(op)
			}
		}
	}
	return t.list
}

type tracker struct {
	list    []Artifact
	index   map[string]int
	current string // SWE-agent's open file
}

func (t *tracker) add(op FileOp) {
	if op.Path == sweCurrentFile {
		if t.current == "" {
			return
		}
		op.Path = t.current
	}
	if op.How == "open" || op.How == "create" {
		t.current = op.Path
	}
	op.Path = cleanPath(op.Path)
	if op.Path == "" {
		return
	}
	if t.index == nil {
		t.index = make(map[string]int)
	}
	i, ok := t.index[op.Path]
	if !ok {
		i = len(t.list)
		t.index[op.Path] = i
		t.list = append(t.list, Artifact{Path: op.Path})
	}
	t.list[i].Ops = append(t.list[i].Ops, op)
}

func cleanPath(p string) string {
	p = strings.TrimSpace(p)
	p = strings.Trim(p, "`'\"")
	if strings.ContainsAny(p, "\n\x00") || len(p) > 300 {
		return ""
	}
	return p
}

// CallOps returns the file operations of one tool call; result (which may
// be nil) marks them failed when it is an error.
func CallOps(call, result *conv.Block) []FileOp {
	var in map[string]any
	_ = json.Unmarshal(call.Input, &in)
	str := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := in[k].(string); ok && v != "" {
				return v
			}
		}
		return ""
	}
	path := str("file_path", "path", "filename", "file_name", "notebook_path", "file", "target_file")
	name := strings.ToLower(call.Name)
	var ops []FileOp
	switch {
	case name == "str_replace_editor" || name == "file_editor" || name == "str_replace_based_edit_tool" ||
		(name == "edit" && str("command") != ""):
		ops = editorOps(str("command"), path, in)
	case name == "write" || name == "write_file" || name == "create_file" || name == "writefile":
		op := OpWritten
		if result != nil && !result.IsError && createdRe.MatchString(firstLine(result.ResultText())) {
			op = OpCreated
		}
		ops = []FileOp{{Path: path, Op: op, How: call.Name + " (" + lineCount(str("content", "file_text", "text")) + ")"}}
	case (name == "edit" || name == "insert") && path == "":
		// SWE-agent's function-calling tools act on the open file.
		ops = []FileOp{{Path: sweCurrentFile, Op: OpEdited, How: call.Name + replaceHint(str("search"), str("replace", "text"))}}
	case name == "create" && path != "":
		ops = []FileOp{{Path: path, Op: OpCreated, How: "create"}}
	case name == "open" && path != "":
		ops = []FileOp{{Path: path, Op: OpRead, How: "open"}}
	case name == "edit" || name == "edit_file" || name == "replace" || name == "str_replace" || name == "search_replace":
		ops = []FileOp{{Path: path, Op: OpEdited, How: call.Name + replaceHint(str("old_string", "old_str", "old"), str("new_string", "new_str", "new", "content"))}}
	case name == "multiedit" || name == "multi_edit":
		n := 0
		if es, ok := in["edits"].([]any); ok {
			n = len(es)
		}
		ops = []FileOp{{Path: path, Op: OpEdited, How: call.Name + " (" + strconv.Itoa(n) + " edits)"}}
	case name == "notebookedit":
		ops = []FileOp{{Path: path, Op: OpEdited, How: "NotebookEdit " + str("edit_mode")}}
	case name == "apply_patch" || name == "patch":
		for _, o := range diffTargets(str("patch", "input", "diff")) {
			o.How = call.Name
			ops = append(ops, o)
		}
	case name == "read" || name == "read_file" || name == "view" || name == "view_file" || name == "notebookread" || name == "open_file":
		ops = []FileOp{{Path: path, Op: OpRead, How: call.Name}}
	case name == "execute_ipython_cell" || name == "ipython" || name == "run_ipython":
		code := str("code")
		for _, p := range pythonWrites(code) {
			ops = append(ops, FileOp{Path: p, Op: OpWritten, How: "python"})
		}
		ops = append(ops, skillOps(code)...)
	default:
		if cmd := str("command", "cmd", "script"); cmd != "" && isShellTool(name) {
			ops = ShellOps(cmd)
		}
	}
	for i := range ops {
		if result == nil {
			break
		}
		if result.IsError {
			ops[i].Failed = true
		}
		// SWE-agent shows the file an edit went to: "[File: path (N lines
		// total)]", which names the open file when the open itself is
		// out of sight.
		if ops[i].Path == sweCurrentFile {
			if m := sweFileRe.FindStringSubmatch(result.ResultText()); m != nil {
				ops[i].Path = m[1]
			}
		}
	}
	return ops
}

var sweFileRe = regexp.MustCompile(`\[File: (\S+) \(\d+ lines total\)\]`)

var createdRe = regexp.MustCompile(`(?i)\bcreat(ed|e)\b|new file`)

func isShellTool(name string) bool {
	switch name {
	case "bash", "shell", "sh", "execute_bash", "run", "run_command", "execute_command", "terminal", "cmd", "exec", "command", "local_shell", "bash_command":
		return true
	}
	return strings.Contains(name, "bash") || strings.Contains(name, "shell")
}

func editorOps(command, path string, in map[string]any) []FileOp {
	switch command {
	case "create":
		n := ""
		if s, ok := in["file_text"].(string); ok {
			n = " (" + lineCount(s) + ")"
		}
		return []FileOp{{Path: path, Op: OpCreated, How: "create" + n}}
	case "str_replace":
		o, _ := in["old_str"].(string)
		nw, _ := in["new_str"].(string)
		return []FileOp{{Path: path, Op: OpEdited, How: "str_replace" + replaceHint(o, nw)}}
	case "insert":
		line := ""
		if v, ok := in["insert_line"].(float64); ok {
			line = " at line " + strconv.Itoa(int(v))
		}
		return []FileOp{{Path: path, Op: OpEdited, How: "insert" + line}}
	case "undo_edit":
		return []FileOp{{Path: path, Op: OpReverted, How: "undo_edit"}}
	case "edit", "write":
		return []FileOp{{Path: path, Op: OpEdited, How: command}}
	case "view", "":
		return []FileOp{{Path: path, Op: OpRead, How: "view"}}
	}
	return []FileOp{{Path: path, Op: OpEdited, How: command}}
}

func replaceHint(old, nw string) string {
	old, nw = firstLine(strings.TrimSpace(old)), firstLine(strings.TrimSpace(nw))
	if old == "" && nw == "" {
		return ""
	}
	return ": " + strconv.Quote(clip(old, 50)) + " → " + strconv.Quote(clip(nw, 50))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }

// OpenHands' agent skills, called from IPython cells.
var skillRe = regexp.MustCompile(`\b(create_file|edit_file_by_replace|insert_content_at_line|append_file|edit_file|open_file)\(\s*(?:file_name\s*=\s*|path\s*=\s*)?(?:r)?(['"])([^'"\n]+)['"]`)

func skillOps(code string) []FileOp {
	var ops []FileOp
	for _, m := range skillRe.FindAllStringSubmatch(code, -1) {
		op := OpEdited
		switch m[1] {
		case "create_file":
			op = OpCreated
		case "append_file":
			op = OpAppended
		case "open_file":
			op = OpRead
		}
		ops = append(ops, FileOp{Path: m[3], Op: op, How: m[1]})
	}
	return ops
}
