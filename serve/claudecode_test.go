package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
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
	"github.com/ctxkit/ctxkit/micro"
)

// The real-client test: the Claude Code CLI, pinned in .ci/claude-code-version
// and installed by .ci/run, runs a long task through ctxkit serve, whose
// upstream is the llmtest Anthropic server scripted to adapt to the tools
// Claude Code offers.

const ccWindow = 60_000

// claudeBinary finds the pinned Claude Code CLI: $CTXKIT_CLAUDE, the cache
// .ci/run installs into, or claude on PATH when its version matches.
func claudeBinary(t *testing.T) string {
	raw, err := os.ReadFile("../.ci/claude-code-version")
	if err != nil {
		t.Fatalf("reading the pinned Claude Code version: %v", err)
	}
	version := strings.TrimSpace(string(raw))
	var candidates []string
	if p := os.Getenv("CTXKIT_CLAUDE"); p != "" {
		candidates = append(candidates, p)
	}
	if cache, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(cache, "ctxkit", "claude-code", version, "node_modules", ".bin", "claude"))
	}
	if p, err := exec.LookPath("claude"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		out, err := exec.Command(c, "--version").Output()
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), version) {
			return c
		}
	}
	t.Skipf("Claude Code CLI %s is not installed (run .ci/run, or: npm install --prefix ~/.cache/ctxkit/claude-code/%s @anthropic-ai/claude-code@%s)", version, version, version)
	return ""
}

// bigFile is a Go file of about n bytes with a marker line to edit.
func bigFile(pkg string, n int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "package %s\n\n// TARGET_%s: edit me\n", pkg, pkg)
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "func %sHelper%d(x int) int { return x*%d + %d } // helper %d\n", pkg, i, i%97, i, i)
	}
	return sb.String()
}

// ccScript answers Claude Code: side requests without tools get a title,
// summary requests a summary, and the main loop walks a fixed task with
// whatever tools Claude Code offers. The step is read back from the id of
// the tool call the newest tool result answers, so it survives the proxy's
// rewriting of the history.
func ccScript(t *testing.T, repo string, files []string) func(*llmtest.Call) llmtest.Reply {
	type step struct {
		tool  string
		input map[string]any
		also  map[string]any // a second, parallel call of the same tool
	}
	var steps []step
	steps = append(steps, step{"Bash", map[string]any{"command": "git status --short", "description": "status"}, nil})
	for _, f := range files[:4] {
		steps = append(steps, step{"Read", map[string]any{"file_path": filepath.Join(repo, f)}, nil})
	}
	steps = append(steps,
		step{"Bash", map[string]any{"command": "grep -n TARGET_ *.go", "description": "find the markers"}, nil},
		step{"Bash", map[string]any{"command": "wc -l *.go", "description": "count lines"}, nil},
		step{"Edit", map[string]any{"file_path": filepath.Join(repo, files[0]), "old_string": "// TARGET_alpha: edit me", "new_string": "// TARGET_alpha: edited by the agent"}, nil},
	)
	// Two big reads at once: the newest message alone then takes the
	// request over the compaction threshold, clearing cannot help (nothing
	// in it is consumed yet), so the proxy summarizes.
	steps = append(steps, step{"Read", map[string]any{"file_path": filepath.Join(repo, files[4])}, map[string]any{"file_path": filepath.Join(repo, files[5])}})
	steps = append(steps,
		step{"Edit", map[string]any{"file_path": filepath.Join(repo, files[1]), "old_string": "// TARGET_beta: edit me", "new_string": "// TARGET_beta: edited by the agent"}, nil},
		step{"Bash", map[string]any{"command": "git diff --stat", "description": "diff"}, nil},
	)
	return func(c *llmtest.Call) llmtest.Reply {
		if isSummaryCall(c) {
			return llmtest.Text("Goal: edit TARGET markers in alpha.go and beta.go. Done so far: read the large files, grepped for TARGET_, counted lines. Files: " + strings.Join(files, ", ") + ".")
		}
		if len(c.Tools) == 0 {
			return llmtest.Text("Edit TARGET markers")
		}
		offered := map[string]bool{}
		for _, n := range c.Tools {
			offered[n] = true
		}
		next := 0
		if n := len(c.Messages); n > 0 {
			last := c.Messages[n-1]
			for _, b := range last.Blocks {
				if id, ok := strings.CutPrefix(b.ToolUseID, "toolu_ctxscript_"); ok {
					k, _ := strconv.Atoi(strings.TrimRight(id, "ab"))
					next = k + 1
				}
			}
		}
		for next < len(steps) && !offered[steps[next].tool] {
			t.Logf("Claude Code does not offer %s; skipping step %d", steps[next].tool, next)
			next++
		}
		if next >= len(steps) {
			return llmtest.Reply{Thinking: "All steps done.", Text: "Done: both TARGET markers are edited."}
		}
		st := steps[next]
		in, _ := json.Marshal(st.input)
		calls := []llmtest.ToolCall{{ID: fmt.Sprintf("toolu_ctxscript_%02d", next), Name: st.tool, Input: string(in)}}
		if st.also != nil {
			in2, _ := json.Marshal(st.also)
			calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("toolu_ctxscript_%02d", next), Name: st.tool, Input: string(in2)})
			calls[0].ID += "a"
			calls[1].ID += "b"
		}
		return llmtest.Reply{Thinking: fmt.Sprintf("Step %d: %s.", next, st.tool), Text: fmt.Sprintf("Step %d.", next), Calls: calls}
	}
}

func TestClaudeCodeThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("the real-client test runs the Claude Code CLI; skipped with -short")
	}
	claude := claudeBinary(t)
	repo := t.TempDir()
	home := t.TempDir()
	files := []string{"alpha.go", "beta.go", "gamma.go", "delta.go", "epsilon.go", "zeta.go"}
	for _, f := range files {
		pkg := strings.TrimSuffix(f, ".go")
		// ~56 kB: about 14k tokens, under Claude Code's 25k-token Read limit.
		if err := os.WriteFile(filepath.Join(repo, f), []byte(bigFile(pkg, 56_000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	up := llmtest.NewServer(t, llmtest.Config{Window: ccWindow})
	up.Handle(ccScript(t, repo, files))
	// The eager clearing policy: a 12-request session is too short for the
	// cache-aware rule to clear before it compacts (micro's doc), and the
	// test exercises both.
	p := newProxy(t, up.URL, Config{Window: ccWindow, Policy: micro.Eager{}})

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Edit the TARGET markers in alpha.go and beta.go after reading the code.",
		"--output-format", "json", "--permission-mode", "bypassPermissions")
	cmd.Dir = repo
	env := []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + p.URL, "ANTHROPIC_API_KEY=sk-ant-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "TERM=dumb",
	}
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1")
	}
	cmd.Env = env
	out, err := cmd.Output()
	if dir := os.Getenv("CTXKIT_DUMP"); dir != "" {
		for _, c := range up.Calls() {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("call%02d.json", c.N)), c.Body, 0o644)
		}
	}
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	var result struct {
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
		Session string `json:"session_id"`
	}
	if err := json.Unmarshal(out, &result); err != nil || result.IsError {
		t.Fatalf("claude's result: %v %s", err, out)
	}
	for _, f := range files[:2] {
		data, _ := os.ReadFile(filepath.Join(repo, f))
		if !strings.Contains(string(data), "edited by the agent") {
			t.Errorf("%s was not edited", f)
		}
	}

	// Every upstream request passed the validator (NewServer fails the test
	// otherwise) and none exceeded the proxy's hard limit: the window less
	// the request's max_tokens reserve and the counter's error
	// (compact.Budget.Limit), which is strictly inside the window.
	calls := up.Calls()
	main := 0
	firstCompact, readsAfter := 0, 0
	maxLimit := 0
	for _, c := range calls {
		var mt struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.Unmarshal(c.Body, &mt)
		limit := compact.Config{Window: ccWindow, MaxOutput: mt.MaxTokens}.Budget().Limit
		maxLimit = max(maxLimit, limit)
		if c.Prompt > limit || c.Status == http.StatusBadRequest && strings.Contains(c.Error, "too long") {
			t.Errorf("upstream request %d: %d tokens, over the %d-token limit of a %d window (max_tokens %d)", c.N, c.Prompt, limit, ccWindow, mt.MaxTokens)
		}
		if isSummaryCall(c) {
			if firstCompact == 0 {
				firstCompact = c.N
			}
			continue
		}
		if len(c.Tools) > 0 {
			main++
		}
		if firstCompact > 0 && c.N > firstCompact && c.Usage.CacheRead > 0 {
			readsAfter++
		}
		t.Logf("upstream %2d: tools %2d prompt %6d cache read %6d write %6d", c.N, len(c.Tools), c.Prompt, c.Usage.CacheRead, c.Usage.CacheWrite)
	}
	sessions, err := p.store.Sessions(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var clears, compactions, clientTok int64
	for _, s := range sessions {
		t.Logf("session %s: %+v", s.ID, s.Totals)
		clears += s.Totals.Clears
		compactions += s.Totals.Compactions
		clientTok = max(clientTok, s.Totals.ClientTokens)
	}
	if clears == 0 || compactions == 0 {
		t.Errorf("the proxy cleared %d results and compacted %d times; want both", clears, compactions)
	}
	if firstCompact == 0 || readsAfter == 0 {
		t.Errorf("no cache reads after the first compaction (summary request %d)", firstCompact)
	}
	// Claude Code's own session file records the usage of the smaller,
	// rewritten requests: never more than the window.
	maxRecorded := 0
	filepath.WalkDir(filepath.Join(home, ".claude", "projects"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var rec struct {
				Message struct {
					Usage *struct {
						Input      int `json:"input_tokens"`
						CacheRead  int `json:"cache_read_input_tokens"`
						CacheWrite int `json:"cache_creation_input_tokens"`
					} `json:"usage"`
				} `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Message.Usage != nil {
				u := rec.Message.Usage
				maxRecorded = max(maxRecorded, u.Input+u.CacheRead+u.CacheWrite)
			}
		}
		return nil
	})
	if maxRecorded == 0 || maxRecorded > maxLimit {
		t.Errorf("Claude Code's session file records at most %d input tokens per request; want some, and none over %d", maxRecorded, maxLimit)
	}
	if m := metricsText(t, p); !strings.Contains(m, `ctxkit_serve_over_window_total{provider="anthropic"} 0`) {
		t.Errorf("requests over the window reached upstream:\n%s", grep(m, "over_window"))
	}
	for _, l := range strings.Split(metricsText(t, p), "\n") {
		if strings.HasPrefix(l, "ctxkit_serve_") && !strings.Contains(l, "_bucket") {
			t.Log(l)
		}
	}
	t.Logf("claude: %d upstream calls (%d main loop), result %q; session file max input %d tokens", len(calls), main, result.Result, maxRecorded)
}
