package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// The window is a hard limit: whatever shape a request has, no request
// the proxy sends upstream is over compact's limit for it, while every
// one passes the llmtest validator (tool pairs, alternation, thinking
// signatures).

// shape is a generated conversation.
type shape struct {
	name       string
	provider   string // providerAnthropic or providerOpenAI (chat completions)
	headPaste  int    // bytes of the first user message
	turns      int    // tool rounds
	result     int    // bytes of each tool result
	input      int    // bytes of each tool call's command
	lastResult int    // bytes of the newest result (unconsumed), 0: result
	paste      int    // bytes of a new user message after the rounds, 0: none
	thinking   bool
	maxTokens  int
	image      int // bytes of an image a last tool call returns (Anthropic), 0: none
	sysAfter   int // Anthropic: a mid-conversation system message after this round's results, 0: none
}

// filler is n bytes of text with escapes, non-ASCII and line ends.
func filler(seed string, n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "%s line %d: \"quoted\" value\twith tab\n", seed, i)
		case 1:
			fmt.Fprintf(&sb, "func F%d() { return %d } // ü é 文字\n", i, i*7)
		default:
			fmt.Fprintf(&sb, "%s plain text line number %d of the body\n", seed, i)
		}
	}
	return sb.String()[:n]
}

// anthropicBody is the Messages request of s after n rounds.
func (s shape) anthropicBody(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"model":"claude-sonnet-4-5","max_tokens":%d,"system":[{"type":"text","text":"You are an agent.","cache_control":{"type":"ephemeral"}}],`, s.maxTokens)
	b.WriteString(`"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],`)
	if s.thinking {
		b.WriteString(`"thinking":{"type":"enabled","budget_tokens":1024},`)
	}
	b.WriteString(`"messages":[`)
	head := "Fix the tests."
	if s.headPaste > 0 {
		head = filler("head", s.headPaste)
	}
	b.WriteString(`{"role":"user","content":` + q(head) + `}`)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%s_%d", s.name, i)
		cmd := fmt.Sprintf("go test ./p%d", i)
		if s.input > 0 {
			cmd += " # " + filler("cmd", s.input)
		}
		b.WriteString(`,{"role":"assistant","content":[`)
		if s.thinking {
			th := fmt.Sprintf("Round %d.", i)
			fmt.Fprintf(&b, `{"type":"thinking","thinking":%s,"signature":%s},`, q(th), q(llmtest.Signature(th)))
		}
		fmt.Fprintf(&b, `{"type":"text","text":%s},{"type":"tool_use","id":%q,"name":"Bash","input":{"command":%s}}]}`, q(fmt.Sprintf("Step %d.", i)), id, q(cmd))
		size := s.result
		if i == n && s.lastResult > 0 {
			size = s.lastResult
		}
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":%s}]}`, id, q(filler(fmt.Sprintf("r%d", i), max(size, 1))))
		if i == s.sysAfter {
			// Claude Code's default model: instructions between turns.
			b.WriteString(`,{"role":"system","content":[{"type":"text","text":"The tools changed."}]}`)
		}
	}
	if s.paste > 0 {
		b.WriteString(`,{"role":"assistant","content":[{"type":"text","text":"Done so far."}]}`)
		b.WriteString(`,{"role":"user","content":[{"type":"text","text":` + q(filler("paste", s.paste)) + `}]}`)
	}
	if s.image > 0 {
		// A screenshot read back by a tool: an image in a tool result.
		img := base64.StdEncoding.EncodeToString(make([]byte, s.image))
		fmt.Fprintf(&b, `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%s_img","name":"Bash","input":{"command":"screenshot"}}]}`, s.name)
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%s_img","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":%q}}]}]}`, s.name, img)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// chatBody is the chat completions request of s after n rounds.
func (s shape) chatBody(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"model":"gpt-5.1","max_completion_tokens":%d,"prompt_cache_key":%q,"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}}],"messages":[`, s.maxTokens, s.name)
	head := "Fix the tests."
	if s.headPaste > 0 {
		head = filler("head", s.headPaste)
	}
	b.WriteString(`{"role":"system","content":"You are an agent."},{"role":"user","content":` + q(head) + `}`)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("call_%s_%d", s.name, i)
		cmd := fmt.Sprintf("go test ./p%d", i)
		if s.input > 0 {
			cmd += " # " + filler("cmd", s.input)
		}
		args, _ := json.Marshal(map[string]string{"command": cmd})
		fmt.Fprintf(&b, `,{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"shell","arguments":%s}}]}`, id, q(string(args)))
		size := s.result
		if i == n && s.lastResult > 0 {
			size = s.lastResult
		}
		fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":%q,"content":%s}`, id, q(filler(fmt.Sprintf("r%d", i), max(size, 1))))
	}
	if s.paste > 0 {
		b.WriteString(`,{"role":"assistant","content":"Done so far."},{"role":"user","content":` + q(filler("paste", s.paste)) + `}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// checkWindow sends s's requests at a few points of its history through
// a proxy with the given window and checks every upstream request.
func checkWindow(t *testing.T, s shape, window int) {
	up := llmtest.NewServer(t, llmtest.Config{Window: window})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: window})
	points := []int{s.turns}
	if s.turns >= 3 {
		points = []int{s.turns / 3, 2 * s.turns / 3, s.turns}
	}
	for _, n := range points {
		path, body := "/v1/messages", s.anthropicBody(n)
		if s.provider == providerOpenAI {
			path, body = "/v1/chat/completions", s.chatBody(n)
		}
		req, _ := http.NewRequest(http.MethodPost, p.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", "sk-ant-test")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("Authorization", "Bearer sk-test")
		req.Header.Set("X-Claude-Code-Session-Id", s.name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s at %d rounds: status %d", s.name, n, resp.StatusCode)
		}
	}
	lowered := 0
	for _, c := range up.Calls() {
		if c.Status != http.StatusOK {
			t.Errorf("%s: upstream request %d answered %d: %s", s.name, c.N, c.Status, c.Error)
			continue
		}
		if strings.HasPrefix(c.System, "You are summarizing") {
			continue // the proxy's own summary request: the upstream took it (status 200)
		}
		if c.MaxTokens < s.maxTokens {
			lowered++ // the window could not hold the answer the client asked (the server refuses that)
		}
		limit := compact.Config{Window: window, MaxOutput: s.maxTokens}.Budget().Limit
		if est := countBody(t, c.Body); est > limit || c.Prompt > limit {
			t.Errorf("%s: upstream request %d is %d tokens by the proxy's count, %d by the server's; the limit is %d", s.name, c.N, est, c.Prompt, limit)
		}
	}
	m := metricsText(t, p)
	if !strings.Contains(m, `ctxkit_serve_over_window_total{provider="`+s.provider+`"} 0`) {
		t.Errorf("%s: over-window requests counted:\n%s", s.name, grep(m, "over_window"))
	}
	if want := fmt.Sprintf(`ctxkit_serve_max_tokens_lowered_total{provider="%s"} %d`, s.provider, lowered); !strings.Contains(m, want) {
		t.Errorf("%s: %d requests went upstream with max_tokens lowered; the metric says\n%s", s.name, lowered, grep(m, "max_tokens_lowered"))
	}
}

func TestWindowIsHardLimit(t *testing.T) {
	const window = 30_000
	tests := []shape{
		{name: "huge-head-paste", headPaste: 400_000, turns: 2, result: 500},
		{name: "huge-paste-last", turns: 6, result: 2_000, paste: 300_000, thinking: true},
		{name: "one-huge-result", turns: 5, result: 1_000, lastResult: 500_000, thinking: true},
		{name: "huge-old-result", turns: 1, result: 300_000},
		{name: "huge-tool-inputs", turns: 8, result: 300, input: 40_000, thinking: true},
		{name: "tiny-turns", turns: 3_000, result: 150},
		{name: "big-max-tokens", turns: 30, result: 6_000, maxTokens: 64_000, thinking: true},
		{name: "screenshot", turns: 4, result: 2_000, image: 600_000},
		{name: "system-message", turns: 12, result: 8_000, sysAfter: 1, thinking: true},
		{name: "chat-huge-paste", provider: providerOpenAI, turns: 4, result: 800, paste: 300_000},
		{name: "chat-huge-result", provider: providerOpenAI, turns: 4, result: 800, lastResult: 400_000},
		{name: "chat-huge-args", provider: providerOpenAI, turns: 6, result: 300, input: 50_000},
		{name: "chat-tiny-turns", provider: providerOpenAI, turns: 2_000, result: 120},
	}
	for _, s := range tests {
		t.Run(s.name, func(t *testing.T) {
			if s.provider == "" {
				s.provider = providerAnthropic
			}
			if s.maxTokens == 0 {
				s.maxTokens = 4096
			}
			checkWindow(t, s, window)
		})
	}
}

// TestWindowIsHardLimitGenerated draws shapes from a fixed seed: a
// failure names the shape, which reproduces it.
func TestWindowIsHardLimitGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("generated shapes; skipped with -short")
	}
	rng := rand.New(rand.NewPCG(14, 2026))
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	big := func() int { return pick(0, 0, 200, 3_000, 40_000, 250_000) }
	for i := range 16 {
		s := shape{
			name:       fmt.Sprintf("gen-%d", i),
			provider:   []string{providerAnthropic, providerOpenAI}[rng.IntN(2)],
			headPaste:  big(),
			turns:      pick(1, 2, 5, 20, 300),
			result:     pick(50, 400, 2_000, 8_000),
			input:      pick(0, 0, 200, 3_000, 12_000), // a 60 kB shell command takes ~20 ms to classify
			lastResult: big(),
			paste:      big(),
			thinking:   rng.IntN(2) == 0,
			maxTokens:  pick(1024, 8192, 32_000),
		}
		if s.provider == providerOpenAI {
			s.thinking = false
		}
		window := pick(20_000, 60_000)
		t.Run(fmt.Sprintf("%+v/window=%d", s, window), func(t *testing.T) { checkWindow(t, s, window) })
	}
}

// TestWindowResponses: a Responses API request carrying its full input
// (llmtest serves no Responses API, so the upstream echoes): every body
// sent is under the limit, valid JSON, and every function call output
// still has its call.
func TestWindowResponses(t *testing.T) {
	const window = 30_000
	echo, bodies := echoUpstream(t, `{"object":"response","output":[],"usage":{"input_tokens":10,"output_tokens":2}}`)
	p := newProxy(t, echo.URL, Config{Window: window})
	items := []string{`{"role":"user","content":[{"type":"input_text","text":` + q(filler("head", 200_000)) + `}]}`}
	for i := range 30 {
		items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"shell","arguments":%s}`, i, q(fmt.Sprintf(`{"command":"cat f%d.go"}`, i))),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(filler(fmt.Sprint("out", i), 6_000))))
	}
	items = append(items, `{"role":"user","content":[{"type":"input_text","text":`+q(filler("paste", 150_000))+`}]}`)
	for _, n := range []int{21, len(items)} {
		body := []byte(`{"model":"gpt-5.1","max_output_tokens":4096,"input":[` + strings.Join(items[:n], ",") + `]}`)
		resp, err := http.Post(p.URL+"/v1/responses", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	limit := compact.Config{Window: window, MaxOutput: 4096}.Budget().Limit
	for i, b := range bodies() {
		if !json.Valid(b) {
			t.Fatalf("request %d: not JSON", i)
		}
		var x struct {
			Input []struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"input"`
		}
		if json.Unmarshal(b, &x) != nil || len(x.Input) == 0 {
			continue // a summary request
		}
		if est := countBody(t, b); est > limit {
			t.Errorf("request %d: %d tokens, over the limit %d", i, est, limit)
		}
		// The user's first words stay (in the summary's kept words, or
		// cut), and a summary is an input_text part.
		if !bytes.Contains(b, []byte(`head line 0:`)) || bytes.Contains(b, []byte(`"type":"text"`)) {
			t.Errorf("request %d: the first user message lost its words or got a part the Responses API refuses: %.300s", i, b)
		}
		calls := map[string]bool{}
		for _, it := range x.Input {
			switch it.Type {
			case "function_call":
				calls[it.CallID] = true
			case "function_call_output":
				if !calls[it.CallID] {
					t.Errorf("request %d: output of call %s without its call", i, it.CallID)
				}
			}
		}
	}
}

// TestWindowCodex: Codex's Responses requests — a developer message,
// encrypted reasoning before every call, a compaction item — through the
// Responses stand-in, which refuses a reasoning item not followed by its
// output item and encrypted content changed in any way: every request is
// accepted and under the limit, and what the compaction item fixed
// (the history before it) goes as it came.
func TestWindowCodex(t *testing.T) {
	// Small enough that the session crosses the hard threshold, where the
	// engine compacts whatever clearing freed.
	const window = 20_000
	up := llmtest.NewServer(t, llmtest.Config{Window: window})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: window})
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Read every file."}]}`,
		`{"type":"compaction","encrypted_content":` + q(llmtest.EncryptedContent("what happened before")) + `}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Go on."}]}`,
	}
	fixed := strings.Join(items[:3], ",")
	for i := range 24 {
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":%s}`, i, q(llmtest.EncryptedContent(fmt.Sprintf("reasoning %d", i)))),
			fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"shell","arguments":%s}`, i, q(fmt.Sprintf(`{"command":"cat f%d.go"}`, i))),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(filler(fmt.Sprint("out", i), 6_000))))
	}
	for _, n := range []int{31, 52, len(items)} {
		body := []byte(`{"model":"gpt-5.1-codex","max_output_tokens":4096,"store":false,"stream":false,"prompt_cache_key":"codex-1","include":["reasoning.encrypted_content"],"input":[` + strings.Join(items[:n], ",") + `]}`)
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/responses", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("at %d items: status %d", n, resp.StatusCode)
		}
	}
	limit := compact.Config{Window: window, MaxOutput: 4096}.Budget().Limit
	rewritten, onPrefix := 0, 0
	for _, c := range up.Calls() {
		if c.Status != http.StatusOK {
			t.Errorf("upstream request %d answered %d: %s", c.N, c.Status, c.Error)
			continue
		}
		if c.API != llmtest.Responses {
			continue // a transcript summary request
		}
		if isSummaryCall(c) {
			onPrefix++ // a summary on the client's own input (checked below as any other)
		}
		if est := countBody(t, c.Body); est > limit {
			t.Errorf("upstream request %d: %d tokens, over the limit %d", c.N, est, limit)
		}
		if !bytes.Contains(c.Body, []byte(`"input":[`+fixed+`,`)) {
			t.Errorf("upstream request %d: the history up to the compaction item changed: %.400s", c.N, c.Body)
		}
		if bytes.Contains(c.Body, []byte("recall ")) {
			rewritten++
		}
	}
	if rewritten == 0 || onPrefix == 0 {
		t.Errorf("%d requests rewritten, %d summaries on the client's prefix; want both", rewritten, onPrefix)
	}
}

// TestDropKeepsUserWords: turns taken out to fit the window (a summary, or
// a drop marker) keep the user's own words verbatim (compact's
// UserBudget).
func TestDropKeepsUserWords(t *testing.T) {
	const window = 30_000
	echo, bodies := echoUpstream(t, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":2}}`)
	p := newProxy(t, echo.URL, Config{Window: window})
	var msgs []string
	msgs = append(msgs, `{"role":"user","content":"Fix the tests."}`,
		`{"role":"assistant","content":[{"type":"text","text":"On it."}]}`,
		`{"role":"user","content":[{"type":"text","text":"Constraint: NEVER touch vendor/."}]}`)
	for i := range 6 {
		size := 30_000
		if i == 5 {
			size = 80_000 // the last step alone leaves no room for a summary
		}
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Read","input":{"file_path":"/r/f%d.go"}}]}`, i, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%s}]}`, i, q(filler(fmt.Sprint("f", i), size))))
	}
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[` + strings.Join(msgs, ",") + `]}`)
	resp, data := p.post(t, "/v1/messages", "words", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	all := bodies()
	last := all[len(all)-1]
	if !bytes.Contains(last, []byte("NEVER touch vendor/")) || !recallMark.Match(last) {
		t.Fatalf("the user's words or the recall ids of what went are missing: %.600s", last)
	}
	if limit := (compact.Config{Window: window, MaxOutput: 4096}).Budget().Limit; countBody(t, last) > limit {
		t.Fatal("over the limit")
	}
}

// TestCutIsStable: a request cut to fit the window, sent again (a
// client's retry, or a second replica), goes upstream byte-identical: the
// same history is not decided on twice. (The next turn usually summarizes the cut content away: at the
// limit, the request is over the soft threshold.)
func TestCutIsStable(t *testing.T) {
	const window = 30_000
	echo, bodies := echoUpstream(t, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":2}}`)
	p := newProxy(t, echo.URL, Config{Window: window})
	s := shape{name: "stable", turns: 2, result: 500, paste: 300_000, maxTokens: 4096}
	body := s.anthropicBody(2)
	var decided []int
	for range 2 {
		if resp, data := p.post(t, "/v1/messages", s.name, body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
		ds, _, err := p.tenant(t).Decisions(context.Background(), "cc:"+s.name)
		if err != nil {
			t.Fatal(err)
		}
		decided = append(decided, len(rewrites(ds)))
	}
	if decided[0] == 0 || decided[1] != decided[0] {
		t.Fatalf("decisions after each request %v: want the first request's and none from the second", decided)
	}
	var got [][]byte
	for _, b := range bodies() {
		if !bytes.Contains(b, []byte(`"Summarize this part`)) {
			got = append(got, b) // not the proxy's own summary request
		}
	}
	if len(got) != 2 || !recallMark.Match(got[0]) {
		t.Fatalf("%d requests upstream; the first cut: %v", len(got), len(got) > 0 && recallMark.Match(got[0]))
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Fatal("the same request went upstream differently the second time")
	}
}

// TestRungOneInTheProxy: a 60 kB Bash log whose round ended (the model
// answered without a tool, the user spoke again) goes upstream in its
// per-tool compressed form (rung 1), its original stored for recall, and
// the newest message is the client's.
func TestRungOneInTheProxy(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{})
	// A window the log nears: rung 1 is taken near the window whatever it costs
	// (engine.roundPays); further from it, only when it pays back.
	p := newProxy(t, up.URL, Config{Window: 24000})
	var log strings.Builder
	for i := 0; log.Len() < 60_000; i++ {
		fmt.Fprintf(&log, "=== RUN   TestCase%d\n--- PASS: TestCase%d (0.00s)\n", i, i)
	}
	log.WriteString("--- FAIL: TestLast (0.01s)\n    last_test.go:12: want 2, got 3\nFAIL\nexit status 1\nFAIL\tgithub.com/x/y\t0.3s\n")
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[` +
		`{"role":"user","content":"Run the tests."},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + q(log.String()) + `,"is_error":true}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"TestLast fails: want 2, got 3."}]},` +
		`{"role":"user","content":[{"type":"text","text":"Fix it."}]}]}`)
	if resp, data := p.post(t, "/v1/messages", "rung1", body); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	sent := up.Last().Body
	if len(sent) >= len(body)/2 || !bytes.Contains(sent, []byte("TestLast")) {
		t.Fatalf("the ended round's log went upstream at %d of %d bytes: %.500s", len(sent), len(body), sent)
	}
	checkSpliced(t, body, sent)
	c, _ := parseAnthropic(body)
	if _, err := p.original(t, c.Messages[2].Blocks[0].Hash); err != nil {
		t.Fatalf("the log's original is not stored: %v", err)
	}
}

