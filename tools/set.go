package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/secret"
)

// Tool names, as the model calls them. They follow Claude Code's names so
// that models trained on it need no adjustment and recorded sessions
// compress with the same rules.
const (
	NameRead      = "Read"
	NameWrite     = "Write"
	NameEdit      = "Edit"
	NameMultiEdit = "MultiEdit"
	NameLS        = "LS"
	NameGrep      = "Grep"
	NameBash      = "Bash"
	NameTodoWrite = "TodoWrite"
)

// Options tunes a Set. The zero value gives the defaults documented on
// each field.
type Options struct {
	// ReadMaxLines caps the lines one Read returns (default 2000).
	ReadMaxLines int
	// ReadMaxBytes caps the bytes of file content one Read returns
	// (default 256 KiB).
	ReadMaxBytes int
	// MaxLineLength cuts longer lines in Read output (default 2000 bytes).
	MaxLineLength int
	// LSMaxEntries caps the entries one LS lists (default 500); the true
	// total is still reported.
	LSMaxEntries int
	// GrepMaxMatches caps the matching lines one Grep returns (default
	// 100); the true total is still reported.
	GrepMaxMatches int
	// GrepMaxFileSize: Grep skips larger files (default 8 MiB).
	GrepMaxFileSize int64
	// BashTimeout is the default timeout of a Bash call (default 120 s);
	// BashMaxTimeout the largest one a call may ask for (default 600 s).
	BashTimeout    time.Duration
	BashMaxTimeout time.Duration
	// BashMaxOutput caps each of stdout and stderr in bytes (default
	// 30000); the head and the tail are kept.
	BashMaxOutput int
	// BashEnv is added to the environment Bash commands run in.
	BashEnv []string
	// Env is the environment Bash commands start from (before BashEnv);
	// nil means the agent's own environment without the variables that
	// look like credentials (secret.Env). Set it to os.Environ() to pass
	// everything.
	Env []string
	// Redact, when set, is applied to everything a result carries back
	// (text, error, command output, matches, diffs), so that a secret that
	// shows up in a file or an output never reaches the model or the
	// transcript.
	Redact func(string) string
	// SpillDir is the session's spill folder (transcript.SpillDir), where
	// oversize inputs and tool results are saved for the model to read
	// back: Read and Grep also accept absolute paths inside it, read only.
	// Nothing else outside the workspace is reachable. Empty means none.
	SpillDir string
	// DiffLines caps the unified diff lines kept in Write and Edit results
	// (default 60).
	DiffLines int
	// Logger receives debug logs (tool calls, kills); nil means none.
	Logger *slog.Logger
	// Sandbox, when set, confines every command Bash runs (package
	// sandbox's *Sandbox is one).
	Sandbox Sandbox
	// ReadOnly makes Write, Edit and MultiEdit refuse to change files, as
	// the read-only sandbox keeps commands from doing.
	ReadOnly bool
}

// Sandbox confines commands.
type Sandbox interface {
	// Wrap returns the command line that runs argv confined.
	Wrap(argv []string) []string
	// Note says what confined commands may do, for the model: in Bash's
	// description, and after a command the sandbox may have stopped.
	Note() string
	// Denied reports whether a failed command's output looks like the
	// sandbox stopped it.
	Denied(output string) bool
}

func (o *Options) setDefaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.ReadMaxLines, 2000)
	def(&o.ReadMaxBytes, 256<<10)
	def(&o.MaxLineLength, 2000)
	def(&o.LSMaxEntries, 500)
	def(&o.GrepMaxMatches, 100)
	def(&o.BashMaxOutput, 30000)
	def(&o.DiffLines, 60)
	if o.GrepMaxFileSize <= 0 {
		o.GrepMaxFileSize = 8 << 20
	}
	if o.BashTimeout <= 0 {
		o.BashTimeout = 120 * time.Second
	}
	if o.BashMaxTimeout <= 0 {
		o.BashMaxTimeout = 600 * time.Second
	}
	if o.BashTimeout > o.BashMaxTimeout {
		o.BashTimeout = o.BashMaxTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Env == nil {
		o.Env, _ = secret.Env(os.Environ(), nil)
	}
}

// Set is the workspace tools of one agent session. It holds the open
// workspace root, the mtime each file had when the agent last saw it, and
// the todo list. Its methods are safe for concurrent use, so parallel tool
// calls may run at once; file changes are serialized.
type Set struct {
	dir   string   // the workspace, absolute
	real  string   // dir with symlinks resolved
	root  *os.Root // every file tool goes through it
	opts  Options
	tools []tool
	index map[string]int

	mu   sync.Mutex
	seen map[string]stamp // by workspace-relative slash path
	// noticed is the change of each file Changed last announced.
	noticed map[string]stamp
	todos   []Todo
	spill   *Set // the read-only Set on opts.SpillDir, once it exists
	// prefix is the absolute slash path results name files under, in the
	// spill folder's Set; empty in the workspace's.
	prefix string
	// denied are the commands the sandbox may have stopped.
	denied []string

	// writeMu serializes file changes; Read holds it shared so that the
	// stamp it records is never older than a concurrent write's.
	writeMu sync.RWMutex
}

