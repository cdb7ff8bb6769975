package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// Real-client tests of the other two agent CLIs, as claudecode_test.go
// runs Claude Code: Codex CLI (OpenAI Responses API) and Gemini CLI (the
// Gemini API), each pinned in .ci/ and installed by .ci/run from npm into
// the user's cache, run headless and offline through ctxkit serve against
// the llmtest stand-in of its provider. The task's reads overflow a 60k
// window; the test asserts what the wire shows: the CLI exits 0, the files
// are edited, every upstream request is valid (the stand-in refuses what
// the real API refuses) and under the hard limit, and later requests read
// the cache.

const cliWindow = 60_000

// cliBinary finds the pinned version of an npm CLI (see pinnedBinary) and
// the PATH to start it with: the directory of the Node pinned in
// .ci/node-version first, a Node every pinned CLI's engines allow (Claude
// Code's ask for 22 or later; Debian's is 20), so that what starts with
// "#!/usr/bin/env node" (Codex's and Gemini's bins; Claude Code's is
// native) runs on it. It skips the test with the install command when the
// CLI or that Node is not there.
func cliBinary(t *testing.T, env, pinFile, dir, pkg, bin string) (cli, path string) {
	t.Helper()
	node := pinnedBinary(t, "CTXKIT_NODE", "node-version", "node", "node", "node", os.Getenv("PATH"))
	path = filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH")
	return pinnedBinary(t, env, pinFile, dir, pkg, bin, path), path
}

// pinnedBinary finds the version of an npm package's bin pinned in
// .ci/<pinFile>: $env, the cache .ci/run installs into
// (~/.cache/ctxkit/<dir>/<version>), or bin on PATH when its version
// matches, asked with path as its PATH. It logs what it found, and skips
// the test with the install command when none is there.
func pinnedBinary(t *testing.T, env, pinFile, dir, pkg, bin, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", ".ci", pinFile))
	if err != nil {
		t.Fatalf("reading the pinned %s version: %v", pkg, err)
	}
	version := strings.TrimSpace(string(raw))
	found := func(p string) string {
		t.Logf("%s %s: %s", pkg, version, p)
		return p
	}
	if cache, err := os.UserCacheDir(); err == nil {
		// The cache's install says its version in package.json, which is
		// quicker to read than to start a Node CLI.
		root := filepath.Join(cache, "ctxkit", dir, version, "node_modules")
		var pj struct {
			Version string `json:"version"`
		}
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(pkg), "package.json"))
		if p := filepath.Join(root, ".bin", bin); err == nil && json.Unmarshal(raw, &pj) == nil && pj.Version == version && os.Getenv(env) == "" {
			if _, err := os.Stat(p); err == nil {
				return found(p)
			}
		}
	}
	var candidates []string
	if p := os.Getenv(env); p != "" {
		candidates = append(candidates, p)
	}
	if p, err := exec.LookPath(bin); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		cmd := exec.Command(c, "--version")
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.Output()
		if err == nil && strings.Contains(string(out), version) {
			return found(c)
		}
	}
	t.Skipf("%s %s is not installed (run .ci/run, or: npm install --prefix ~/.cache/ctxkit/%s/%s %s@%s)", pkg, version, dir, version, pkg, version)
	return ""
}

