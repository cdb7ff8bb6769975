package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/jsonerr"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/openai"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/outfile"
	"github.com/ctxkit/ctxkit/permission"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/sandbox"
	"github.com/ctxkit/ctxkit/secret"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
	"github.com/ctxkit/ctxkit/trust"
)

// agentOptions are the settings of ctxkit agent, from flags, the
// environment and the config files, in that order of precedence.
type agentOptions struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	BaseURL    string `json:"base_url"`
	Window     int    `json:"window"`
	MaxTokens  int    `json:"max_tokens"`
	MaxTurns   int    `json:"max_turns"`
	Summarizer string `json:"summarizer"`
	Policy     string `json:"policy"`
	// KeepValue is the engine's knob between cost and recall (0: its
	// default).
	KeepValue float64 `json:"keep_value"`
	// EnvAllow names secret-looking environment variables the agent's
	// commands may still see; PermissionMode and Permissions are the
	// permission settings (permission.go).
	EnvAllow       []string         `json:"env_allow"`
	PermissionMode string           `json:"permission_mode"`
	Permissions    permission.Rules `json:"permissions"`
	// Sandbox is the sandbox mode of the agent's commands, SandboxNetwork
	// lets them use the network, SandboxWrite names more folders they may
	// write in (agent_sandbox.go).
	Sandbox        string   `json:"sandbox"`
	SandboxNetwork bool     `json:"-"`
	SandboxWrite   []string `json:"sandbox_write"`

	// trust trusts the workspace's .ctxkit.json (--trust); trusted says
	// it is trusted, refused lists the settings it tried to make while
	// it was not, and base is the settings before any config file, to
	// load them again once the user trusts the workspace.
	// checker decides tool calls (from PermissionMode and Permissions);
	// ask asks the user about a call, nil where nobody can be asked.
	checker *permission.Checker
	ask     permission.Prompter

	// sandboxMode and abi (the kernel's Landlock ABI, from landlockABI
	// when set, for tests) are worked out by checkSandbox, and
	// sandboxNote says why commands are asked about when the sandbox
	// cannot be had.
	sandboxWrite []string // SandboxWrite, absolute
	sandboxMode  sandbox.Mode
	abi          int
	landlockABI  func() int
	sandboxNote  string

	trust   bool
	trusted bool
	refused []string
	base    *agentOptions

	workspace    string
	resume       string
	cont         bool
	prompt       string
	outputFormat string
}

// Defaults of the agent's settings.
const (
	defaultProvider       = "anthropic"
	defaultAnthropicModel = "claude-sonnet-4-5"
	defaultOpenAIModel    = "gpt-4.1"
)

// agentEnv maps each setting to the environment variable that sets it.
var agentEnv = []struct{ key, env, doc string }{
	{"provider", "CTXKIT_PROVIDER", "default for --provider"},
	{"model", "CTXKIT_MODEL", "default for --model"},
	{"base_url", "CTXKIT_BASE_URL", "default for --base-url"},
	{"window", "CTXKIT_WINDOW", "default for --window"},
	{"max_tokens", "CTXKIT_MAX_TOKENS", "default for --max-tokens"},
	{"max_turns", "CTXKIT_MAX_TURNS", "default for --max-turns"},
	{"summarizer", "CTXKIT_SUMMARIZER", "default for --summarizer"},
	{"policy", "CTXKIT_POLICY", "default for --policy"},
	{"keep_value", "CTXKIT_KEEP_VALUE", "default for --keep-value"},
	{"permission_mode", "CTXKIT_PERMISSION_MODE", "default for --permission-mode"},
	{"sandbox", "CTXKIT_SANDBOX", "default for --sandbox"},
}

// configKeys are the keys a config file may hold, beyond agentEnv's.
var configKeys = []string{"env_allow", "permissions", "sandbox_write", trust.Key}

