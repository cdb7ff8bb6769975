package summarize

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Section titles shared by the templates, the extractive summarizer and
// MergeText, so that summaries from either source merge section by
// section.
const (
	SecTask      = "Task and intent"
	SecUser      = "User requirements (verbatim)"
	SecProgress  = "Progress and next action"
	SecDecisions = "Key decisions"
	SecArtifacts = "Artifact trail"
	SecErrors    = "Errors and fixes"
	SecCurrent   = "Current work"
	SecCommands  = "Commands run"
	SecCarried   = "Carried verbatim"
)

// constraintWords mark a user message that states a requirement or a
// constraint (seed 002 SmartCompactor, extended). Matched case-insensitively
// on word boundaries for the English ones.
var constraintRe = regexp.MustCompile(`(?i)\b(must|must not|mustn't|never|always|required?|requirement|don't|do not|should not|shouldn't|constraint|make sure|forbidden|not allowed)\b|不能|必须|禁止|要求|约束|不要|务必|不得|不可|一定要|只能|切勿|严禁`)

// IsConstraint reports whether a user's text states a requirement or a
// constraint, in English or Chinese ("must", "never", "do not", "必须",
// "禁止", "不要", …): such messages are carried into summaries verbatim.
func IsConstraint(text string) bool { return constraintRe.MatchString(text) }

var exitRe = []*regexp.Regexp{
	regexp.MustCompile(`<returncode>\s*(-?\d+)\s*</returncode>`),
	regexp.MustCompile(`(?i)exit(?:ed)?[ _]?(?:code|status)["']?\s*[:=]?\s*(-?\d+)`),
	regexp.MustCompile(`(?i)command finished with exit code (-?\d+)`),
}

// errWords mark a line of output that says what went wrong; matched on the
// lower-cased line (plain substring tests: outputs are large and this runs
// on every result).
var errWords = []string{"error", "exception", "traceback", "fail", "panic", "fatal", "not found", "no such file", "denied", "cannot", "can't", "undefined", "invalid", "assert", "错误", "失败", "异常"}

func errLine(l string) bool {
	l = strings.ToLower(l)
	for _, w := range errWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// ExitCode returns the exit code a shell tool's result reports, and whether
// it reports one.
func ExitCode(result string) (string, bool) {
	// Exit codes are reported at the start (mini-swe-agent's
	// <returncode>) or at the end (most shells and harnesses).
	for _, part := range []string{head(result, 400), tail(result, 400)} {
		for _, re := range exitRe {
			if m := re.FindStringSubmatch(part); m != nil {
				return m[1], true
			}
		}
	}
	return "", false
}

func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// IsErrorResult reports whether a tool result is an error: flagged as
// such, a non-zero exit code, or a Python traceback.
func IsErrorResult(b *conv.Block) bool {
	if b.Type != conv.TypeToolResult {
		return false
	}
	if b.IsError {
		return true
	}
	text := b.ResultText()
	if code, ok := ExitCode(text); ok && code != "0" {
		return true
	}
	return strings.Contains(head(text, 2000), "Traceback (most recent call last)") || strings.Contains(tail(text, 4000), "Traceback (most recent call last)")
}

// ErrorLines returns up to n lines of an error output that say what went
// wrong, each clipped, keeping the last line of a traceback.
func ErrorLines(text string, n int) []string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > 400 {
		// The head and tail of a long output say what failed.
		lines = append(lines[:200:200], lines[len(lines)-200:]...)
	}
	var out []string
	seen := make(map[string]bool)
	add := func(l string) {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] || len(out) >= n {
			return
		}
		seen[l] = true
		out = append(out, clip(l, 200))
	}
	// The final line of a traceback or test summary is usually the most
	// telling, so it goes first.
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "<") {
			if errLine(l) {
				add(l)
			}
			break
		}
	}
	for _, l := range lines {
		if len(out) >= n {
			break
		}
		if errLine(l) {
			add(l)
		}
	}
	if len(out) == 0 && len(lines) > 0 {
		add(lines[0])
	}
	return out
}

