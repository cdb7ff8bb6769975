package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
	"github.com/ctxkit/ctxkit/tools"
)

// Mode is how much the agent may do without asking.
type Mode string

// The modes, from the most careful.
const (
	ModePlan        Mode = "plan"
	ModeAsk         Mode = "ask"
	ModeAcceptEdits Mode = "accept-edits"
	ModeBypass      Mode = "bypass"
)

// Modes lists the modes' names.
var Modes = []string{string(ModeAsk), string(ModeAcceptEdits), string(ModePlan), string(ModeBypass)}

// ErrMode: a mode name that is not one of Modes.
var ErrMode = errors.New("unknown permission mode")

// ParseMode reads a mode's name; "" is ModeAsk.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeAsk, nil
	}
	if !slices.Contains(Modes, s) {
		return "", fmt.Errorf("%w %q (known: %s)", ErrMode, s, strings.Join(Modes, ", "))
	}
	return Mode(s), nil
}

// Decision is what a Checker says of a call.
type Decision int

// The decisions.
const (
	Allow Decision = iota
	Ask
	Deny
)

// kind is what a tool does.
type kind int

const (
	kindRead kind = iota
	kindEdit
	kindExec
	kindOther
)

func kindOf(name string) kind {
	switch name {
	case tools.NameRead, tools.NameLS, tools.NameGrep, tools.NameTodoWrite, toolresult.DefaultRecallTool, "compact":
		return kindRead
	case tools.NameWrite, tools.NameEdit, tools.NameMultiEdit:
		return kindEdit
	case tools.NameBash:
		return kindExec
	}
	return kindOther
}

// rule is one parsed pattern: Tool, or Tool(spec).
type rule struct {
	text   string
	tool   string
	spec   string
	prefix bool // spec ended in ":*"
}

// ErrRule: a rule that does not parse.
var ErrRule = errors.New("invalid permission rule")

func parseRule(s string) (rule, error) {
	s = strings.TrimSpace(s)
	r := rule{text: s, tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") || i == 0 {
			return rule{}, fmt.Errorf("%w %q: write Tool or Tool(pattern), e.g. Bash(go test:*)", ErrRule, s)
		}
		r.tool, r.spec = s[:i], s[i+1:len(s)-1]
		if strings.HasSuffix(r.spec, ":*") {
			r.spec, r.prefix = strings.TrimSuffix(r.spec, ":*"), true
		}
		if strings.TrimSpace(r.spec) == "" && !r.prefix {
			return rule{}, fmt.Errorf("%w %q: the pattern is empty", ErrRule, s)
		}
	}
	if r.tool == "" || strings.ContainsAny(r.tool, " ()") {
		return rule{}, fmt.Errorf("%w %q: write Tool or Tool(pattern), e.g. Bash(go test:*)", ErrRule, s)
	}
	return r, nil
}

// shellOps are what chains or redirects commands: an allow rule's prefix
// never covers a command holding one, or "go test ./... && rm -rf ~" would
// pass as "go test".
var shellOps = []string{"&&", "||", ";", "|", "&", "`", "$(", ">", "<", "\n"}

func hasShellOps(cmd string) bool {
	for _, op := range shellOps {
		if strings.Contains(cmd, op) {
			return true
		}
	}
	return false
}

// segments splits a command at its shell operators, for deny rules.
func segments(cmd string) []string {
	out := []string{cmd}
	for _, op := range shellOps {
		var next []string
		for _, s := range out {
			next = append(next, strings.Split(s, op)...)
		}
		out = next
	}
	for i := range out {
		out[i] = strings.TrimLeft(strings.TrimSpace(out[i]), "({ ")
	}
	return out
}

// matches reports whether r covers a call; deny rules match any segment
// of a chained command, allow rules only a whole plain one.
func (r rule) matches(name string, in input, deny bool) bool {
	tool := r.tool
	if tool == tools.NameEdit && kindOf(name) == kindEdit {
		tool = name // Edit(...) covers every file change
	}
	if tool != name {
		return false
	}
	if r.spec == "" && !r.prefix {
		return true
	}
	switch kindOf(name) {
	case kindExec:
		cmd := strings.TrimSpace(in.Command)
		match := func(c string) bool {
			if r.prefix {
				return c == r.spec || strings.HasPrefix(c, r.spec+" ") || r.spec == ""
			}
			return c == r.spec
		}
		if deny {
			for _, s := range segments(cmd) {
				if match(s) {
					return true
				}
			}
			return false
		}
		return !hasShellOps(cmd) && match(cmd)
	case kindEdit:
		return globMatch(r.spec, in.FilePath)
	}
	return false
}