func newAgentCmd() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent [-p PROMPT]",
		Short: "Run the coding agent in a workspace: an interactive session, or one task with -p",
		Long: `agent runs ctxkit's coding agent in a workspace (the current directory by
default). Without -p it is an interactive session: type a task, watch the
model work (its text streams; tool calls and compactions show as they run),
and type the next one. Ctrl-C stops the running turn and returns to the
prompt; a second Ctrl-C at an empty prompt exits, as does /exit or Ctrl-D.
A line ending with \ (or Alt-Enter) goes on to another line of the same
message, and a paste is one message however many lines it has.
With -p it runs one task to completion without a terminal and prints the
result (--output-format json prints one JSON object with result, session_id,
turns, usage and compactions).

The agent reads, searches, edits and writes files inside the workspace and
runs shell commands there (Read, Write, Edit, MultiEdit, LS, Grep, Bash,
TodoWrite), and can read back any cleared or summarized content (recall) or
compact its own context (compact). Its context is kept within the window by
ctxkit: results of finished rounds are compressed, consumed results cleared
to one-line placeholders, and old turns summarized when the context crosses
the compaction threshold.

Commands in the interactive session:
  /compact [FOCUS]         summarize earlier turns now, keeping FOCUS in detail
  /context                 show what fills the context window, by category
  /clear [--keep-summary]  start a new session (carrying the summary over)
  /continue                go on with a turn that was interrupted
  /sessions                list recent sessions
  /resume [ID]             switch to another session (default: the previous one)
  /help                    list the commands
  /exit                    leave (also /quit, Ctrl-D)

Sessions are kept in $CTXKIT_HOME/sessions/<id>/ (default ~/.ctxkit): the
transcript of every message as first produced, every compaction, and spilled
outputs. --resume ID continues one exactly where it stopped, after a crash
too. ctxkit recall --session ID reads cleared content back.

Environment:
  ANTHROPIC_API_KEY    API key for --provider anthropic (required)
  OPENAI_API_KEY       API key for --provider openai (optional with a --base-url
                       other than OpenAI's: local servers need none)
  CTXKIT_PROVIDER, CTXKIT_MODEL, CTXKIT_BASE_URL, CTXKIT_WINDOW,
  CTXKIT_MAX_TOKENS, CTXKIT_MAX_TURNS, CTXKIT_SUMMARIZER, CTXKIT_POLICY,
  CTXKIT_KEEP_VALUE, CTXKIT_PERMISSION_MODE, CTXKIT_SANDBOX
                       defaults for the flags of the same names
  CTXKIT_HOME          folder for sessions, config.json and the input history
                       (default ~/.ctxkit)
  ANTHROPIC_BASE_URL, OPENAI_BASE_URL
                       the provider's own endpoint override, used when no
                       --base-url is set

Config files (JSON, optional): $CTXKIT_HOME/config.json, then .ctxkit.json in
the workspace, which wins. Keys: provider, model, base_url, window,
max_tokens, max_turns, summarizer, policy, keep_value, permission_mode,
permissions ({"allow": [...], "deny": [...]}), env_allow, sandbox,
sandbox_write. Flags win over the environment, the environment over the
config files.

Trust: anyone can put a .ctxkit.json in a repository, so the settings that
decide where your API key is sent or what runs without asking (provider,
base_url, headers, proxy, permission_mode, permissions, env_allow, sandbox,
sandbox_write) are taken
from a workspace's file only once you trust that workspace: with --trust, or
by answering yes when the interactive session asks. The answer is kept in
$CTXKIT_HOME/config.json under trusted_workspaces, by absolute path.

API keys are read from the environment only: they are never taken from a
config file, logged or written, and the agent's commands run without them
(see ctxkit agent's Bash section in the README).

Sandbox: the agent's shell commands run under Linux's Landlock. With
--sandbox workspace-write (the default) they read anything but ~/.ssh,
~/.gnupg, ~/.aws, ~/.netrc and the ctxkit home, write only in the workspace
and the session's temporary folder ($TMPDIR), and cannot open TCP
connections unless --sandbox-network is given; read-only writes nowhere;
off confines nothing. A kernel without Landlock cannot sandbox: commands
are then asked about in every permission mode. The banner and /context say
which sandbox is in force (see docs/sandbox.md).`,
		Example: `  ctxkit agent
  ctxkit agent -p "Fix the failing test in ./parser" --output-format json
  ctxkit agent --provider openai --base-url http://localhost:11434/v1 --model qwen3-coder --window 32768
  ctxkit agent --resume 20260105-150405-123456-9f3a1c2e`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.resolve(cmd); err != nil {
				return err
			}
			if cmd.Flags().Changed("print") || o.prompt != "" {
				return runOneShot(cmd, o)
			}
			return runREPL(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Provider, "provider", "", `model provider: anthropic or openai (any OpenAI-compatible server) (default "anthropic")`)
	f.StringVar(&o.Model, "model", "", `model name (default "`+defaultAnthropicModel+`" for anthropic, "`+defaultOpenAIModel+`" for openai)`)
	f.StringVar(&o.BaseURL, "base-url", "", "API endpoint, e.g. http://localhost:11434/v1 for Ollama (default: the provider's)")
	f.StringVar(&o.workspace, "workspace", "", "folder the agent works in (default: the current directory)")
	windowVar(f, &o.Window, 0, "context window in tokens (default: the model's, 128000 for unknown models); a smaller one compacts earlier")
	f.IntVar(&o.MaxTokens, "max-tokens", 0, "largest response in tokens (default: the model's output limit, at most 32000)")
	f.IntVar(&o.MaxTurns, "max-turns", 0, "stop a task after this many model responses (default 0: no limit)")
	f.StringVar(&o.Summarizer, "summarizer", "", `how compaction summarizes: llm (the same model) or extractive (offline, no model call) (default "llm")`)
	f.StringVar(&o.Policy, "policy", "", `when consumed tool results are cleared: cache-aware, eager or batched (default "cache-aware")`)
	keepValueVar(f, &o.KeepValue)
	f.StringVar(&o.resume, "resume", "", "continue the session with this id (a unique prefix will do, or a session folder)")
	f.BoolVarP(&o.cont, "continue", "c", false, "continue the most recent session")
	f.StringVarP(&o.prompt, "print", "p", "", `run this task to completion, print the result and exit ("-" reads the task from standard input)`)
	f.StringVar(&o.PermissionMode, "permission-mode", "", `what the agent may do unasked: ask (reads only), accept-edits (also file changes), plan (reads only, nothing else even asked) or bypass (everything) (default "ask"; with -p what needs asking is refused)`)
	addSandboxFlags(f, &o)
	f.BoolVar(&o.trust, "trust", false, "trust the workspace's .ctxkit.json, so it may set the provider, base URL and permissions (remembered in $CTXKIT_HOME/config.json)")
	f.StringVar(&o.outputFormat, "output-format", "text", "with -p: text (the final answer) or json (one object with result, session_id, turns, usage, compactions)")
	return cmd
}

