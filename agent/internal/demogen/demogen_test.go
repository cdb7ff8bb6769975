package demogen

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/agent"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tools"
	"github.com/ctxkit/ctxkit/transcript"
	"github.com/ctxkit/ctxkit/wire"
)

var update = flag.Bool("update", false, "record the demo session again and write cmd/ctxkit/demo/demo-session.json")

const (
	demoModel = "claude-sonnet-4-5"
	demoPath  = "cmd/ctxkit/demo/demo-session.json"
	maxBytes  = 1_500_000
)

// TestDemoSession records the demo session with -update; without it, it
// checks the recorded one.
func TestDemoSession(t *testing.T) {
	root := moduleRoot(t)
	path := filepath.Join(root, demoPath)
	if *update {
		record(t, root, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no demo session at %s: record it with go test ./agent/internal/demogen -update (%v)", demoPath, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > maxBytes {
		t.Errorf("%s is %d bytes, over the %d budget", demoPath, st.Size(), maxBytes)
	}
	s, err := importer.Load(context.Background(), path, importer.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Format != importer.FormatAnthropic {
		t.Errorf("format %s, want %s", s.Format, importer.FormatAnthropic)
	}
	if len(s.Fixes) > 0 {
		t.Errorf("the recording needed repairs: %v", s.Fixes)
	}
	if vs := conv.Check(s.Conv); len(vs) > 0 {
		t.Fatalf("invariants: %v", vs)
	}
	turns, calls := 0, map[string]int{}
	for _, m := range s.Conv.Messages {
		if m.Role == conv.RoleAssistant {
			turns++
		}
		for _, b := range m.Blocks {
			if b.Type == conv.TypeToolUse {
				calls[b.Name]++
			}
		}
	}
	rounds := len(s.Conv.Rounds())
	t.Logf("%s: %d bytes, %d messages, %d assistant turns, %d rounds, calls %v", demoPath, st.Size(), len(s.Conv.Messages), turns, rounds, calls)
	if turns < 40 || turns > 80 {
		t.Errorf("%d assistant turns, want 40 to 80", turns)
	}
	if rounds < 4 {
		t.Errorf("%d rounds, want several", rounds)
	}
	for _, name := range []string{"Read", "Grep", "LS", "Edit", "Write", "Bash", "TodoWrite", "recall"} {
		if calls[name] == 0 {
			t.Errorf("no %s call in the demo session", name)
		}
	}
}

// record runs the agent over a copy of the tree and writes the session.
func record(t *testing.T, root, out string) {
	ws := filepath.Join(t.TempDir(), "ctxkit")
	copyTree(t, root, ws)
	gitInit(t, ws)

	srv := llmtest.NewServer(t, llmtest.Config{})
	g := &script{t: t}
	srv.Handle(g.handle)
	t.Setenv(anthropic.KeyEnv, "demo-key")
	p, err := anthropic.New(demoModel, anthropic.WithBaseURL(srv.BaseURL(llmtest.Anthropic)))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tools.New(ws, tools.Options{BashEnv: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	st, err := transcript.Create(filepath.Join(t.TempDir(), "session"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := &recorder{Store: st}
	clock := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	var cmu sync.Mutex
	a, err := agent.New(context.Background(), agent.Config{
		Provider: p, Model: demoModel, Pricing: pricing.Anthropic(),
		Tools: ts, Store: rec, Workspace: ws,
		Clock: func() time.Time {
			cmu.Lock()
			defer cmu.Unlock()
			clock = clock.Add(1500 * time.Millisecond)
			return clock
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.steps, g.loaded = g.rounds(), -1
	for i, prompt := range prompts {
		g.mu.Lock()
		g.round = i
		g.mu.Unlock()
		if _, err := a.Run(context.Background(), prompt); err != nil {
			t.Fatalf("round %d: %v", i+1, err)
		}
	}
	if n := len(g.queue); n > 0 {
		t.Fatalf("%d scripted steps were not used", n)
	}
	c := a.Conversation()
	req := &llm.Request{Model: demoModel, MaxTokens: 32_000, System: c.System, Tools: c.Tools, Messages: rec.messages()}
	data, err := wire.EncodeAnthropic(req)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, data, "", " "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, pretty.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d bytes, %d requests", out, pretty.Len(), len(srv.Calls()))
}

// recorder is the agent's store, keeping a copy of every message as it is
// appended: the session as first produced, before any compression.
type recorder struct {
	*transcript.Store
	mu   sync.Mutex
	msgs []conv.Message
}

func (r *recorder) Append(ctx context.Context, m conv.Message) error {
	if err := r.Store.Append(ctx, m); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := m
	c.Blocks = make([]conv.Block, len(m.Blocks))
	for i, b := range m.Blocks {
		c.Blocks[i] = b.Clone()
	}
	r.msgs = append(r.msgs, c)
	return nil
}

func (r *recorder) messages() []conv.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]conv.Message(nil), r.msgs...)
}

// prompts are the user's turns of the demo session.
var prompts = []string{
	"I'm new to this repository. Give me a quick tour of the main packages, and explain how the pricing package computes what a request costs and who uses it.",
	"Before we change anything: how does the benchmark replay a session and bill it with these prices, and how does it measure evidence recall? Point me at the functions.",
	"Add a String method to pricing.Table that prints the prices per million tokens, like `anthropic: input $3/MTok, output $15/MTok, cache write $3.75/MTok, cache read $0.30/MTok`, and tests for it and for Cost. Then run go vet and go test on the package.",
	"ByName should accept names in any case, like ANTHROPIC or OpenAI. Please fix and test it, and check how the callers report an unknown name.",
	"Add a runnable example for Cost (example_test.go) so it shows up in the docs, and make sure go test runs it.",
	"Run the conv package's tests as well: how many tests does it have, and which are the slowest?",
	"Show me the whole diff and propose a commit message.",
}

// step answers one request.
type step func(c *llmtest.Call) llmtest.Reply

// script is the scripted model: a queue of steps, refilled per round.
type script struct {
	t      *testing.T
	mu     sync.Mutex
	steps  [][]step
	queue  []step
	round  int // the round being run, set by record
	loaded int // the round whose steps are queued
	// facts learned from tool results, for later turns
	callers    []string // file:line of pricing calls
	readID     string   // recall id of the first pricing.go read
	grepID     string
	testFile   string
	vetLine    string
	gotString  string
	turnCost   string
	convTop    int
	convFiles  int
	convRuns   string
	slowest    string
	slowTime   string
	benchFuncs []string
}

func (g *script) handle(c *llmtest.Call) llmtest.Reply {
	g.mu.Lock()
	defer g.mu.Unlock()
	if summaryRequest(c) {
		return llmtest.Text("<summary>\n## Task and intent\nTour of the repository and changes to the pricing package.\n</summary>")
	}
	if g.round != g.loaded {
		// The first request of a round: its steps.
		if g.round >= len(g.steps) {
			g.t.Errorf("request %d opens round %d, which the script does not have", c.N, g.round+1)
			return llmtest.Text("(no script)")
		}
		if len(g.queue) > 0 {
			g.t.Errorf("round %d left %d steps unused", g.loaded+1, len(g.queue))
		}
		g.queue, g.loaded = g.steps[g.round], g.round
	}
	if len(g.queue) == 0 {
		g.t.Errorf("request %d: the round's script is exhausted", c.N)
		return llmtest.Text("(script exhausted)")
	}
	s := g.queue[0]
	g.queue = g.queue[1:]
	return s(c)
}

func summaryRequest(c *llmtest.Call) bool {
	if n := len(c.Messages); n > 0 {
		for _, b := range c.Messages[n-1].Blocks {
			if strings.Contains(b.Text, "Do not call any tool") {
				return true
			}
		}
	}
	return strings.Contains(c.System, "hand-over summaries")
}

// results are the texts of the tool results the request answers.
func results(c *llmtest.Call) []string {
	var out []string
	if n := len(c.Messages); n > 0 {
		for _, b := range c.Messages[n-1].Blocks {
			if b.Type == conv.TypeToolResult {
				out = append(out, b.ResultText())
			}
		}
	}
	return out
}

func (g *script) result(c *llmtest.Call, i int) string {
	rs := results(c)
	if i >= len(rs) {
		g.t.Fatalf("request %d: want result %d, have %d", c.N, i, len(rs))
	}
	return rs[i]
}

// use is a tool call with input marshalled from in.
func use(name string, in map[string]any) llmtest.ToolCall {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return llmtest.Use(name, string(b))
}

func calls(text string, cs ...llmtest.ToolCall) llmtest.Reply { return llmtest.Calls(text, cs...) }

// numbered parses Read output ("    12\tline") into line number → text.
func numbered(text string) map[int]string {
	out := map[int]string{}
	for _, l := range strings.Split(text, "\n") {
		num, rest, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(num)); err == nil {
			out[n] = rest
		}
	}
	return out
}

// lineOf finds the line number of the first line containing s.
func lineOf(lines map[int]string, s string) int {
	best := 0
	for n, l := range lines {
		if strings.Contains(l, s) && (best == 0 || n < best) {
			best = n
		}
	}
	return best
}

var (
	matchRE   = regexp.MustCompile(`(?m)^([\w./-]+\.go):(\d+):(.*)$`)
	recallRE  = regexp.MustCompile(`recall (b\d+)`)
	priceRE   = regexp.MustCompile(`Name: "anthropic", Input: ([0-9.]+), Output: ([0-9.]+), CacheWrite: ([0-9.]+), CacheRead: ([0-9.]+)`)
	undefRE   = regexp.MustCompile(`(pricing/[\w.]+:\d+:\d+): undefined: (\w+)`)
	gotRE     = regexp.MustCompile(`got "([^"]*)"`)
	costRE    = regexp.MustCompile(`a turn: Cost = ([0-9.e+-]+), want`)
	exGotRE   = regexp.MustCompile(`(?s)got:\n(.*?)\nwant:`)
	okTimeRE  = regexp.MustCompile(`ok\s+\S+/conv\s+([0-9.]+s)`)
	slowRE    = regexp.MustCompile(`--- PASS: (\w+) \(([0-9.]+)s\)`)
	statRE    = regexp.MustCompile(`(\d+) files? changed(?:, (\d+) insertions?\(\+\))?(?:, (\d+) deletions?\(-\))?`)
	countRE   = regexp.MustCompile(`(?m)^(\d+)\s*$`)
	entriesRE = regexp.MustCompile(`(\d+) entries`)
	funcRE    = regexp.MustCompile(`^func (?:\([^)]*\) )?(\w+)[\[(]`)
)

// idOf returns the recall id the request shows for the result of the
// call whose input contains marker.
func idOf(c *llmtest.Call, marker string) string {
	for i, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type != conv.TypeToolUse || !strings.Contains(string(b.Input), marker) || i+1 >= len(c.Messages) {
				continue
			}
			for _, r := range c.Messages[i+1].Blocks {
				if r.Type == conv.TypeToolResult && r.ToolUseID == b.ToolUseID {
					if m := recallRE.FindStringSubmatch(r.ResultText()); m != nil {
						return m[1]
					}
				}
			}
		}
	}
	return ""
}

// rounds is the script: one list of steps per prompt.
func (g *script) rounds() [][]step {
	t := g.t
	var pricingGo map[int]string
	return [][]step{
		// Round 1: the tour.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("I'll start with the layout of the repository.", use("LS", map[string]any{"path": ".", "depth": 1}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				n := "several"
				if m := entriesRE.FindStringSubmatch(g.result(c, 0)); m != nil {
					n = m[1]
				}
				return calls(fmt.Sprintf("The top level has %s entries, one folder per package. The README should say what each holds.", n),
					use("Read", map[string]any{"file_path": "README.md"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("Now the pricing package itself.",
					use("LS", map[string]any{"path": "pricing"}),
					use("Read", map[string]any{"file_path": "pricing/pricing.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				pricingGo = numbered(g.result(c, 1))
				cost := lineOf(pricingGo, "func (t Table) Cost(")
				if cost == 0 {
					t.Fatalf("pricing.go has no Cost method:\n%s", g.result(c, 1))
				}
				return calls(fmt.Sprintf("Table.Cost is at pricing/pricing.go:%d. Let me find who calls the constructors.", cost),
					use("Grep", map[string]any{"pattern": `pricing\.(Anthropic|OpenAI|NoCache|ByName)\(`, "glob": "*.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				for _, m := range matchRE.FindAllStringSubmatch(g.result(c, 0), -1) {
					if !strings.HasPrefix(m[1], "pricing/") && !strings.HasSuffix(m[1], "_test.go") {
						g.callers = append(g.callers, m[1]+":"+m[2])
					}
				}
				if len(g.callers) == 0 {
					t.Fatalf("no callers found:\n%s", g.result(c, 0))
				}
				file, line, _ := strings.Cut(g.callers[0], ":")
				n, _ := strconv.Atoi(line)
				return calls(fmt.Sprintf("%d call sites outside the package; the first is %s. Reading around it.", len(g.callers), g.callers[0]),
					use("Read", map[string]any{"file_path": file, "offset": max(n-12, 1), "limit": 30}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("And where a Table's Cost is actually used for billing:",
					use("Grep", map[string]any{"pattern": `\.Cost\(`, "glob": "*.go", "path": "."}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				var file string
				var line int
				for _, m := range matchRE.FindAllStringSubmatch(g.result(c, 0), -1) {
					if strings.HasPrefix(m[1], "bench/") {
						file = m[1]
						line, _ = strconv.Atoi(m[2])
						break
					}
				}
				if file == "" {
					t.Fatalf("no Cost call in bench:\n%s", g.result(c, 0))
				}
				return calls(fmt.Sprintf("The benchmark bills requests at %s:%d.", file, line),
					use("Read", map[string]any{"file_path": file}),
					use("Grep", map[string]any{"pattern": "type Usage struct", "path": "llm"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				m := matchRE.FindStringSubmatch(g.result(c, 1))
				if m == nil {
					t.Fatalf("no Usage type:\n%s", g.result(c, 1))
				}
				n, _ := strconv.Atoi(m[2])
				return calls(fmt.Sprintf("The usage figures Cost takes come from llm.Usage at %s:%s.", m[1], m[2]),
					use("Read", map[string]any{"file_path": m[1], "offset": n, "limit": 30}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("Usage splits the prompt into uncached input, cache writes and cache reads, which is what Cost prices separately. Who else holds a Table?",
					use("Grep", map[string]any{"pattern": `pricing\.Table`, "glob": "*.go", "output_mode": "files_with_matches"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				out := g.result(c, 0)
				if !strings.Contains(out, "micro/") {
					t.Fatalf("micro does not use pricing.Table:\n%s", out)
				}
				return calls("micro holds one for its clearing policy; its package doc explains the rule, and policy.go applies it.",
					use("Read", map[string]any{"file_path": "micro/doc.go"}),
					use("Read", map[string]any{"file_path": "micro/policy.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				pol := numbered(g.result(c, 1))
				line := lineOf(pol, "func (p CacheAware) Decide(")
				if line == 0 {
					t.Fatalf("no CacheAware.Decide in micro/policy.go")
				}
				return calls(fmt.Sprintf("CacheAware.Decide (micro/policy.go:%d) uses the table's CacheWrite and CacheRead prices to weigh a cache rewrite against the tokens it frees. One more check: what the cache-aware policy does when a table has no cache.", line),
					use("Grep", map[string]any{"pattern": `Caches\(\)`, "glob": "*.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				p := priceRE.FindStringSubmatch(strings.Join(mapValues(pricingGo), "\n"))
				if p == nil {
					t.Fatalf("no Anthropic prices in pricing.go")
				}
				return llmtest.Text(fmt.Sprintf(`Here is the tour.

**Layout.** One folder per package: conv (the conversation model and its invariants), tokens (counting), toolresult and micro (compressing and clearing tool results), summarize and compact (summaries), assemble (building requests), llm (providers), transcript (the durable session record), agent (the loop), bench (the replay benchmark) and cmd/ctxkit (the CLI).

**Pricing.** pricing.Table holds dollars per million tokens: Input, Output, CacheWrite and CacheRead, plus Automatic for providers that cache by themselves. Cost (pricing/pricing.go:%d) is

    (input·Input + cacheWrite·CacheWrite + cacheRead·CacheRead + output·Output) / 1e6

Anthropic() is Input %s, Output %s, CacheWrite %s, CacheRead %s — writes at 1.25× and reads at 0.1× the input price.

**Callers.** %d places outside the package build tables, e.g. %s; the benchmark bills every replayed request with Cost, taking the input, cache write, cache read and output counts from llm.Usage. micro's cache-aware clearing policy is the other big user: it compares the rewrite a clear causes, priced at CacheWrite − CacheRead, with the reads it saves, and falls back to clearing eagerly when Caches() is false (NoCache).`,
					lineOf(pricingGo, "func (t Table) Cost("), p[1], p[2], p[3], p[4], len(g.callers), strings.Join(g.callers[:min(3, len(g.callers))], ", ")))
			},
		},
		// Round 2: how the benchmark replays and bills.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("I'll read the replay loop and the evidence measure.",
					use("LS", map[string]any{"path": "bench"}),
					use("Read", map[string]any{"file_path": "bench/replay.go"}),
					use("Read", map[string]any{"file_path": "bench/evidence.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				g.benchFuncs = nil
				for i, name := range []string{"bench/replay.go", "bench/evidence.go"} {
					lines := numbered(g.result(c, i+1))
					for n := 1; n <= len(lines)+1; n++ {
						if m := funcRE.FindStringSubmatch(lines[n]); m != nil {
							g.benchFuncs = append(g.benchFuncs, fmt.Sprintf("%s (%s:%d)", m[1], name, n))
						}
					}
				}
				if len(g.benchFuncs) == 0 {
					t.Fatalf("no functions in bench/replay.go and bench/evidence.go")
				}
				return calls(fmt.Sprintf("replay.go and evidence.go define %d functions, among them %s. The billing itself is the Cache type I read earlier; its methods:", len(g.benchFuncs), strings.Join(g.benchFuncs[:min(4, len(g.benchFuncs))], ", ")),
					use("Grep", map[string]any{"pattern": `^func \(c \*Cache\) \w+`, "path": "bench"}),
					use("Bash", map[string]any{"command": "go doc ./bench Replay; go doc ./bench Options"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				var methods []string
				for _, m := range matchRE.FindAllStringSubmatch(g.result(c, 0), -1) {
					if f := funcRE.FindStringSubmatch(m[3]); f != nil {
						methods = append(methods, fmt.Sprintf("Cache.%s (%s:%s)", f[1], m[1], m[2]))
					}
				}
				return llmtest.Text(fmt.Sprintf("How the benchmark works, from the code:\n\n- Replay walks each recorded session turn by turn and asks each strategy what it would send before every assistant turn; the functions are %s.\n- Billing: the Cache (bench/cache.go) models the provider's prompt cache as the longest common prefix with what was cached before, and prices each request with Table.Cost — uncached input at Input, the newly cached part at CacheWrite, the part read back at CacheRead, the response at Output. Its methods: %s.\n- Evidence recall (bench/evidence.go): for each assistant turn it collects the identifiers, paths, numbers and error strings the turn uses that first appeared in earlier tool results, and counts how many are still visible in what the strategy sent.\n\nSo a change to pricing.Table changes every cost figure the benchmark prints, and nothing else.",
					strings.Join(g.benchFuncs, ", "), strings.Join(methods, ", ")))
			},
		},
		// Round 3: String and tests, with a vet failure and a test failure.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("I'll track this in a todo list.",
					use("TodoWrite", map[string]any{"todos": []map[string]string{
						{"content": "Add Table.String", "status": "in_progress", "activeForm": "Adding Table.String"},
						{"content": "Write tests for String and Cost", "status": "pending", "activeForm": "Writing tests"},
						{"content": "Run go vet and go test on ./pricing", "status": "pending", "activeForm": "Running go vet and go test"},
						{"content": "Check formatting with gofmt", "status": "pending", "activeForm": "Checking formatting"},
					}}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				g.grepID = idOf(c, `pricing\\.(Anthropic`)
				if g.grepID == "" {
					t.Fatalf("request %d: the caller grep shows no recall id", c.N)
				}
				return calls(fmt.Sprintf("The grep of the callers was shortened in the history; recalling it (%s) to see every call site before changing the type.", g.grepID),
					use("recall", map[string]any{"id": g.grepID}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				n := len(matchRE.FindAllString(g.result(c, 0), -1))
				anchor := "// Caches reports whether the provider has a prompt cache."
				return calls(fmt.Sprintf("All %d matches build or look up tables; none formats one, so a String method changes no caller. Adding it before Caches.", n),
					use("Edit", map[string]any{"file_path": "pricing/pricing.go", "old_string": anchor,
						"new_string": "// String lists the prices per million tokens, for logs and reports.\nfunc (t Table) String() string {\n\treturn fmt.Sprintf(\"%s: input $%g/MTok, output $%g/MTok, cache write $%g/MTok, cache read $%g/MTok\",\n\t\tt.Name, t.Input, t.Output, t.CacheWrite, t.CacheRead)\n}\n\n" + anchor}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				g.testFile = "pricing/pricing_test.go"
				return calls("Now the tests.",
					use("Write", map[string]any{"file_path": g.testFile, "content": `package pricing

import (
	"math"
	"testing"
)

func TestString(t *testing.T) {
	got := Anthropic().String()
	want := "anthropic: input $3/MTok, output $15/MTok, cache write $3.75/MTok, cache read $0.30/MTok"
	if got != want {
		t.Errorf("String() = got %q, want %q", got, want)
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		name                                 string
		input, cacheWrite, cacheRead, output int
		want                                 float64
	}{
		{"input only", 1_000_000, 0, 0, 0, 3},
		{"output only", 0, 0, 0, 1_000_000, 15},
		{"cache write", 0, 1_000_000, 0, 0, 3.75},
		{"cache read", 0, 0, 1_000_000, 0, 0.30},
		{"a turn", 2_000, 30_000, 120_000, 800, 0.1686},
	}
	for _, tt := range tests {
		got := Anthropic().Cost(tt.input, tt.cacheWrite, tt.cacheRead, tt.output)
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Cost = %v, want %v", tt.name, got, tt.want)
		}
	}
}
`}),
					use("TodoWrite", map[string]any{"todos": []map[string]string{
						{"content": "Add Table.String", "status": "completed", "activeForm": "Adding Table.String"},
						{"content": "Write tests for String and Cost", "status": "completed", "activeForm": "Writing tests"},
						{"content": "Run go vet and go test on ./pricing", "status": "in_progress", "activeForm": "Running go vet and go test"},
						{"content": "Check formatting with gofmt", "status": "pending", "activeForm": "Checking formatting"},
					}}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go vet ./pricing", "description": "Vet the pricing package"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				m := undefRE.FindStringSubmatch(g.result(c, 0))
				if m == nil {
					t.Fatalf("go vet did not fail as expected:\n%s", g.result(c, 0))
				}
				g.vetLine = m[1]
				return calls(fmt.Sprintf("go vet fails: `undefined: %s` at %s — pricing.go had no imports at all. Adding the import.", m[2], m[1]),
					use("Edit", map[string]any{"file_path": "pricing/pricing.go", "old_string": "package pricing\n", "new_string": "package pricing\n\nimport \"fmt\"\n"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go vet ./pricing && go test ./pricing", "description": "Vet and test the pricing package"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				out := g.result(c, 0)
				m := gotRE.FindStringSubmatch(out)
				cm := costRE.FindStringSubmatch(out)
				if m == nil || cm == nil || !strings.Contains(out, "FAIL") {
					t.Fatalf("the tests did not fail as expected:\n%s", out)
				}
				g.gotString, g.turnCost = m[1], cm[1]
				return calls(fmt.Sprintf("Vet passes now; two test failures.\n\n1. TestString: String() gives %q. %%g prints 0.3, not 0.30; both say the same price, and %%g keeps OpenAI's 0.125 exact where a two-decimal format would round it to 0.13, so I'll keep %%g and fix the expectation.\n2. TestCost \"a turn\": Cost = %s, want 0.1686. My expected value was wrong: 2,000×3 + 30,000×3.75 + 120,000×0.30 + 800×15 = 6,000 + 112,500 + 36,000 + 12,000 = 166,500 micro-dollars = $0.1665.", m[1], cm[1]),
					use("Edit", map[string]any{"file_path": g.testFile, "old_string": "cache read $0.30/MTok\"", "new_string": "cache read $0.3/MTok\""}),
					use("Edit", map[string]any{"file_path": g.testFile, "old_string": "800, 0.1686}", "new_string": "800, 0.1665}"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go test -count=1 -v ./pricing", "description": "Run the pricing tests verbosely"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				out := g.result(c, 0)
				if !strings.Contains(out, "--- PASS: TestString") || !strings.Contains(out, "--- PASS: TestCost") {
					t.Fatalf("the tests did not pass:\n%s", out)
				}
				return calls("TestString and TestCost pass. Last, formatting.",
					use("Bash", map[string]any{"command": "gofmt -l pricing; echo gofmt exit $?"}),
					use("TodoWrite", map[string]any{"todos": []map[string]string{
						{"content": "Add Table.String", "status": "completed", "activeForm": "Adding Table.String"},
						{"content": "Write tests for String and Cost", "status": "completed", "activeForm": "Writing tests"},
						{"content": "Run go vet and go test on ./pricing", "status": "completed", "activeForm": "Running go vet and go test"},
						{"content": "Check formatting with gofmt", "status": "completed", "activeForm": "Checking formatting"},
					}}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return llmtest.Text(fmt.Sprintf("Done.\n\n- pricing/pricing.go: Table.String prints %q; the file now imports fmt (go vet had reported `undefined: fmt` at %s).\n- %s: TestString, and TestCost with five cases (input only, output only, cache write, cache read, and a mixed turn: Cost = %s, i.e. $0.1665).\n\ngo vet ./pricing and go test ./pricing pass; gofmt reports nothing.", g.gotString, g.vetLine, g.testFile, g.turnCost))
			},
		},
		// Round 4: ByName in any case, with a failed edit and a build error.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Grep", map[string]any{"pattern": "func ByName|switch name", "path": "pricing"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				m := matchRE.FindStringSubmatch(g.result(c, 0))
				if m == nil {
					t.Fatalf("no ByName:\n%s", g.result(c, 0))
				}
				n, _ := strconv.Atoi(m[2])
				return calls(fmt.Sprintf("ByName is at %s:%d.", m[1], n), use("Read", map[string]any{"file_path": m[1], "offset": n - 1, "limit": 14}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("I'll lower-case the name before the switch.",
					use("Edit", map[string]any{"file_path": "pricing/pricing.go", "old_string": "\t\treturn ", "new_string": "\t\treturn strings.ToLower(name) == name && "}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				out := g.result(c, 0)
				return calls("That edit was wrong: "+firstLine(out)+" I meant the switch itself, which is unique.",
					use("Edit", map[string]any{"file_path": "pricing/pricing.go", "old_string": "\tswitch name {", "new_string": "\tswitch strings.ToLower(name) {"}),
					use("Edit", map[string]any{"file_path": "pricing/pricing.go", "old_string": "// ByName returns the table called name: anthropic, openai or nocache.",
						"new_string": "// ByName returns the table called name, in any case: anthropic, openai or\n// nocache."}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("And a test.",
					use("Edit", map[string]any{"file_path": g.testFile, "old_string": "func TestCost(t *testing.T) {",
						"new_string": "func TestByName(t *testing.T) {\n\tfor _, name := range []string{\"anthropic\", \"ANTHROPIC\", \"Anthropic\", \"OpenAI\", \"nocache\"} {\n\t\tif _, ok := ByName(name); !ok {\n\t\t\tt.Errorf(\"ByName(%q) not found\", name)\n\t\t}\n\t}\n\tif _, ok := ByName(\"gemini\"); ok {\n\t\tt.Errorf(\"ByName(gemini) found a table\")\n\t}\n}\n\nfunc TestCost(t *testing.T) {"}),
					use("Bash", map[string]any{"command": "go test ./pricing"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				m := undefRE.FindStringSubmatch(g.result(c, 1))
				if m == nil {
					t.Fatalf("the build did not fail as expected:\n%s", g.result(c, 1))
				}
				return calls(fmt.Sprintf("The build fails at %s: `undefined: %s`. Adding it to the imports.", m[1], m[2]),
					use("Edit", map[string]any{"file_path": "pricing/pricing.go", "old_string": "import \"fmt\"\n", "new_string": "import (\n\t\"fmt\"\n\t\"strings\"\n)\n"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go test -count=1 -run 'ByName|String' -v ./pricing && go vet ./pricing"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				if !strings.Contains(g.result(c, 0), "--- PASS: TestByName") {
					t.Fatalf("TestByName did not pass:\n%s", g.result(c, 0))
				}
				return calls("TestByName passes. Now the callers' error messages.",
					use("Grep", map[string]any{"pattern": `pricing\.ByName\(`, "glob": "*.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				var reads []llmtest.ToolCall
				var where []string
				for _, m := range matchRE.FindAllStringSubmatch(g.result(c, 0), -1) {
					n, _ := strconv.Atoi(m[2])
					reads = append(reads, use("Read", map[string]any{"file_path": m[1], "offset": n, "limit": 6}))
					where = append(where, m[1]+":"+m[2])
				}
				if len(reads) == 0 {
					t.Fatalf("no ByName callers:\n%s", g.result(c, 0))
				}
				return calls("ByName is called at "+strings.Join(where, " and ")+".", reads...)
			},
			func(c *llmtest.Call) llmtest.Reply {
				var msgs []string
				for _, r := range results(c) {
					for _, l := range numbered(r) {
						if strings.Contains(l, "unknown") {
							msgs = append(msgs, strings.TrimSpace(l))
						}
					}
				}
				text := "ByName now lower-cases its argument (strings.ToLower), so ANTHROPIC, Anthropic and OpenAI all work; TestByName covers them and an unknown name. pricing.go imports fmt and strings."
				if len(msgs) > 0 {
					text += "\n\nThe callers report an unknown name themselves and list the known ones in lower case, which stays right:\n\n    " + strings.Join(msgs, "\n    ")
				}
				return llmtest.Text(text)
			},
		},
		// Round 5: a runnable example, wrong output first.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("",
					use("Write", map[string]any{"file_path": "pricing/example_test.go", "content": `package pricing_test

import (
	"fmt"

	"github.com/ctxkit/ctxkit/pricing"
)

// A turn that read most of its prompt from the cache.
func ExampleTable_Cost() {
	t := pricing.Anthropic()
	fmt.Printf("$%.4f\n", t.Cost(2_000, 30_000, 120_000, 800))
	// Output: $0.1690
}
`}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go test -count=1 -run Example -v ./pricing"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				out := g.result(c, 0)
				m := exGotRE.FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("the example did not fail as expected:\n%s", out)
				}
				got := strings.TrimSpace(m[1])
				return calls(fmt.Sprintf("The example prints %s, not $0.1690: I rounded by hand instead of using the figure TestCost checks (%s). Fixing the expected output.", got, g.turnCost),
					use("Edit", map[string]any{"file_path": "pricing/example_test.go", "old_string": "// Output: $0.1690", "new_string": "// Output: " + got}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go test -count=1 ./pricing && go doc pricing.Table.Cost"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				out := g.result(c, 0)
				if !strings.Contains(out, "ok") {
					t.Fatalf("pricing tests failed:\n%s", out)
				}
				return llmtest.Text("ExampleTable_Cost now passes and go test runs it with the other tests; go doc shows Cost with its comment, and the example appears under it on pkg.go.dev. The example and TestCost's \"a turn\" case agree on $0.1665 for 2,000 input, 30,000 cache-write, 120,000 cache-read and 800 output tokens.")
			},
		},
		// Round 6: the conv tests.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "go test -count=1 ./conv", "description": "Run the conv tests"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				m := okTimeRE.FindStringSubmatch(g.result(c, 0))
				if m == nil {
					t.Fatalf("conv tests did not pass:\n%s", g.result(c, 0))
				}
				return calls(fmt.Sprintf("The conv tests pass in %s. Counting them and finding the slowest.", m[1]),
					use("Bash", map[string]any{"command": "go test -count=1 -v ./conv 2>&1 | grep -c '^=== RUN'"}),
					use("Bash", map[string]any{"command": "go test -count=1 -v ./conv 2>&1 | grep -E '^\\s*--- PASS' | sort -t'(' -k2 -rn | head -5"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				n := "?"
				if m := countRE.FindStringSubmatch(g.result(c, 0)); m != nil {
					n = m[1]
				}
				g.convRuns = n
				for _, m := range slowRE.FindAllStringSubmatch(g.result(c, 1), -1) {
					if g.slowest == "" {
						g.slowest, g.slowTime = m[1], m[2]
					}
				}
				if g.slowest == "" {
					t.Fatalf("no timings:\n%s", g.result(c, 1))
				}
				return calls(fmt.Sprintf("%s test runs (subtests included); the slowest top-level test is %s at %ss. Where are the tests defined?", n, g.slowest, g.slowTime),
					use("Grep", map[string]any{"pattern": `^func (Test|Fuzz)\w+`, "path": "conv", "output_mode": "files_with_matches"}),
					use("Grep", map[string]any{"pattern": `^func (Test|Fuzz)\w+`, "path": "conv", "head_limit": 40}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				files := strings.Count(g.result(c, 0), "_test.go")
				top := len(matchRE.FindAllString(g.result(c, 1), -1))
				g.convTop, g.convFiles = top, files
				return calls(fmt.Sprintf("%d top-level tests in %d files. Let me see what %s does.", top, files, g.slowest),
					use("Grep", map[string]any{"pattern": "func " + g.slowest + `\(`, "path": "conv"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				m := matchRE.FindStringSubmatch(g.result(c, 0))
				if m == nil {
					t.Fatalf("no round-trip test:\n%s", g.result(c, 0))
				}
				n, _ := strconv.Atoi(m[2])
				return calls(fmt.Sprintf("It is at %s:%d.", m[1], n),
					use("Read", map[string]any{"file_path": m[1], "offset": n, "limit": 45}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return llmtest.Text(fmt.Sprintf("conv's tests pass. There are %d top-level test and fuzz functions in %d test files; go test -v counts %s runs with the subtests. The slowest is %s (%ss), shown above; the package as a whole finishes well under a second.", g.convTop, g.convFiles, g.convRuns, g.slowest, g.slowTime))
			},
		},
		// Round 7: the diff and a commit message.
		{
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "git status --short && git diff --stat"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("", use("Bash", map[string]any{"command": "git diff pricing/pricing.go"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				return calls("Before proposing the message, one last run of everything touched.",
					use("Bash", map[string]any{"command": "gofmt -l pricing && go vet ./pricing && go test -count=1 ./pricing ./conv"}))
			},
			func(c *llmtest.Call) llmtest.Reply {
				stat := "pricing/pricing.go changed"
				if m := statRE.FindString(strings.Join(allResults(c), "\n")); m != "" {
					stat = m
				}
				return llmtest.Text(fmt.Sprintf("The tracked change is %s, plus two new files, pricing/pricing_test.go and pricing/example_test.go.\n\nProposed commit message:\n\n    pricing: add Table.String, accept any case in ByName\n\n    String lists a table's prices per million tokens (with %%g, so\n    0.125 stays exact). ByName lower-cases its argument, so ANTHROPIC\n    and OpenAI work. Tests cover String, ByName and Cost, and\n    ExampleTable_Cost shows a cached turn's cost.", stat))
			},
		},
	}
}

// allResults are the texts of every tool result in the request.
func allResults(c *llmtest.Call) []string {
	var out []string
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeToolResult {
				out = append(out, b.ResultText())
			}
		}
	}
	return out
}

func mapValues(m map[int]string) []string {
	out := make([]string, 0, len(m))
	for i := 1; i <= len(m)+1; i++ {
		if v, ok := m[i]; ok {
			out = append(out, v)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// moduleRoot walks up to go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// copyTree copies the module's sources (Go files, Markdown, go.mod,
// go.sum, conv's test data) to dst: what an agent working on ctxkit sees,
// without binaries and recorded corpora.
func copyTree(t *testing.T, root, dst string) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			name := d.Name()
			// Leave out hidden folders, test data (but conv's, whose tests
			// run), scratch folders, the demo itself and this generator.
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" && rel != filepath.Join("conv", "testdata") ||
				strings.Contains(name, "tmp") || name == "demo" || rel == filepath.Join("agent", "internal")) {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		inTestdata := strings.HasPrefix(rel, filepath.Join("conv", "testdata"))
		if !inTestdata && !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".md") && name != "go.mod" && name != "go.sum" && name != ".gitignore" && !strings.HasSuffix(name, ".bloom") {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > 2<<20 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func gitInit(t *testing.T, dir string) {
	env := append(os.Environ(), "GIT_AUTHOR_NAME=ctxkit", "GIT_AUTHOR_EMAIL=demo@ctxkit.invalid",
		"GIT_COMMITTER_NAME=ctxkit", "GIT_COMMITTER_EMAIL=demo@ctxkit.invalid",
		"GIT_AUTHOR_DATE=2026-01-05T09:00:00Z", "GIT_COMMITTER_DATE=2026-01-05T09:00:00Z")
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "ctxkit sources"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