// TestResponsesNewestItemKept: when the engine summarizes everything
// before the newest user message, the Responses API takes the summary as
// an item of its own (it does not ask roles to alternate, as Messages
// does), so the client's newest item goes upstream byte for byte.
func TestResponsesNewestItemKept(t *testing.T) {
	echo, bodies := echoUpstream(t, `{"object":"response","output":[],"usage":{"input_tokens":10,"output_tokens":2}}`)
	p := newProxy(t, echo.URL, Config{Window: 5000})
	items := []string{`{"role":"user","content":[{"type":"input_text","text":"Read the files."}]}`}
	for i := range 12 {
		items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"shell","arguments":%s}`, i, q(fmt.Sprintf(`{"command":"cat f%d.go"}`, i))),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(filler(fmt.Sprint("out", i), 3_000))))
	}
	// The newest message alone fills the pinned tail: everything before
	// it is summarized.
	newest := `{"role":"user","content":[{"type":"input_text","text":` + q("Now fix it. "+filler("ask", 3000)) + `}]}`
	items = append(items, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Read them all."}]}`, newest)
	body := []byte(`{"model":"gpt-5.1","max_output_tokens":1024,"input":[` + strings.Join(items, ",") + `]}`)
	resp, err := http.Post(p.URL+"/v1/responses", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sent := bodies()
	last := sent[len(sent)-1]
	var x struct {
		Input []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(last, &x); err != nil || len(x.Input) < 2 {
		t.Fatalf("the request sent: %v %.300s", err, last)
	}
	if got := string(x.Input[len(x.Input)-1]); got != newest {
		t.Errorf("the newest item went as %.200s, not as the client sent it", got)
	}
	if prev := x.Input[len(x.Input)-2]; !bytes.Contains(prev, []byte("[Summary of")) || !bytes.Contains(prev, []byte(`"type":"message","role":"user"`)) {
		t.Errorf("no summary item before the newest: %.300s", prev)
	}
}