// resolve fills the settings the flags left unset from the environment,
// then the config files, then the defaults, and checks them.
func (o *agentOptions) resolve(cmd *cobra.Command) error {
	if o.workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		o.workspace = wd
	}
	ws, err := filepath.Abs(o.workspace)
	if err != nil {
		return err
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return fmt.Errorf("agent: --workspace %s is not a folder", o.workspace)
	}
	o.workspace = ws

	set := func(flag string) bool { return cmd.Flags().Changed(flag) }
	flagOf := map[string]string{"base_url": "base-url", "max_tokens": "max-tokens", "max_turns": "max-turns", "permission_mode": "permission-mode", "keep_value": "keep-value"}
	for _, e := range agentEnv {
		flag := e.key
		if f, ok := flagOf[e.key]; ok {
			flag = f
		}
		v, ok := os.LookupEnv(e.env)
		if set(flag) || !ok || v == "" {
			continue
		}
		if err := o.setKey(e.key, v); err != nil {
			return fmt.Errorf("agent: %s: %w", e.env, err)
		}
	}
	store, err := trustStore()
	if err != nil {
		return err
	}
	if o.trust {
		if err := store.Add(o.workspace); err != nil {
			return fmt.Errorf("agent: --trust: %w", err)
		}
	}
	if o.trusted, err = store.Trusted(o.workspace); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	base := *o
	o.base = &base
	if err := o.loadConfigs(); err != nil {
		return err
	}
	return o.check()
}

// loadConfigs fills unset settings from the workspace's .ctxkit.json, then
// from the user's config.json: the workspace's file wins, except for the
// settings an untrusted workspace may not make (trust.Guarded), which it
// lists in o.refused.
func (o *agentOptions) loadConfigs() error {
	store, err := trustStore()
	if err != nil {
		return err
	}
	o.refused = nil
	if err := o.loadFile(filepath.Join(o.workspace, workspaceConfig), !o.trusted); err != nil {
		return err
	}
	return o.loadFile(store.Path, false)
}

