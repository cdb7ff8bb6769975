package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/mcp"
	"github.com/ctxkit/ctxkit/micro"
)

// The real-client test: the Claude Code CLI, pinned in .ci/claude-code-version
// and installed by .ci/run, runs a long task through ctxkit serve, whose
// upstream is the llmtest Anthropic server scripted to adapt to the tools
// Claude Code offers.

const ccWindow = 60_000

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
// recallOffer finds recall ids in a request: in a placeholder that names
// the recall tool, or one that only gives the id.
var recallOffer = regexp.MustCompile(`(?:with id \\"|recall id )([0-9a-f]{6,16}(?:-[0-9]+)?)`)

// nextPage finds where the next page of a recall starts, in its answer.
var nextPage = regexp.MustCompile(`"offset": (\d+)\}\]`)

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
	var rc struct { // the recall loop's progress (calls arrive one at a time)
		id       string
		resumeAt int
		done     bool
	}
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
		inRecall, offset := false, 0
		if n := len(c.Messages); n > 0 {
			last := c.Messages[n-1]
			for _, b := range last.Blocks {
				if id, ok := strings.CutPrefix(b.ToolUseID, "toolu_ctxscript_"); ok {
					k, _ := strconv.Atoi(strings.TrimRight(id, "ab"))
					next = k + 1
				}
				if strings.HasPrefix(b.ToolUseID, "toolu_search_") {
					inRecall, next = true, rc.resumeAt
				}
				if strings.HasPrefix(b.ToolUseID, "toolu_recall_") {
					inRecall, next = true, rc.resumeAt
					text := b.ResultText()
					head, _, _ := strings.Cut(text, "\n")
					t.Logf("request %d: recall answered %d bytes: %.160s", c.N, len(text), head)
					if m := nextPage.FindStringSubmatch(text); m != nil {
						offset, _ = strconv.Atoi(m[1])
					} else {
						rc.done = true
					}
					if b.IsError {
						t.Errorf("recall answered an error: %.300s", text)
						rc.done = true
					}
				}
			}
		}
		// As soon as a result is cleared, recall it through ctxkit mcp,
		// every page, loading the deferred tool with ToolSearch first;
		// then go on with the task.
		if !rc.done {
			if !inRecall && rc.id == "" {
				if m := recallOffer.FindSubmatch(c.Body); m != nil {
					rc.id, rc.resumeAt = string(m[1]), next
				}
			}
			switch {
			case rc.id == "":
			case !inRecall && offered["ToolSearch"]:
				return llmtest.Reply{Text: "Loading the recall tool.", Calls: []llmtest.ToolCall{{ID: "toolu_search_00", Name: "ToolSearch",
					Input: `{"query":"select:mcp__ctxkit__recall","max_results":1}`}}}
			default:
				in, _ := json.Marshal(map[string]any{"id": rc.id, "offset": max(offset, 1)})
				return llmtest.Reply{Text: "Recalling the cleared result.", Calls: []llmtest.ToolCall{{ID: fmt.Sprintf("toolu_recall_%04d", offset), Name: "mcp__ctxkit__recall", Input: string(in)}}}
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
	claude, path := cliBinary(t, "CTXKIT_CLAUDE", "claude-code-version", "claude-code", "@anthropic-ai/claude-code", "claude")
	for _, tt := range []struct {
		name   string
		window int // the proxy's --window
	}{
		{"the window known", ccWindow},
		// The proxy takes the model's window from the table (200k); the
		// upstream's is 60k, as a local model's or a gateway's may be. Its
		// first refusal states it, the proxy retries as the engine decides
		// at it (refused.go), and Claude Code never sees the refusal.
		{"the window stated by the upstream", 0},
	} {
		t.Run(tt.name, func(t *testing.T) { ccSession(t, claude, path, tt.window) })
	}
}

// ccSession runs Claude Code's task through a proxy with the given
// --window in front of an upstream whose window is ccWindow.
func ccSession(t *testing.T, claude, path string, proxyWindow int) {
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
	// The project's CLAUDE.md: Claude Code sends it in a reminder in the
	// first user message of every request; the proxy's compactions must
	// keep it there.
	const rule = "Project rule 7f3a: keep every TARGET marker's line comment."
	if err := os.WriteFile(filepath.Join(repo, "CLAUDE.md"), []byte("# Project\n\n"+rule+"\n"), 0o644); err != nil {
		t.Fatal(err)
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
	storePath := filepath.Join(t.TempDir(), "serve.db")
	p := newProxy(t, up.URL, Config{Window: proxyWindow, Policy: micro.Eager{}, Store: openStore(t, storePath)})
	// ctxkit mcp, as claude mcp add would run it, on the proxy's store.
	bin := filepath.Join(t.TempDir(), "ctxkit")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ctxkit/ctxkit/cmd/ctxkit").CombinedOutput(); err != nil {
		t.Fatalf("building ctxkit: %v\n%s", err, out)
	}
	mcpConfig, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"ctxkit": map[string]any{
		"command": bin, "args": []string{"mcp", "--store", storePath}, "env": map[string]string{"CTXKIT_KEY": "sk-ant-dummy"}}}})

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Edit the TARGET markers in alpha.go and beta.go after reading the code.",
		"--output-format", "json", "--permission-mode", "bypassPermissions",
		"--mcp-config", string(mcpConfig), "--strict-mcp-config")
	cmd.Dir = repo
	env := []string{
		"HOME=" + home, "PATH=" + path, "ANTHROPIC_BASE_URL=" + p.URL, "ANTHROPIC_API_KEY=sk-ant-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "TERM=dumb",
		"ENABLE_TOOL_SEARCH=true", // MCP tools deferred behind ToolSearch, as Claude Code does by default against Anthropic's API
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
	maxLimit, refused := 0, 0
	for _, c := range calls {
		var mt struct {
			MaxTokens int `json:"max_tokens"`
		}
		json.Unmarshal(c.Body, &mt)
		if c.Status == http.StatusNotFound {
			continue // a side request the stand-in does not serve
		}
		if c.Status != http.StatusOK {
			// The upstream refused it for its size; the proxy sent it
			// again (counted below).
			refused++
			t.Logf("upstream %2d: refused (%d tools, max_tokens %d, a summary: %v): %s", c.N, len(c.Tools), c.MaxTokens, isSummaryCall(c), c.Error)
			continue
		}
		limit := compact.Config{Window: ccWindow, MaxOutput: mt.MaxTokens}.Budget().Limit
		maxLimit = max(maxLimit, limit)
		if c.Prompt > limit {
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
			if n := bytes.Count(c.Body, []byte(rule)); n != 1 {
				t.Errorf("upstream request %d (after the first compaction: %v) holds CLAUDE.md's rule %d times, want once", c.N, firstCompact > 0, n)
			}
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
	// With the window known nothing is refused; with it stated by the
	// upstream, each refusal was sent again, and Claude Code saw none.
	if proxyWindow == 0 && refused == 0 || proxyWindow > 0 && refused > 0 {
		t.Errorf("the upstream refused %d requests for their size with the proxy's window at %d", refused, proxyWindow)
	}
	if m := metricsText(t, p); !strings.Contains(m, fmt.Sprintf(`ctxkit_serve_resent_total{provider="anthropic"} %d`, refused)) {
		t.Errorf("%d refusals, but the proxy counted otherwise:\n%s", refused, grep(m, "resent"))
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

	// The recall loop: the tool was deferred (named in no request's tools
	// until ToolSearch loaded it), a cleared result was recalled through
	// ctxkit mcp, and every line of its original reached the model.
	var recalled string
	deferred := false
	for _, c := range calls {
		if bytes.Contains(c.Body, []byte(`"defer_loading":true`)) && bytes.Contains(c.Body, []byte("mcp__ctxkit__recall")) {
			deferred = true
		}
		for _, m := range c.Messages {
			for _, b := range m.Blocks {
				if b.Type == conv.TypeToolUse && b.Name == "mcp__ctxkit__recall" && recalled == "" {
					var in struct{ ID string }
					json.Unmarshal(b.Input, &in)
					recalled = in.ID
				}
			}
		}
	}
	if recalled == "" {
		t.Fatal("the model never called mcp__ctxkit__recall")
	}
	t.Logf("recall tool deferred behind ToolSearch: %v", deferred)
	o, err := mcp.Original(context.Background(), mcp.Scope{Store: p.tenantOf("sk-ant-dummy", t)}, recalled)
	if err != nil {
		t.Fatalf("the recalled id %s is not in the proxy's store: %v", recalled, err)
	}
	// What the model saw of the recall's answers: the requests after it.
	var seen [][]byte
	for _, c := range calls {
		if bytes.Contains(c.Body, []byte("toolu_recall_")) {
			seen = append(seen, c.Body)
		}
	}
	var missing []string
	lines := strings.Split(strings.TrimSpace(string(o.Content)), "\n")
	for _, line := range lines {
		var q bytes.Buffer
		enc := json.NewEncoder(&q)
		enc.SetEscapeHTML(false) // as the client's JSON has it
		enc.Encode(strings.TrimSpace(line))
		quoted := bytes.TrimSpace(q.Bytes())
		quoted = quoted[1 : len(quoted)-1]
		found := len(quoted) == 0
		for _, b := range seen {
			found = found || bytes.Contains(b, quoted)
		}
		if !found {
			missing = append(missing, line)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of the %d lines of the %d-byte original %s never reached the model, e.g. %q", len(missing), len(lines), len(o.Content), recalled, missing[:min(3, len(missing))])
	}
	t.Logf("recalled %s (%s %q, %d lines, %d bytes) through ctxkit mcp", recalled, o.Tool, o.Label, len(lines), len(o.Content))
}