// globMatch matches a slash path against a pattern where ** spans folders.
func globMatch(pattern, p string) bool {
	p = path.Clean(strings.TrimPrefix(p, "./"))
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

// input is what the rules look at in a call's input.
type input struct {
	Command  string `json:"command"`
	FilePath string `json:"file_path"`
}

func decodeInput(raw json.RawMessage) input {
	var in input
	_ = json.Unmarshal(raw, &in)
	return in
}

// Checker decides each call from a mode and rules. It is safe for
// concurrent use.
type Checker struct {
	mode Mode
	// unconfined, when set, is why commands the mode alone would run
	// unasked are asked about instead (AskUnconfined).
	unconfined string
	mu         sync.Mutex
	deny       []rule
	// allow holds the configured rules, then the ones added this session.
	allow []rule
}

// New returns a Checker for mode and rules.
func New(mode Mode, rules Rules) (*Checker, error) {
	c := &Checker{mode: mode}
	for _, s := range rules.Deny {
		r, err := parseRule(s)
		if err != nil {
			return nil, err
		}
		c.deny = append(c.deny, r)
	}
	for _, s := range rules.Allow {
		if err := c.Allow(s); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Mode is the Checker's mode.
func (c *Checker) Mode() Mode { return c.mode }

// AskUnconfined makes the Checker ask about the Bash commands its mode
// alone would run unasked (bypass mode), saying why: the caller wanted
// them sandboxed and cannot (the kernel has no Landlock), and a command
// must never run unconfined unless the user chose that. Allow rules still
// apply: the user named those commands.
func (c *Checker) AskUnconfined(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unconfined = why
}

// Allow adds an allow rule for the rest of the session.
func (c *Checker) Allow(pattern string) error {
	r, err := parseRule(pattern)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allow = append(c.allow, r)
	return nil
}

// Check decides a call of tool name with raw input, and says why.
func (c *Checker) Check(name string, raw json.RawMessage) (Decision, string) {
	k := kindOf(name)
	if k == kindRead {
		return Allow, "reads are free"
	}
	in := decodeInput(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.deny {
		if r.matches(name, in, true) {
			return Deny, fmt.Sprintf("denied by the rule %s", r.text)
		}
	}
	for _, r := range c.allow {
		if r.matches(name, in, false) {
			return Allow, "allowed by the rule " + r.text
		}
	}
	switch c.mode {
	case ModeBypass:
		if k == kindExec && c.unconfined != "" {
			return Ask, c.unconfined
		}
		return Allow, "bypass mode"
	case ModePlan:
		return Deny, "plan mode: nothing may change files or run commands; describe the change you would make instead"
	case ModeAcceptEdits:
		if k == kindEdit {
			return Allow, "accept-edits mode"
		}
	}
	return Ask, "needs the user's approval"
}

// Describe is the exact subject of a call, as the user is asked about it:
// Bash(go test ./...), Edit(main.go).
func Describe(name string, raw json.RawMessage) string {
	in := decodeInput(raw)
	switch kindOf(name) {
	case kindExec:
		return name + "(" + in.Command + ")"
	case kindEdit:
		return name + "(" + in.FilePath + ")"
	}
	return name
}

// Suggest is the rule "always allow" adds for a call: the command's first
// two words as a prefix (Bash(go test:*)), the file for a file change.
func Suggest(name string, raw json.RawMessage) string {
	in := decodeInput(raw)
	switch kindOf(name) {
	case kindExec:
		f := strings.Fields(in.Command)
		if len(f) > 2 {
			f = f[:2]
		}
		if len(f) == 0 || hasShellOps(in.Command) {
			return "Bash(" + in.Command + ")"
		}
		return "Bash(" + strings.Join(f, " ") + ":*)"
	case kindEdit:
		return tools.NameEdit + "(" + in.FilePath + ")"
	}
	return name
}

// Preview is what the user reads before deciding: the command, or the
// change a file edit would make.
func Preview(name string, raw json.RawMessage) string {
	var in struct {
		Command   string `json:"command"`
		FilePath  string `json:"file_path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
	}
	_ = json.Unmarshal(raw, &in)
	var sb strings.Builder
	lines := func(prefix, s string) {
		for l := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
			sb.WriteString(prefix + l + "\n")
		}
	}
	switch name {
	case tools.NameBash:
		sb.WriteString("$ " + in.Command + "\n")
	case tools.NameWrite:
		fmt.Fprintf(&sb, "+++ %s (whole file)\n", in.FilePath)
		lines("+", in.Content)
	case tools.NameEdit:
		fmt.Fprintf(&sb, "--- %s\n+++ %s\n", in.FilePath, in.FilePath)
		lines("-", in.OldString)
		lines("+", in.NewString)
	case tools.NameMultiEdit:
		fmt.Fprintf(&sb, "--- %s\n+++ %s\n", in.FilePath, in.FilePath)
		for _, e := range in.Edits {
			lines("-", e.OldString)
			lines("+", e.NewString)
		}
	default:
		sb.Write(raw)
		sb.WriteString("\n")
	}
	return sb.String()
}

// Request is what a Prompter asks the user about.
type Request struct {
	Tool    string
	Subject string // Describe
	Preview string // Preview
	Suggest string // the rule "always" would add
}

// Answer is the user's choice.
type Answer struct {
	// Allow runs the call; Rule, when set, is added for the session.
	Allow bool
	Rule  string
	// Reason goes back to the model with a denial.
	Reason string
}

// Prompter asks the user about a call. It returns an error when it cannot
// (the input ended, ctx was cancelled): the call is then not run.
type Prompter func(ctx context.Context, r Request) (Answer, error)

// Runner runs tool calls; *tools.Set is one, and so is the agent's Tools.
type Runner interface {
	Schemas() []conv.Tool
	Run(ctx context.Context, name string, input json.RawMessage) tools.Result
	Todos() []tools.Todo
	RestoreTodos(todos []tools.Todo)
}

// Guard runs the calls its Checker allows, asks its Prompter about the
// others, and turns everything refused into an error result that tells the
// model why.
type Guard struct {
	Runner
	Checker *Checker
	// Ask asks the user; nil means nobody can be asked (one-shot runs), so
	// what needs asking is refused.
	Ask Prompter

	mu      sync.Mutex
	refused []string
}

// Run implements Runner.
func (g *Guard) Run(ctx context.Context, name string, raw json.RawMessage) tools.Result {
	d, why := g.Checker.Check(name, raw)
	subject := Describe(name, raw)
	switch d {
	case Allow:
		return g.Runner.Run(ctx, name, raw)
	case Deny:
		return g.refuse(subject, fmt.Sprintf("permission denied for %s: %s.", subject, why))
	}
	if g.Ask == nil {
		return g.refuse(subject, fmt.Sprintf("permission denied for %s: it needs the user's approval, and this run cannot ask (permission mode %s). The user can allow it with --permission-mode or an allow rule such as %s.", subject, g.Checker.Mode(), Suggest(name, raw)))
	}
	ans, err := g.Ask(ctx, Request{Tool: name, Subject: subject, Preview: Preview(name, raw), Suggest: Suggest(name, raw)})
	if err != nil {
		return g.refuse(subject, fmt.Sprintf("%s was not run: %v.", subject, err))
	}
	if !ans.Allow {
		msg := fmt.Sprintf("the user denied %s.", subject)
		if r := strings.TrimSpace(ans.Reason); r != "" {
			msg = fmt.Sprintf("the user denied %s: %s", subject, r)
		}
		return g.refuse(subject, msg)
	}
	if ans.Rule != "" {
		if err := g.Checker.Allow(ans.Rule); err != nil {
			return g.refuse(subject, fmt.Sprintf("%s was not run: %v.", subject, err))
		}
	}
	return g.Runner.Run(ctx, name, raw)
}

func (g *Guard) refuse(subject, msg string) tools.Result {
	g.mu.Lock()
	g.refused = append(g.refused, subject)
	g.mu.Unlock()
	return tools.Result{Status: tools.StatusError, Error: msg, Text: "Do not retry the same call; ask the user or choose another way."}
}

// Refused lists the calls refused so far, as Describe names them.
func (g *Guard) Refused() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.refused)
}