// retrust loads the config files again once the user has trusted the
// workspace.
func (o *agentOptions) retrust() error {
	n := *o.base
	n.base, n.trusted = o.base, true
	if err := n.loadConfigs(); err != nil {
		return err
	}
	if err := n.check(); err != nil {
		return err
	}
	*o = n
	return nil
}

// refusedNote says which settings of an untrusted workspace were ignored.
func (o *agentOptions) refusedNote() string {
	return fmt.Sprintf("%s sets %s, which decide%s where your API key is sent or what runs unasked; ignored because this workspace is not trusted. Run ctxkit agent --trust in it to trust it.",
		filepath.Join(o.workspace, workspaceConfig), strings.Join(o.refused, ", "), map[bool]string{true: "s", false: ""}[len(o.refused) == 1])
}

// workspaceConfig is the name of a workspace's config file.
const workspaceConfig = ".ctxkit.json"

// trustStore is the user's config file, which lists trusted workspaces.
func trustStore() (trust.Store, error) {
	home, err := ctxkitHome()
	if err != nil {
		return trust.Store{}, err
	}
	return trust.Store{Path: filepath.Join(home, "config.json")}, nil
}

// check fills the defaults and checks the settings.
func (o *agentOptions) check() error {
	if o.Provider == "" {
		o.Provider = defaultProvider
	}
	switch o.Provider {
	case "anthropic":
		if o.Model == "" {
			o.Model = defaultAnthropicModel
		}
	case "openai":
		if o.Model == "" {
			o.Model = defaultOpenAIModel
		}
	default:
		return fmt.Errorf("agent: unknown provider %q (known: anthropic, openai)", o.Provider)
	}
	if o.Summarizer == "" {
		o.Summarizer = "llm"
	}
	if o.Summarizer != "llm" && o.Summarizer != "extractive" {
		return fmt.Errorf("agent: unknown summarizer %q (known: llm, extractive)", o.Summarizer)
	}
	if o.Policy == "" {
		o.Policy = "cache-aware"
	}
	if _, err := micro.ByName(o.Policy, pricing.Anthropic()); err != nil {
		return fmt.Errorf("agent: %w (known: cache-aware, eager, batched)", err)
	}
	mode, err := permission.ParseMode(o.PermissionMode)
	if err != nil {
		return fmt.Errorf("agent: --permission-mode: %w", err)
	}
	if o.checker, err = permission.New(mode, o.Permissions); err != nil {
		return fmt.Errorf("agent: permissions: %w", err)
	}
	if err := o.checkSandbox(); err != nil {
		return err
	}
	if err := checkURL("base URL", o.BaseURL); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"max-tokens", o.MaxTokens}, {"max-turns", o.MaxTurns}} {
		if err := checkNonNegative(f.name, f.v); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	if o.Window != 0 {
		// From the config file or CTXKIT_WINDOW: the flag's own check.
		if _, err := engine.ParseWindow(strconv.Itoa(o.Window)); err != nil {
			return fmt.Errorf("agent: window: %w", err)
		}
	}
	if o.Window > 0 && o.Window < 4096 {
		return fmt.Errorf("agent: --window %d is too small: the tool definitions alone take about 3,000 tokens", o.Window)
	}
	if o.cont {
		if o.resume != "" {
			return errors.New("agent: give --resume ID or --continue, not both")
		}
		id, err := latestSession()
		if err != nil {
			return err
		}
		o.resume = id
	}
	switch o.outputFormat {
	case "text", "json":
	default:
		return fmt.Errorf("agent: unknown --output-format %q (known: text, json)", o.outputFormat)
	}
	return nil
}

func (o *agentOptions) setKey(key, v string) error {
	num := func(p *int) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a non-negative number", v)
		}
		*p = n
		return nil
	}
	switch key {
	case "provider":
		o.Provider = v
	case "model":
		o.Model = v
	case "base_url":
		o.BaseURL = v
	case "window":
		return num(&o.Window)
	case "max_tokens":
		return num(&o.MaxTokens)
	case "max_turns":
		return num(&o.MaxTurns)
	case "summarizer":
		o.Summarizer = v
	case "policy":
		o.Policy = v
	case "keep_value":
		return keepValueFlag{&o.KeepValue}.Set(v)
	case "permission_mode":
		o.PermissionMode = v
	case "sandbox":
		o.Sandbox = v
	}
	return nil
}