// decisionCues mark an assistant sentence that states a decision, a cause
// or a next step; matched on the lower-cased sentence.
var decisionCues = []string{"i'll ", "i will ", "i'm going to", "let me ", "let's ", "next, i", "next i ", "now i ", "the fix is", "the fix was", "the issue is", "the issue was", "the problem is", "the problem was", "the cause", "root cause", "the bug is", "the bug was", "decide", "instead", "because", "so that", "the plan is", "approach", "going to", "need to", "turns out", "the reason", "决定", "因为", "所以", "下一步", "接下来", "计划", "改为", "问题是", "原因"}

func isDecision(s string) bool {
	s = strings.ToLower(s)
	for _, c := range decisionCues {
		if strings.Contains(s, c) {
			return true
		}
	}
	return false
}

// decisions returns the sentences of an assistant text that state a
// decision, a cause or a next step.
func decisions(text string) []string {
	var out []string
	for _, s := range sentences(text) {
		s = strings.TrimSpace(s)
		if len([]rune(s)) < 15 || !isDecision(s) || strings.HasPrefix(s, "```") {
			continue
		}
		out = append(out, clip(s, 240))
	}
	return out
}

type todo struct{ Content, Status string }

// todos reads a todo-list tool call (Claude Code's TodoWrite and any tool
// whose input has a "todos" list of {content, status}).
func todos(call *conv.Block) ([]todo, bool) {
	if !strings.Contains(strings.ToLower(call.Name), "todo") {
		return nil, false
	}
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Task    string `json:"task"`
			Title   string `json:"title"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(call.Input, &in) != nil || len(in.Todos) == 0 {
		return nil, false
	}
	out := make([]todo, 0, len(in.Todos))
	for _, t := range in.Todos {
		c := t.Content
		if c == "" {
			c = t.Task
		}
		if c == "" {
			c = t.Title
		}
		out = append(out, todo{Content: c, Status: t.Status})
	}
	return out, true
}

// callLabel describes a tool call in a few words: its name and main
// argument.
func callLabel(call *conv.Block) string {
	var in map[string]any
	_ = json.Unmarshal(call.Input, &in)
	for _, k := range []string{"command", "cmd", "file_path", "path", "pattern", "query", "url", "code", "description"} {
		if v, ok := in[k].(string); ok && v != "" {
			return call.Name + " " + clip(oneLine(v), 100)
		}
	}
	return call.Name
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// shellCommand returns the command of a bash-like tool call.
func shellCommand(call *conv.Block) (string, bool) {
	if !isShellTool(strings.ToLower(call.Name)) {
		return "", false
	}
	var in map[string]any
	if json.Unmarshal(call.Input, &in) != nil {
		return "", false
	}
	for _, k := range []string{"command", "cmd", "script"} {
		if v, ok := in[k].(string); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

// userText returns the text a user typed in a message, or "" when the
// message carries only tool results and injections.
func userText(m *conv.Message) string {
	if m.Role != conv.RoleUser {
		return ""
	}
	var parts []string
	for i := range m.Blocks {
		b := &m.Blocks[i]
		if b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser {
			parts = append(parts, b.Text)
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// assistantText returns the text (not thinking) of an assistant message.
func assistantText(m *conv.Message) string {
	if m.Role != conv.RoleAssistant {
		return ""
	}
	var parts []string
	for i := range m.Blocks {
		if m.Blocks[i].Type == conv.TypeText {
			parts = append(parts, m.Blocks[i].Text)
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// sentences splits text at sentence ends: . ! ? followed by a space or the
// end (so "m.go" or "1.5" do not split), CJK full stops, and line breaks.
func sentences(text string) []string {
	var out []string
	r := []rune(text)
	start := 0
	for i := 0; i < len(r); i++ {
		end := false
		switch r[i] {
		case '\n', '。', '！', '？':
			end = true
		case '.', '!', '?':
			end = i+1 == len(r) || r[i+1] == ' ' || r[i+1] == '\n' || r[i+1] == '\t'
		}
		if end {
			if s := strings.TrimSpace(string(r[start : i+1])); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(string(r[start:])); s != "" {
		out = append(out, s)
	}
	return out
}