// taskRepo makes a git repository of n Go files of about size bytes,
// f00.go, f01.go, …, each with a TARGET marker to edit.
func taskRepo(t *testing.T, n, size int) (string, []string) {
	t.Helper()
	repo := t.TempDir()
	var files []string
	for i := range n {
		pkg := fmt.Sprintf("f%02d", i)
		files = append(files, pkg+".go")
		if err := os.WriteFile(filepath.Join(repo, pkg+".go"), []byte(bigFile(pkg, size)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo, files
}

// A step of the scripted task: one tool call, or several in parallel.
// read, edit and shell name what each call does; a CLI's script turns
// them into its own tools.
type taskCall struct {
	read  string // a file to read
	edit  string // a file whose marker to edit
	shell string // a command to run
}

type taskStep []taskCall

// readTask is the task: status, then reads four files at a time (the
// reads overflow a 60k window several times over), a grep, an edit, two
// more reads, another edit, a diff.
func readTask(files []string) []taskStep {
	steps := []taskStep{{{shell: "git status --short"}}}
	rest := files[2:]
	for len(rest) > 4 {
		var st taskStep
		for _, f := range rest[:4] {
			st = append(st, taskCall{read: f})
		}
		steps = append(steps, st)
		rest = rest[4:]
	}
	steps = append(steps, taskStep{{shell: "grep -n TARGET_ *.go"}}, taskStep{{edit: files[0]}})
	var last taskStep
	for _, f := range rest {
		last = append(last, taskCall{read: f})
	}
	steps = append(steps, last, taskStep{{edit: files[1]}}, taskStep{{shell: "git diff --stat"}})
	return steps
}

// markerEdit is the sed command that edits f's marker.
func markerEdit(f string) string {
	pkg := strings.TrimSuffix(f, ".go")
	return fmt.Sprintf("sed -i 's|// TARGET_%s: edit me|// TARGET_%s: edited by the agent|' %s", pkg, pkg, f)
}

// scriptStep reads the step the newest tool result answers back from its
// call id (prefix + two digits, a letter for parallel calls), so the
// script survives the proxy's rewriting of the history. -1: none yet.
func scriptStep(c *llmtest.Call, prefix string) int {
	if n := len(c.Messages); n > 0 {
		for _, b := range c.Messages[n-1].Blocks {
			if id, ok := strings.CutPrefix(b.ToolUseID, prefix); ok {
				k, err := strconv.Atoi(strings.TrimRight(id, "abcdef"))
				if err == nil {
					return k
				}
			}
		}
	}
	return -1
}

// checkUpstream asserts what every real-client test asserts of the
// upstream's calls: none over the hard limit, a summary or a clear made,
// and cache reads on the requests after the first rewrite. maxOut reads a
// request's output reserve. The upstream's window is window: with the
// proxy's --window (proxyWindow) at it, the upstream refuses nothing; at
// 0 (the model table's, larger), its first refusal of a client's request
// states the window and the proxy sends that request again (refused.go),
// and a summary request on the client's prefix refused before that gives
// way to a transcript.
func checkUpstream(t *testing.T, p *proxy, calls []*llmtest.Call, provider string, proxyWindow, window int, maxOut func(*llmtest.Call) int) {
	t.Helper()
	reads, main, refused := 0, 0, 0
	for _, c := range calls {
		if c.Status == http.StatusBadRequest && proxyWindow == 0 {
			if !isSummaryCall(c) {
				refused++
			}
			t.Logf("upstream %2d: refused (a summary: %v): %s", c.N, isSummaryCall(c), c.Error)
			continue
		}
		limit := compact.Config{Window: window, MaxOutput: maxOut(c)}.Budget().Limit
		if c.Prompt > limit || c.Status == http.StatusBadRequest {
			t.Errorf("upstream request %d: %d tokens (limit %d), status %d %s", c.N, c.Prompt, limit, c.Status, c.Error)
		}
		if isSummaryCall(c) {
			t.Logf("upstream %2d: summary request, prompt %6d", c.N, c.Prompt)
			continue
		}
		main++
		if main > 2 && c.Usage.CacheRead > 0 {
			reads++
		}
		t.Logf("upstream %2d: %-9s tools %2d prompt %6d cache read %6d", c.N, c.API, len(c.Tools), c.Prompt, c.Usage.CacheRead)
	}
	if main < 4 || reads < main/2 {
		t.Errorf("%d of %d later requests read the cache; want most", reads, main)
	}
	sessions, err := p.store.Sessions(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var clears, compactions int64
	for _, s := range sessions {
		t.Logf("session %s: %+v", s.ID, s.Totals)
		clears += s.Totals.Clears
		compactions += s.Totals.Compactions
	}
	if clears+compactions == 0 {
		t.Errorf("the proxy neither cleared nor compacted anything")
	}
	m := metricsText(t, p)
	if proxyWindow == 0 && refused == 0 {
		t.Errorf("the upstream refused nothing with the proxy's window at the model's: the test tests nothing")
	}
	if want := fmt.Sprintf(`ctxkit_serve_resent_total{provider="%s"} %d`, provider, refused); !strings.Contains(m, want) {
		t.Errorf("%d refusals, each sent again once; the proxy counted otherwise:\n%s", refused, grep(m, "resent_total{"))
	}
	if !strings.Contains(m, `ctxkit_serve_over_window_total{provider="`+provider+`"} 0`) && strings.Contains(m, `over_window_total{provider="`+provider+`"}`) {
		t.Errorf("requests over the window reached upstream:\n%s", grep(m, "over_window"))
	}
	if strings.Contains(m, `outcome="passthrough",provider="`+provider+`"`) || strings.Contains(m, `outcome="fail_open",provider="`+provider+`"`) {
		t.Errorf("requests went upstream without the engine:\n%s", grep(m, "requests_total"))
	}
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "ctxkit_serve_requests_total") {
			t.Log(l)
		}
	}
}

func checkEdited(t *testing.T, repo string, files []string) {
	t.Helper()
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(repo, f))
		if !strings.Contains(string(data), "edited by the agent") {
			t.Errorf("%s was not edited", f)
		}
	}
}