// loadConfig fills unset settings from the user's JSON config file at
// path, if there is one.
func (o *agentOptions) loadConfig(path string) error { return o.loadFile(path, false) }

// loadFile fills unset settings from the JSON config file at path, if there
// is one. With untrusted, settings trust.Guarded names are not taken but
// listed in o.refused.
func (o *agentOptions) loadFile(path string, untrusted bool) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("agent: config: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("agent: config %s: %s", path, jsonerr.Describe(data, err, "a JSON object"))
	}
	known := map[string]bool{}
	var names []string
	for _, e := range agentEnv {
		known[e.key] = true
		names = append(names, e.key)
	}
	for _, k := range configKeys {
		known[k] = true
		names = append(names, k)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "key") || strings.Contains(lk, "token") && k != "max_tokens" || strings.Contains(lk, "secret") || strings.Contains(lk, "password") {
			return fmt.Errorf("agent: config %s: %q: API keys are read from the environment only (ANTHROPIC_API_KEY, OPENAI_API_KEY); remove it from the file", path, k)
		}
		if untrusted && trust.Guarded(k) {
			o.refused = append(o.refused, k)
			delete(raw, k)
			continue
		}
		if !known[k] {
			return fmt.Errorf("agent: config %s: unknown key %q (known: %s)", path, k, strings.Join(names, ", "))
		}
	}
	var c agentOptions
	for _, k := range keys {
		v, ok := raw[k]
		if !ok || k == trust.Key {
			continue
		}
		if err := decodeSetting(k, v, &c); err != nil {
			return fmt.Errorf("agent: config %s: %w", path, err)
		}
	}
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fillN := func(dst *int, v int) {
		if *dst == 0 {
			*dst = v
		}
	}
	fill(&o.Provider, c.Provider)
	fill(&o.Model, c.Model)
	fill(&o.BaseURL, c.BaseURL)
	fill(&o.Summarizer, c.Summarizer)
	fill(&o.Policy, c.Policy)
	fill(&o.PermissionMode, c.PermissionMode)
	fill(&o.Sandbox, c.Sandbox)
	fillN(&o.Window, c.Window)
	fillN(&o.MaxTokens, c.MaxTokens)
	fillN(&o.MaxTurns, c.MaxTurns)
	if o.KeepValue == 0 {
		o.KeepValue = c.KeepValue
	}
	if o.EnvAllow == nil {
		o.EnvAllow = c.EnvAllow
	}
	if o.SandboxWrite == nil {
		o.SandboxWrite = c.SandboxWrite
	}
	o.Permissions.Allow = append(o.Permissions.Allow, c.Permissions.Allow...)
	o.Permissions.Deny = append(o.Permissions.Deny, c.Permissions.Deny...)
	return nil
}

// decodeSetting decodes one config setting into c, with a message that
// names the setting and what it should be.
func decodeSetting(key string, v json.RawMessage, c *agentOptions) error {
	var dst any
	want := "a string"
	switch key {
	case "provider":
		dst = &c.Provider
	case "model":
		dst = &c.Model
	case "base_url":
		dst = &c.BaseURL
	case "summarizer":
		dst = &c.Summarizer
	case "policy":
		dst = &c.Policy
	case "keep_value":
		dst, want = &c.KeepValue, "a number"
	case "permission_mode":
		dst = &c.PermissionMode
	case "sandbox":
		dst = &c.Sandbox
	case "window":
		dst, want = &c.Window, "a whole number of tokens"
	case "max_tokens":
		dst, want = &c.MaxTokens, "a whole number of tokens"
	case "max_turns":
		dst, want = &c.MaxTurns, "a whole number"
	case "sandbox_write":
		dst, want = &c.SandboxWrite, "a list of folders"
	case "env_allow":
		dst, want = &c.EnvAllow, "a list of variable names"
	case "permissions":
		dst, want = &c.Permissions, `an object {"allow": [...], "deny": [...]} of rules like "Bash(go test:*)"`
	default:
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%q must be %s, got %s", key, want, clip(string(v), 40))
	}
	return nil
}

// clip shortens s for a message.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ctxkitHome is $CTXKIT_HOME, else ~/.ctxkit.
func ctxkitHome() (string, error) {
	if h := os.Getenv("CTXKIT_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("agent: no home folder for ~/.ctxkit: %w (set CTXKIT_HOME)", err)
	}
	return filepath.Join(home, ".ctxkit"), nil
}

