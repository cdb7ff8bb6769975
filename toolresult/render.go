package toolresult

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/textfmt"
)

// render writes the rung-1 text of a structured result of a known kind,
// reading the data fields ctxkit's tools define (tools package doc); it
// returns false when the kind is not one it knows or a field it needs is
// missing, and the caller falls back to the JSON form. It never changes
// data.
func (cp *Compressor) render(env map[string]json.RawMessage, data map[string]any, c Call, isErr bool, n *note) (string, bool) {
	var text, errMsg string
	_ = json.Unmarshal(env["text"], &text)
	_ = json.Unmarshal(env["error"], &errMsg)
	path := getStr(data, "path")
	if path == "" {
		path = c.Path
	}
	var out []string
	switch c.Kind {
	case KindRead:
		if isErr || text == "" || !has(data, "total_lines") {
			return "", false
		}
		facts := []string{}
		if a, b, total := getInt(data, "start_line"), getInt(data, "end_line"), getInt(data, "total_lines"); a > 0 {
			facts = append(facts, fmt.Sprintf("lines %s-%s of %s", textfmt.Thousands(a), textfmt.Thousands(b), textfmt.Thousands(total)))
		} else {
			facts = append(facts, plural(total, "line"))
		}
		if m := getStr(data, "mtime"); m != "" {
			facts = append(facts, "mtime "+m)
		}
		if getBool(data, "modified_externally") {
			facts = append(facts, "modified externally")
		}
		out = append(out, header("Read", path, facts))
		lines := splitLines(text)
		kept := cp.head(lines, cp.lim.ReadLines, cp.lim.MaxChars, n)
		if rest := len(lines) - len(kept); rest > 0 {
			n.add(fmt.Sprintf("… %s more lines not shown (%s total)", textfmt.Thousands(rest), textfmt.Thousands(len(lines))))
		}
		out = append(out, kept...)
	case KindLS:
		entries, ok := getStrings(data, "entries")
		if isErr || !ok {
			return "", false
		}
		total := max(getInt(data, "total_entries"), len(entries))
		out = append(out, header("LS", path, []string{plural(total, "entry")}))
		kept := cp.head(entries, cp.lim.LSEntries, cp.lim.MaxChars, n)
		if rest := total - len(kept); rest > 0 {
			n.add(fmt.Sprintf("… %s more entries (%s total)", textfmt.Thousands(rest), textfmt.Thousands(total)))
		}
		out = append(out, kept...)
	case KindGrep:
		items, ok := getStrings(data, "matches")
		what, totalKey := "matches", "total_matches"
		if files, fok := getStrings(data, "files"); fok && len(items) == 0 {
			items, what, totalKey = files, "files", "total_files"
		} else if !ok {
			return "", false
		}
		if isErr {
			return "", false
		}
		pattern := getStr(data, "pattern")
		if pattern == "" {
			pattern = c.Pattern
		}
		total := max(getInt(data, totalKey), len(items))
		facts := []string{plural(getInt(data, "total_matches"), "match")}
		if f := getInt(data, "total_files"); f > 0 {
			facts[0] += " in " + plural(f, "file")
		}
		where := quote(pattern, 80)
		if path != "" {
			where += " in " + path
		}
		out = append(out, header("Grep", where, facts))
		kept := cp.head(items, cp.lim.GrepMatches, cp.lim.MaxChars, n)
		if rest := total - len(kept); rest > 0 {
			n.add(fmt.Sprintf("… %s more %s (%s total)", textfmt.Thousands(rest), what, textfmt.Thousands(total)))
		}
		out = append(out, kept...)
	case KindEdit, KindWrite:
		diff, ok := data["diff"].(string)
		if !ok {
			return "", false
		}
		var facts []string
		tool := "Edit"
		if c.Kind == KindWrite {
			tool = "Write"
			if op := getStr(data, "operation"); op != "" {
				facts = append(facts, op)
			}
			if getBool(data, "unchanged") {
				facts = append(facts, "unchanged")
			} else if has(data, "lines") {
				facts = append(facts, plural(getInt(data, "lines"), "line"))
			}
		} else {
			if getBool(data, "applied") {
				facts = append(facts, "applied")
			} else {
				facts = append(facts, "not applied")
			}
			if f := getInt(data, "failed_edit"); f > 0 {
				facts = append(facts, fmt.Sprintf("edit %d failed", f))
			}
			facts = append(facts, plural(getInt(data, "replacements"), "replacement"))
		}
		if a, r := getInt(data, "added"), getInt(data, "removed"); a > 0 || r > 0 {
			facts = append(facts, fmt.Sprintf("+%d -%d lines", a, r))
		}
		if getBool(data, "modified_externally") {
			facts = append(facts, "modified externally")
		}
		out = append(out, header(tool, path, facts))
		if errMsg != "" {
			out = append(out, "Error: "+cutLine(errMsg, cp.lim.LineChars))
		}
		lines := splitLines(diff)
		kept := cp.head(lines, cp.lim.DiffLines, cp.lim.MaxChars, n)
		total := max(getInt(data, "diff_lines"), len(lines))
		if rest := total - len(kept); rest > 0 {
			n.add(fmt.Sprintf("… %s more diff lines (%s total)", textfmt.Thousands(rest), textfmt.Thousands(total)))
		}
		out = append(out, kept...)
	case KindBash:
		stdout, ok1 := data["stdout"].(string)
		stderr, ok2 := data["stderr"].(string)
		if !ok1 || !ok2 {
			return "", false
		}
		cmd := getStr(data, "command")
		if cmd == "" {
			cmd = c.Command
		}
		var facts []string
		if has(data, "exit_code") {
			facts = append(facts, fmt.Sprintf("exit %d", getInt(data, "exit_code")))
		}
		if sig := getStr(data, "signal"); sig != "" {
			facts = append(facts, "signal "+sig)
		}
		if getBool(data, "timed_out") {
			facts = append(facts, "timed out")
		}
		if getBool(data, "cancelled") {
			facts = append(facts, "cancelled")
		}
		out = append(out, header("Bash", quote(cmd, 120), facts))
		lines := splitLines(stdout)
		kept := cp.head(lines, cp.lim.HeadLines, cp.lim.MaxChars/2, n)
		if rest := len(lines) - len(kept); rest > 0 {
			n.add(fmt.Sprintf("stdout: … %s more lines (%s total)", textfmt.Thousands(rest), textfmt.Thousands(len(lines))))
		}
		out = append(out, kept...)
		if stderr != "" {
			lines := splitLines(stderr)
			kept := cp.tail(lines, cp.lim.TailLines, cp.lim.MaxChars/2, n)
			if rest := len(lines) - len(kept); rest > 0 {
				n.add(fmt.Sprintf("stderr: … %s earlier lines (%s total)", textfmt.Thousands(rest), textfmt.Thousands(len(lines))))
			}
			out = append(out, "stderr:")
			out = append(out, kept...)
		}
	default:
		return "", false
	}
	return strings.Join(out, "\n"), true
}

// header is the first line of a rendered result: "[Read a.go: 650 lines,
// mtime …]".
func header(tool, subject string, facts []string) string {
	h := "[" + tool
	if subject != "" {
		h += " " + subject
	}
	if len(facts) > 0 {
		h += ": " + strings.Join(facts, ", ")
	}
	return h + "]"
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func getStr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func getBool(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

func getInt(m map[string]any, k string) int {
	switch v := m[k].(type) {
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			f, _ := v.Float64()
			return int(f)
		}
		return int(n)
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// getStrings returns a list of strings; false when k is missing or holds
// anything else.
func getStrings(m map[string]any, k string) ([]string, bool) {
	list, ok := m[k].([]any)
	if !ok {
		return nil, m[k] == nil && has(m, k)
	}
	out := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}
