package discover

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/importer"
)

// Agent names, as Found.Agent reports them and Options.Agents takes them.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	GeminiCLI  = "gemini-cli"
	Cline      = "cline"
	RooCode    = "roo-code"
	KiloCode   = "kilo-code"
	Opencode   = "opencode"
)

// Agents lists the agents whose sessions Find looks for.
func Agents() []string {
	return []string{ClaudeCode, Codex, GeminiCLI, Cline, RooCode, KiloCode, Opencode}
}

// Env is where Find looks: the home directory, the environment (for the
// agents' own overrides) and the operating system (for VS Code's storage).
type Env struct {
	Home   string
	Getenv func(string) string
	GOOS   string
}

// Found is one recorded session.
type Found struct {
	Agent string `json:"agent"`
	// Path is what importer.Load takes: the file, or for a database
	// "opencode.db#<session id>".
	Path string `json:"path"`
	// Project is where the session's project lives as far as the layout
	// says (Claude Code's encoded folder name, Gemini CLI's project hash,
	// opencode's directory); the import knows better (Session.Cwd).
	Project  string    `json:"project"`
	Modified time.Time `json:"modified"`
	// Title is the session's title where the agent stores one.
	Title string `json:"title,omitempty"`
}

// Options filter what Find returns.
type Options struct {
	// Agents keeps only these agents (all when empty).
	Agents []string
	// Since keeps sessions modified at or after it (all when zero).
	Since time.Time
}

// Find lists the sessions recorded on this machine, newest first. A
// location that does not exist is no error: that agent is not installed.
func Find(ctx context.Context, env Env, opts Options) ([]Found, error) {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	var out []Found
	want := func(agent string) bool { return len(opts.Agents) == 0 || slices.Contains(opts.Agents, agent) }
	add := func(fs []Found) {
		for _, f := range fs {
			if want(f.Agent) && !f.Modified.Before(opts.Since) {
				out = append(out, f)
			}
		}
	}
	if want(ClaudeCode) {
		add(claudeCode(env))
	}
	if want(Codex) {
		add(codex(env))
	}
	if want(GeminiCLI) {
		add(gemini(env))
	}
	if want(Cline) || want(RooCode) || want(KiloCode) {
		add(vscodeTasks(env))
	}
	if want(Opencode) {
		found, err := opencode(ctx, env)
		if err != nil {
			return nil, err
		}
		add(found)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Found) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// files returns the files under root whose path relative to root matches
// keep, with the first path element of their folder below root.
func files(root string, keep func(rel string, d fs.DirEntry) bool) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable or absent: nothing there
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() || !keep(filepath.ToSlash(rel), d) {
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out
}

func found(agent, path, project string) Found {
	f := Found{Agent: agent, Path: path, Project: project}
	if st, err := os.Stat(path); err == nil {
		f.Modified = st.ModTime()
	}
	return f
}

// claudeCode: <config>/projects/<encoded cwd>/<session>.jsonl, where config
// is $CLAUDE_CONFIG_DIR, else ~/.claude (and ~/.config/claude, where newer
// versions keep it). Sub-agent logs (<session>/subagents/agent-*.jsonl and
// the agent-*.jsonl of 2.0) belong to their session and are not listed.
func claudeCode(env Env) []Found {
	var roots []string
	if d := env.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		for _, r := range strings.Split(d, ",") {
			roots = append(roots, strings.TrimSpace(r))
		}
	} else {
		roots = []string{filepath.Join(env.Home, ".claude"), filepath.Join(env.Home, ".config", "claude")}
	}
	var out []Found
	for _, root := range roots {
		projects := filepath.Join(root, "projects")
		for _, p := range files(projects, func(rel string, d fs.DirEntry) bool {
			parts := strings.Split(rel, "/")
			return len(parts) == 2 && strings.HasSuffix(rel, ".jsonl") && !strings.HasPrefix(d.Name(), "agent-")
		}) {
			out = append(out, found(ClaudeCode, p, filepath.Base(filepath.Dir(p))))
		}
	}
	return out
}