func sessionsDir() (string, error) {
	home, err := ctxkitHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "sessions"), nil
}

// latestSession is the id of the most recent session.
func latestSession() (string, error) {
	root, err := sessionsDir()
	if err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(root)
	for i := len(entries) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(root, entries[i].Name(), transcript.FileName)); err == nil {
			return entries[i].Name(), nil
		}
	}
	return "", fmt.Errorf("agent: --continue: no session in %s yet", root)
}

// agentSession is one open session: its transcript, tools, provider and
// agent.
type agentSession struct {
	id    string
	dir   string
	store *transcript.Store
	tools *tools.Set
	agent *agent.Agent
	guard *permission.Guard
	log   *os.File
	// sandbox confines the session's commands (nil: none); tmp is its
	// temporary folder, removed with the session.
	sandbox *sandbox.Sandbox
	tmp     string
	// created is true for a session this process started.
	created bool
}

func (s *agentSession) close() {
	if s == nil {
		return
	}
	empty := s.created && len(s.store.Conversation().Messages) == 0
	if !empty {
		s.saveStamps()
	}
	s.tools.Close()
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
	s.store.Close()
	if s.log != nil {
		s.log.Close()
	}
	if empty {
		// Nothing happened in it (the input ended at once): leave no
		// empty session behind.
		os.RemoveAll(s.dir)
	}
}

// stampsFile holds, in a session's folder, what the agent last saw of
// each file it read or wrote (tools.FileStamp), so that a resumed session
// notices the files changed in between.
const stampsFile = "files.json"

// saveStamps records the file stamps in the session's folder.
func (s *agentSession) saveStamps() {
	data, err := json.Marshal(s.tools.Stamps())
	if err == nil {
		err = outfile.Write(filepath.Join(s.dir, stampsFile), data, outfile.Options{})
	}
	if err != nil && s.log != nil {
		fmt.Fprintf(s.log, "saving the file stamps: %v\n", err)
	}
}

// restoreStamps takes the file stamps an earlier run of the session saved.
func (s *agentSession) restoreStamps() {
	data, err := os.ReadFile(filepath.Join(s.dir, stampsFile))
	if err != nil {
		return
	}
	var stamps []tools.FileStamp
	if json.Unmarshal(data, &stamps) == nil {
		s.tools.RestoreStamps(stamps)
	}
}