// runCLI runs cmd, failing the test with its output when it does not exit 0.
func runCLI(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("%s ran %s", filepath.Base(cmd.Path), time.Since(start).Round(time.Millisecond))
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s: %v\nstdout: %s\nstderr: %s", cmd.Path, err, out, stderr)
	}
	return out
}

// docRecipe is the fenced block of docs/clients.md whose info string is
// "<lang> <name>", with the proxy's address in place of the default one:
// the tests run the recipes exactly as the docs give them.
func docRecipe(t *testing.T, name, proxyURL string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(doc), "```")[1:] {
		info, body, ok := strings.Cut(block, "\n")
		if f := strings.Fields(info); ok && len(f) == 2 && f[1] == name {
			return strings.ReplaceAll(body, "http://127.0.0.1:8788", proxyURL)
		}
	}
	t.Fatalf("docs/clients.md has no %q block", name)
	return ""
}

func TestCodexThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("the real-client test runs Codex CLI; skipped with -short")
	}
	codex, path := cliBinary(t, "CTXKIT_CODEX", "codex-version", "codex", "@openai/codex", "codex")
	repo, files := taskRepo(t, 28, 10_000)
	// The project's AGENTS.md, which Codex sends in a user message at the
	// start of every request: the proxy's compactions keep it there.
	const rule = "Project rule 7f3a: keep every TARGET marker's line comment."
	if err := os.WriteFile(filepath.Join(repo, "AGENTS.md"), []byte("# Project\n\n"+rule+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	steps := readTask(files)

	up := llmtest.NewServer(t, llmtest.Config{Window: cliWindow})
	up.Handle(func(c *llmtest.Call) llmtest.Reply {
		if isSummaryCall(c) {
			return llmtest.Text("Goal: edit the TARGET markers in f00.go and f01.go. Done so far: read the files, grepped for TARGET_.")
		}
		if c.API != llmtest.Responses {
			return llmtest.Text("ok")
		}
		next := scriptStep(c, "call_ctxscript_") + 1
		if next >= len(steps) {
			return llmtest.Reply{Thinking: "All steps are done.", Text: "Done: both TARGET markers are edited."}
		}
		var calls []llmtest.ToolCall
		for i, tc := range steps[next] {
			cmd := tc.shell
			switch {
			case tc.read != "":
				cmd = "cat " + tc.read
			case tc.edit != "":
				cmd = markerEdit(tc.edit)
			}
			in, _ := json.Marshal(map[string]any{"cmd": cmd, "workdir": repo, "yield_time_ms": 10000})
			id := fmt.Sprintf("call_ctxscript_%02d", next)
			if len(steps[next]) > 1 {
				id += string(rune('a' + i))
			}
			calls = append(calls, llmtest.ToolCall{ID: id, Name: "exec_command", Input: string(in)})
		}
		return llmtest.Reply{Thinking: fmt.Sprintf("Step %d.", next), Calls: calls}
	})
	p := newProxy(t, up.URL, Config{Window: cliWindow})

	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(docRecipe(t, "codex-config", p.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"Edit the TARGET markers in alpha.go and beta.go after reading the code.")
	cmd.Dir = repo
	cmd.Env = []string{"HOME=" + home, "PATH=" + path, "OPENAI_API_KEY=sk-dummy", "TERM=dumb", "NO_COLOR=1"}
	out := runCLI(t, cmd)
	if dir := os.Getenv("CTXKIT_DUMP"); dir != "" {
		for _, c := range up.Calls() {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("codex%02d.json", c.N)), c.Body, 0o644)
		}
	}
	if !strings.Contains(string(out), "both TARGET markers are edited") {
		t.Errorf("codex's last message: %s", out)
	}
	checkEdited(t, repo, files[:2])
	calls := up.Calls()
	checkUpstream(t, p, calls, providerOpenAI, cliWindow, cliWindow, func(c *llmtest.Call) int {
		var mt struct {
			MaxOutput int `json:"max_output_tokens"`
		}
		json.Unmarshal(c.Body, &mt)
		return mt.MaxOutput
	})
	// What Codex sends survives: its session key, metadata and headers,
	// AGENTS.md once, and every reasoning item it got back, byte for byte.
	for _, c := range calls {
		if c.API != llmtest.Responses {
			continue
		}
		if n := strings.Count(string(c.Body), rule); !isSummaryCall(c) && n != 1 {
			t.Errorf("upstream request %d holds AGENTS.md's rule %d times, want once", c.N, n)
		}
		if c.Header.Get("Session-Id") == "" || c.Header.Get("X-Codex-Window-Id") == "" {
			t.Errorf("upstream request %d lost Codex's headers: %v", c.N, c.Header)
		}
		for _, want := range []string{`"prompt_cache_key":`, `"client_metadata":`, `"role":"developer"`} {
			if !strings.Contains(string(c.Body), want) {
				t.Errorf("upstream request %d lost %s", c.N, want)
			}
		}
	}
	if last := calls[len(calls)-1]; !strings.Contains(string(last.Body), `"encrypted_content":"gAAAAB`) {
		t.Errorf("the last request carries no encrypted reasoning: %.500s", last.Body)
	}
}

func TestGeminiCLIThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("the real-client test runs Gemini CLI; skipped with -short")
	}
	gemini, path := cliBinary(t, "CTXKIT_GEMINI", "gemini-cli-version", "gemini-cli", "@google/gemini-cli", "gemini")
	for _, tt := range []struct {
		name            string
		proxy, upstream int // the proxy's --window, the upstream's
	}{
		{"the window known", cliWindow, cliWindow},
		// The proxy takes gemini-2.5-pro's window from the table (1M);
		// the upstream's is smaller than the proxy's schedule lets the
		// context grow there. Its first refusal states it, and the proxy
		// retries at it before Gemini CLI sees anything.
		{"the window stated by the upstream", 0, 50_000},
	} {
		t.Run(tt.name, func(t *testing.T) { geminiSession(t, gemini, path, tt.proxy, tt.upstream) })
	}
}

// geminiSession runs Gemini CLI's task through a proxy with the given
// --window in front of an upstream with the given window.
func geminiSession(t *testing.T, gemini, path string, proxyWindow, window int) {
	repo, files := taskRepo(t, 14, 20_000)
	home := t.TempDir()
	steps := readTask(files)

	up := llmtest.NewServer(t, llmtest.Config{Window: window, APIKey: "gm-test-key"})
	up.Handle(func(c *llmtest.Call) llmtest.Reply {
		if isSummaryCall(c) {
			return llmtest.Text("Goal: edit the TARGET markers in f00.go and f01.go. Done so far: read the files, grepped for TARGET_.")
		}
		if c.API != llmtest.Gemini || len(c.Tools) == 0 {
			return llmtest.Text(`{"complexity_reasoning":"simple","complexity_score":10}`)
		}
		next := scriptStep(c, "gmscript_") + 1
		if next >= len(steps) {
			return llmtest.Reply{Thinking: "All steps are done.", Text: "Done: both TARGET markers are edited."}
		}
		var calls []llmtest.ToolCall
		for i, tc := range steps[next] {
			name, in := "run_shell_command", map[string]any{"command": tc.shell, "description": "run"}
			switch {
			case tc.read != "":
				name, in = "read_file", map[string]any{"file_path": filepath.Join(repo, tc.read)}
			case tc.edit != "":
				pkg := strings.TrimSuffix(tc.edit, ".go")
				name, in = "replace", map[string]any{"file_path": filepath.Join(repo, tc.edit), "instruction": "Mark the target as edited.",
					"old_string": "// TARGET_" + pkg + ": edit me", "new_string": "// TARGET_" + pkg + ": edited by the agent"}
			}
			data, _ := json.Marshal(in)
			id := fmt.Sprintf("gmscript_%02d", next)
			if len(steps[next]) > 1 {
				id += string(rune('a' + i))
			}
			calls = append(calls, llmtest.ToolCall{ID: id, Name: name, Input: string(data)})
		}
		return llmtest.Reply{Thinking: fmt.Sprintf("Step %d.", next), Calls: calls}
	})
	p := newProxy(t, up.URL, Config{Window: proxyWindow, GeminiUpstream: up.URL})

	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(docRecipe(t, "gemini-settings", p.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, "-m", "gemini-2.5-pro", "--yolo", "--output-format", "json",
		"-p", "Edit the TARGET markers in f00.go and f01.go after reading the code.")
	cmd.Dir = repo
	cmd.Env = []string{"HOME=" + home, "PATH=" + path, "TERM=dumb", "NO_COLOR=1",
		"GOOGLE_GEMINI_BASE_URL=" + p.URL, "GEMINI_API_KEY=gm-test-key", "GEMINI_CLI_TRUST_WORKSPACE=true",
		// Gemini CLI restarts Node with a larger heap unless told it already
		// has; one start is enough for a test.
		"GEMINI_CLI_NO_RELAUNCH=true"}
	out := runCLI(t, cmd)
	if dir := os.Getenv("CTXKIT_DUMP"); dir != "" {
		for _, c := range up.Calls() {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("gemini%02d.json", c.N)), c.Body, 0o644)
		}
	}
	var result struct {
		Response string `json:"response"`
	}
	if err := json.Unmarshal(out, &result); err != nil || !strings.Contains(result.Response, "both TARGET markers are edited") {
		t.Errorf("gemini's result: %v %.2000s", err, out)
	}
	checkEdited(t, repo, files[:2])
	calls := up.Calls()
	// Gemini CLI's session context opens every request of the session: the
	// proxy's compactions keep it there.
	for _, c := range calls {
		if c.API == llmtest.Gemini && len(c.Tools) > 0 && !isSummaryCall(c) {
			// (In a message the proxy wrote, the kept words are JSON with
			// <, > and & escaped: the same text to the model.)
			if n := strings.Count(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(c.Body)), "<session_context>"); n != 1 {
				t.Errorf("upstream request %d holds the session context %d times, want once", c.N, n)
			}
		}
	}
	checkUpstream(t, p, calls, providerGemini, proxyWindow, window, func(c *llmtest.Call) int {
		var gc struct {
			GenerationConfig struct {
				MaxOutputTokens int `json:"maxOutputTokens"`
			} `json:"generationConfig"`
		}
		json.Unmarshal(c.Body, &gc)
		return gc.GenerationConfig.MaxOutputTokens
	})
	for _, c := range calls {
		if c.Header.Get("X-Goog-Api-Key") != "gm-test-key" {
			t.Errorf("upstream request %d came without the client's key", c.N)
		}
	}
	if last := calls[len(calls)-1]; !strings.Contains(string(last.Body), `"thoughtSignature"`) {
		t.Errorf("the last request carries no thought signature: %.500s", last.Body)
	}
}