// codex: $CODEX_HOME (else ~/.codex)/sessions/YYYY/MM/DD/rollout-*.jsonl,
// and archived_sessions/.
func codex(env Env) []Found {
	home := env.Getenv("CODEX_HOME")
	if home == "" {
		home = filepath.Join(env.Home, ".codex")
	}
	var out []Found
	for _, dir := range []string{"sessions", "archived_sessions"} {
		for _, p := range files(filepath.Join(home, dir), func(rel string, d fs.DirEntry) bool {
			return strings.HasPrefix(d.Name(), "rollout-") && strings.HasSuffix(d.Name(), ".jsonl")
		}) {
			out = append(out, found(Codex, p, ""))
		}
	}
	return out
}

// gemini: ~/.gemini/tmp/<project hash>/chats/session-*.json(l) (and
// sub-agent logs below a session's folder, not listed).
func gemini(env Env) []Found {
	root := filepath.Join(env.Home, ".gemini", "tmp")
	var out []Found
	for _, p := range files(root, func(rel string, d fs.DirEntry) bool {
		parts := strings.Split(rel, "/")
		return len(parts) == 3 && parts[1] == "chats" && strings.HasPrefix(d.Name(), "session-") &&
			(strings.HasSuffix(d.Name(), ".json") || strings.HasSuffix(d.Name(), ".jsonl"))
	}) {
		out = append(out, found(GeminiCLI, p, filepath.Base(filepath.Dir(filepath.Dir(p)))))
	}
	return out
}

// vscodeExtensions maps the extension ids whose tasks are read to agents.
var vscodeExtensions = map[string]string{
	"saoudrizwan.claude-dev":     Cline,
	"rooveterinaryinc.roo-cline": RooCode,
	"kilocode.kilo-code":         KiloCode,
}

// vscodeTasks: <editor user dir>/globalStorage/<extension>/tasks/<id>/
// api_conversation_history.json for VS Code and its forks, and the Cline
// CLI's ~/.cline/data/tasks.
func vscodeTasks(env Env) []Found {
	var base string
	switch env.GOOS {
	case "darwin":
		base = filepath.Join(env.Home, "Library", "Application Support")
	case "windows":
		base = env.Getenv("APPDATA")
		if base == "" {
			base = filepath.Join(env.Home, "AppData", "Roaming")
		}
	default:
		base = env.Getenv("XDG_CONFIG_HOME")
		if base == "" {
			base = filepath.Join(env.Home, ".config")
		}
	}
	type root struct{ dir, agent string }
	var roots []root
	for _, editor := range []string{"Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"} {
		for ext, agent := range vscodeExtensions {
			roots = append(roots, root{filepath.Join(base, editor, "User", "globalStorage", ext, "tasks"), agent})
		}
	}
	roots = append(roots, root{filepath.Join(env.Home, ".cline", "data", "tasks"), Cline})
	var out []Found
	for _, r := range roots {
		for _, p := range files(r.dir, func(rel string, d fs.DirEntry) bool {
			return d.Name() == "api_conversation_history.json" && strings.Count(rel, "/") == 1
		}) {
			out = append(out, found(r.agent, p, ""))
		}
	}
	return out
}

// opencode: $XDG_DATA_HOME (else ~/.local/share)/opencode: the sessions of
// opencode.db, and the JSON storage of older versions
// (storage/session/<project>/<id>.json).
func opencode(ctx context.Context, env Env) ([]Found, error) {
	data := env.Getenv("XDG_DATA_HOME")
	if data == "" {
		data = filepath.Join(env.Home, ".local", "share")
	}
	root := filepath.Join(data, "opencode")
	var out []Found
	db := filepath.Join(root, "opencode.db")
	if _, err := os.Stat(db); err == nil {
		sessions, err := importer.OpencodeSessions(ctx, db)
		if err != nil {
			return nil, err
		}
		for _, s := range sessions {
			if s.ParentID != "" {
				continue // a sub-agent's session
			}
			out = append(out, Found{Agent: Opencode, Path: db + "#" + s.ID, Project: s.Directory, Modified: s.Updated, Title: s.Title})
		}
	}
	for _, p := range files(filepath.Join(root, "storage", "session"), func(rel string, d fs.DirEntry) bool {
		return strings.Count(rel, "/") == 1 && strings.HasSuffix(d.Name(), ".json")
	}) {
		out = append(out, found(Opencode, p, filepath.Base(filepath.Dir(p))))
	}
	return out, nil
}