// openSession starts a new session (id empty) or resumes the session id
// (an id under the sessions folder, or a session folder).
func openSession(ctx context.Context, o agentOptions, id string, carry []conv.Block, onEvent func(agent.Event)) (*agentSession, error) {
	root, err := sessionsDir()
	if err != nil {
		return nil, err
	}
	// A provider that cannot be made (no key) must not leave an empty
	// session behind: try it before the session folder exists.
	if _, _, err := newProvider(o, "", slog.New(slog.DiscardHandler)); err != nil {
		return nil, err
	}
	var st *transcript.Store
	isNew := id == ""
	if isNew {
		id = transcript.NewSessionID()
		st, err = transcript.Create(filepath.Join(root, id))
	} else {
		dir := id
		if _, serr := os.Stat(filepath.Join(dir, transcript.FileName)); serr != nil {
			dir = findSession(root, id)
		}
		st, err = transcript.Open(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("agent: no session %q in %s (/sessions lists them)", id, root)
		}
		if errors.Is(err, transcript.ErrLocked) {
			return nil, fmt.Errorf("agent: session %s is open in another ctxkit", id)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	s := &agentSession{id: st.ID(), dir: st.Dir(), store: st, created: isNew}
	if s.id == "" {
		s.id = filepath.Base(st.Dir())
	}
	if f, err := os.OpenFile(filepath.Join(st.Dir(), "agent.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
		s.log = f
	}
	// Keys never reach the disk or the model: the agent's commands run
	// without them, and any value that shows up anyway is redacted.
	redact := secret.FromEnv(os.Environ())
	logger := slog.New(slog.DiscardHandler)
	if s.log != nil {
		logger = slog.New(slog.NewTextHandler(redact.Writer(s.log), &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	fail := func(err error) (*agentSession, error) {
		if s.tmp != "" {
			os.RemoveAll(s.tmp)
		}
		s.store.Close()
		if s.log != nil {
			s.log.Close()
		}
		return nil, err
	}
	prov, table, err := newProvider(o, st.Dir(), logger)
	if err != nil {
		return fail(err)
	}
	env, _ := secret.Env(os.Environ(), o.EnvAllow)
	topts := tools.Options{Logger: logger, Env: env, Redact: redact.String, ReadOnly: o.sandboxMode == sandbox.ReadOnly,
		SpillDir: filepath.Join(st.Dir(), transcript.SpillDir)}
	if s.sandbox, s.tmp, err = o.openSandbox(s.id); err != nil {
		return fail(err)
	}
	if s.sandbox != nil {
		topts.Sandbox = s.sandbox
		if s.tmp != "" {
			topts.BashEnv = []string{"TMPDIR=" + s.tmp}
		}
	}
	ts, err := tools.New(o.workspace, topts)
	if err != nil {
		return fail(fmt.Errorf("agent: %w", err))
	}
	s.tools = ts
	s.restoreStamps()
	s.guard = &permission.Guard{Runner: ts, Checker: o.checker, Ask: o.ask}
	policy, err := micro.ByName(o.Policy, table)
	if err != nil {
		ts.Close()
		return fail(fmt.Errorf("agent: %w (known: cache-aware, eager, batched)", err))
	}
	cfg := agent.Config{
		Provider: prov, Model: o.Model, Window: o.Window, MaxTokens: o.MaxTokens, Pricing: table, KeepValue: o.KeepValue,
		Tools: s.guard, Store: redactStore{st, redact}, Workspace: o.workspace,
		Carry: carry, Changes: ts, MaxSteps: o.MaxTurns, OnEvent: onEvent, Logger: logger,
	}
	cfg.Policy = policy
	if o.Summarizer == "extractive" {
		cfg.Summarizer = summarize.NewExtractive()
	}
	a, err := agent.New(ctx, cfg)
	if err != nil {
		ts.Close()
		return fail(err)
	}
	s.agent = a
	for _, w := range st.Warnings() {
		onEvent(agent.Event{Kind: agent.EventWarning, Text: "transcript: " + w})
	}
	return s, nil
}

// findSession resolves a session id, or a unique prefix of one, under
// root.
func findSession(root, id string) string {
	if _, err := os.Stat(filepath.Join(root, id, transcript.FileName)); err == nil {
		return filepath.Join(root, id)
	}
	entries, _ := os.ReadDir(root)
	var match string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), id) {
			if match != "" {
				return filepath.Join(root, id) // ambiguous: let Open fail
			}
			match = e.Name()
		}
	}
	if match == "" {
		return filepath.Join(root, id)
	}
	return filepath.Join(root, match)
}

// newProvider makes the provider the options name. Keys come from the
// environment only, read by the provider packages.
func newProvider(o agentOptions, sessionDir string, logger *slog.Logger) (agent.Provider, pricing.Table, error) {
	switch o.Provider {
	case "openai":
		opts := []openai.Option{openai.WithLogger(logger)}
		if sessionDir != "" {
			opts = append(opts, openai.WithBadRequestDir(sessionDir))
		}
		if o.BaseURL != "" {
			opts = append(opts, openai.WithBaseURL(o.BaseURL))
		}
		p, err := openai.New(o.Model, opts...)
		if errors.Is(err, llm.ErrMissingKey) {
			return nil, pricing.Table{}, fmt.Errorf("agent: %s is not set; export it, or give --base-url for a local OpenAI-compatible server that needs no key", openai.KeyEnv)
		}
		if err != nil {
			return nil, pricing.Table{}, fmt.Errorf("agent: %w", err)
		}
		return p, priceTable(o.Provider), nil
	default:
		opts := []anthropic.Option{anthropic.WithLogger(logger)}
		if sessionDir != "" {
			opts = append(opts, anthropic.WithBadRequestDir(sessionDir))
		}
		if o.BaseURL != "" {
			opts = append(opts, anthropic.WithBaseURL(o.BaseURL))
		}
		p, err := anthropic.New(o.Model, opts...)
		if errors.Is(err, llm.ErrMissingKey) {
			return nil, pricing.Table{}, fmt.Errorf("agent: %s is not set; export it, or use --provider openai --base-url URL for an OpenAI-compatible server", anthropic.KeyEnv)
		}
		if err != nil {
			return nil, pricing.Table{}, fmt.Errorf("agent: %w", err)
		}
		return p, priceTable(o.Provider), nil
	}
}

// oneShotResult is what -p --output-format json prints.
type oneShotResult struct {
	Type        string    `json:"type"`
	Subtype     string    `json:"subtype"`
	IsError     bool      `json:"is_error"`
	Result      string    `json:"result"`
	Error       string    `json:"error,omitempty"`
	SessionID   string    `json:"session_id"`
	Turns       int       `json:"turns"`
	Usage       llm.Usage `json:"usage"`
	Compactions int       `json:"compactions"`
	StopReason  string    `json:"stop_reason,omitempty"`
	// PermissionDenials are the tool calls refused because nobody could
	// approve them (or a rule or the mode forbids them).
	PermissionDenials []string `json:"permission_denials,omitempty"`
	// Sandbox is the sandbox in force; SandboxDenials the commands that
	// failed as the sandbox makes them fail ("Permission denied").
	Sandbox        string   `json:"sandbox"`
	SandboxDenials []string `json:"sandbox_denials,omitempty"`
	DurationMS     int64    `json:"duration_ms"`
	CostUSD        float64  `json:"cost_usd"`
}

// runOneShot runs -p: one task to completion, then the result.
func runOneShot(cmd *cobra.Command, o agentOptions) error {
	ctx := cmd.Context()
	prompt := o.prompt
	if prompt == "-" {
		data, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return fmt.Errorf("agent: reading the task from standard input: %w", err)
		}
		prompt = string(data)
	}
	if strings.TrimSpace(prompt) == "" && o.resume == "" {
		return errors.New("agent: -p needs a task")
	}
	// On a terminal, tool calls and compactions show on stderr as they
	// happen, with a spinner; otherwise only warnings do.
	stderr := cmd.ErrOrStderr()
	term := isTerminal(stderr)
	progress := io.Discard
	if term {
		progress = stderr
	}
	u := newUI(progress, stderr, term, term && os.Getenv("NO_COLOR") == "")
	u.noText = true
	defer u.close()
	if len(o.refused) > 0 {
		fmt.Fprintf(stderr, "ctxkit agent: %s\n", o.refusedNote())
	}
	if o.sandboxNote != "" {
		fmt.Fprintf(stderr, "ctxkit agent: %s\n", o.sandboxNote)
	}
	s, err := openSession(ctx, o, o.resume, nil, u.event)
	if err != nil {
		return err
	}
	defer s.close()
	start := time.Now()
	res, runErr := s.agent.Run(ctx, prompt)
	u.finish()
	table := priceTable(o.Provider)
	out := oneShotResult{
		Type: "result", Subtype: "success", Result: res.Text, SessionID: s.id,
		Turns: res.Turns, Usage: res.Usage, Compactions: res.Compactions, StopReason: res.StopReason,
		DurationMS: time.Since(start).Milliseconds(),
		CostUSD:    table.Cost(res.Usage.Input, res.Usage.CacheWrite, res.Usage.CacheRead, res.Usage.Output),
	}
	out.PermissionDenials = s.guard.Refused()
	out.Sandbox = s.sandboxStatus(o)
	out.SandboxDenials = s.tools.SandboxDenials()
	for _, d := range out.PermissionDenials {
		fmt.Fprintf(stderr, "ctxkit agent: refused %s: it needs approval; allow it with --permission-mode or an allow rule\n", d)
	}
	status := 0
	if runErr != nil {
		out.IsError, out.Subtype, out.Error = true, "error", runErr.Error()
		status = 1
		if errors.Is(runErr, agent.ErrInterrupted) {
			out.Subtype, status = "interrupted", 130
		}
		if errors.Is(runErr, agent.ErrMaxSteps) {
			out.Subtype = "error_max_turns"
		}
	}
	stdout := cmd.OutOrStdout()
	if o.outputFormat == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if runErr == nil {
		fmt.Fprintln(stdout, strings.TrimRight(res.Text, "\n"))
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "ctxkit agent: %v\n(session %s: resume with ctxkit agent --resume %s)\n", runErr, s.id, s.id)
		return exitError(status)
	}
	return nil
}

// priceTable is the price list of a provider.
func priceTable(provider string) pricing.Table {
	if provider == "openai" {
		return pricing.OpenAI()
	}
	return pricing.Anthropic()
}