// tool is one tool of a Set: its schema and how to run it.
type tool struct {
	name, desc string
	schema     json.RawMessage
	required   []string
	run        func(ctx context.Context, input json.RawMessage) Result
}

// New returns the tools confined to workspace, which must be an existing
// directory. Close the Set when done.
func New(workspace string, opts Options) (*Set, error) {
	opts.setDefaults()
	dir, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w", workspace, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w", workspace, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w", workspace, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("tools: workspace %q is not a directory", workspace)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w", workspace, err)
	}
	s := &Set{dir: dir, real: real, root: root, opts: opts, seen: map[string]stamp{}, index: map[string]int{}}
	s.tools = []tool{
		{name: NameRead, run: s.read},
		{name: NameWrite, run: s.write},
		{name: NameEdit, run: s.edit},
		{name: NameMultiEdit, run: s.multiEdit},
		{name: NameLS, run: s.ls},
		{name: NameGrep, run: s.grep},
		{name: NameBash, run: s.bash},
		{name: NameTodoWrite, run: s.todoWrite},
	}
	for i := range s.tools {
		t := &s.tools[i]
		sc := schemaFor(t.name, &s.opts)
		t.desc, t.schema, t.required = sc.desc, sc.schema, sc.required
		s.index[t.name] = i
	}
	return s, nil
}

// SandboxDenials lists the commands that failed in a way the sandbox
// causes ("Permission denied"), in the order they ran.
func (s *Set) SandboxDenials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.denied)
}

// Close releases the workspace root.
func (s *Set) Close() error {
	s.mu.Lock()
	sub := s.spill
	s.mu.Unlock()
	if sub != nil {
		sub.Close()
	}
	return s.root.Close()
}

// Workspace is the workspace directory, absolute.
func (s *Set) Workspace() string { return s.dir }

// Names lists the tools in the order Schemas gives them.
func (s *Set) Names() []string {
	names := make([]string, len(s.tools))
	for i, t := range s.tools {
		names[i] = t.name
	}
	return names
}

// Schemas returns the tools as the provider is told about them, in a fixed
// order with deterministic bytes (same options, same schemas).
func (s *Set) Schemas() []conv.Tool {
	out := make([]conv.Tool, len(s.tools))
	for i, t := range s.tools {
		out[i] = conv.Tool{Name: t.name, Description: t.desc, InputSchema: append(json.RawMessage(nil), t.schema...)}
	}
	return out
}

// Run runs tool name with the model's input. It never panics and never
// returns a Go error: every failure (unknown tool, input that is not a JSON
// object, a missing required field, a path outside the workspace, a
// cancelled ctx) is a Result with StatusError and a message the model can
// act on.
func (s *Set) Run(ctx context.Context, name string, input json.RawMessage) (res Result) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("tool panicked", "tool", name, "panic", p, "stack", string(debug.Stack()))
			res = failf(nil, "internal error in tool %s: %v", name, p)
		}
		if s.opts.Redact != nil {
			res.redact(s.opts.Redact)
		}
		res.measure()
		res.Stats.DurationMS = time.Since(start).Milliseconds()
		s.opts.Logger.Debug("tool call", "tool", name, "status", res.Status, "bytes", res.Stats.Bytes, "duration_ms", res.Stats.DurationMS)
	}()
	i, ok := s.index[name]
	if !ok {
		return failf(nil, "unknown tool %q; the tools are %s", name, strings.Join(s.Names(), ", "))
	}
	t := &s.tools[i]
	if err := ctx.Err(); err != nil {
		return failf(nil, "%s not run: %v", name, context.Cause(ctx))
	}
	input, err := checkInput(input, t.required)
	if err != nil {
		return failf(nil, "invalid input for %s: %v", name, err)
	}
	if s.opts.ReadOnly && (name == NameWrite || name == NameEdit || name == NameMultiEdit) {
		return failf(nil, "%s not run: the sandbox is read-only, so no file may be changed; say what you would change instead", name)
	}
	return t.run(ctx, input)
}

// checkInput makes sure input is a JSON object holding every required
// field; an absent input counts as {}.
func checkInput(input json.RawMessage, required []string) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(input))) == 0 || strings.TrimSpace(string(input)) == "null" {
		input = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("input must be a JSON object, got %s", te.Value)
		}
		return nil, fmt.Errorf("input is not valid JSON: %v", err)
	}
	var missing []string
	for _, k := range required {
		if v, ok := fields[k]; !ok || string(v) == "null" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing required field %s", strings.Join(quoteAll(missing), ", "))
	}
	return input, nil
}

// decode unmarshals a checked input into dst, turning type errors into a
// message naming the field.
func decode(input json.RawMessage, dst any) error {
	err := json.Unmarshal(input, dst)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %q must be %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return err
}

func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"):
		return "an integer"
	case strings.HasPrefix(goKind, "float"):
		return "a number"
	case goKind == "bool":
		return "true or false"
	case goKind == "string":
		return "a string"
	case goKind == "slice":
		return "an array"
	default:
		return "an object"
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// runTool is the shape every tool body has: decode the input into I, then
// act. It keeps decoding errors uniform.
func runTool[I any](name string, input json.RawMessage, fn func(*I) Result) Result {
	var in I
	if err := decode(input, &in); err != nil {
		return failf(nil, "invalid input for %s: %v", name, err)
	}
	return fn(&in)
}
