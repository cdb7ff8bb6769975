package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// TestSummaryReusesClientPrefix: when the proxy compacts with the
// client's model, its summary request is the client's own request — every
// byte of the upstream's previous request but its newest message (whose
// cache breakpoint moved) — with the instruction appended as the final
// user turn, sent with the client's headers; the upstream reports a cache
// read. With another --summary-model, the summary goes as a transcript.
func TestSummaryReusesClientPrefix(t *testing.T) {
	tests := []struct {
		name         string
		summaryModel string
		stream       bool
		wantPrefix   bool
	}{
		{"client's model", "", false, true},
		{"client's model, streamed", "", true, true},
		{"same model named", "claude-sonnet-4-5", false, true},
		{"another summary model", "claude-haiku-4-5", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
			up.Handle(summaryAware)
			p := newProxy(t, up.URL, Config{Window: 20_000, SummaryModel: tt.summaryModel})
			s := sim{name: "pfx", resultSize: 4000, say: 1200}
			var sum, prev *llmtest.Call
			for n := 1; n <= 40 && sum == nil; n++ {
				body := s.body(n)
				if tt.stream {
					body = bytes.Replace(body, []byte(`"stream":false`), []byte(`"stream":true`), 1)
				}
				if resp, data := p.post(t, "/v1/messages", "pfx", body); resp.StatusCode != 200 {
					t.Fatalf("turn %d: %d %s", n, resp.StatusCode, data)
				}
				calls := up.Calls()
				for i, c := range calls {
					if isSummaryCall(c) && sum == nil {
						sum, prev = c, calls[i-1]
					}
				}
			}
			if sum == nil {
				t.Fatal("the proxy never summarized")
			}
			nsum := 0
			for _, c := range up.Calls() {
				if isSummaryCall(c) {
					nsum++
				}
			}
			if nsum != 1 {
				t.Errorf("%d summary requests, want 1 (no fallback)", nsum)
			}
			metrics := metricsText(t, p)
			if !strings.Contains(metrics, `ctxkit_serve_compactions_total{method="model"}`) || strings.Contains(metrics, `method="extractive"`) {
				t.Errorf("want model compactions only:\n%s", grep(metrics, "compactions"))
			}
			onPrefix := sum.System != SummaryPrompt
			if onPrefix != tt.wantPrefix {
				t.Fatalf("summary on the client's prefix: %v, want %v (system %.80q)", onPrefix, tt.wantPrefix, sum.System)
			}
			if sum.Header.Get("X-Api-Key") != "sk-ant-test-secret" {
				t.Error("the summary request does not carry the client's key")
			}
			if !tt.wantPrefix {
				if sum.Model != tt.summaryModel {
					t.Errorf("summary model %q, want %q", sum.Model, tt.summaryModel)
				}
				return
			}
			if sum.Model != "claude-sonnet-4-5" || sum.Stream != tt.stream {
				t.Errorf("summary request model %q stream %v; want the client's", sum.Model, sum.Stream)
			}
			if sum.Header.Get("Anthropic-Beta") == "" {
				t.Error("the summary request lacks the client's anthropic-beta header")
			}
			pr, err := parseAnthropic(prev.Body)
			if err != nil {
				t.Fatal(err)
			}
			keep := pr.Messages[len(pr.Messages)-1].Span.s
			if !bytes.Equal(sum.Body[:keep], prev.Body[:keep]) {
				t.Fatal("the summary request does not start with the bytes of the upstream's previous request")
			}
			sr, err := parseAnthropic(sum.Body)
			if err != nil {
				t.Fatal(err)
			}
			lm := sr.Messages[len(sr.Messages)-1]
			lb := lm.Blocks[len(lm.Blocks)-1]
			if lm.Role != "user" || !bytes.HasPrefix([]byte(blockText(sum.Body, lb)), []byte(SummaryPrompt)) {
				t.Fatalf("the instruction is not the final user turn's last block: %.200s", sum.Body[lb.Span.s:])
			}
			if sum.Usage.CacheRead == 0 {
				t.Errorf("the summary request read nothing from the cache (usage %+v)", sum.Usage)
			}
		})
	}
}

// TestChatSummaryReusesClientPrefix: for chat completions the summary
// request is the client's request with the instruction appended as a
// final user message; the upstream reports a cache read.
func TestChatSummaryReusesClientPrefix(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.Config{Window: 20_000})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{Window: 20_000})
	var sum, prev *llmtest.Call
	// Assistant text, which only a summary can shrink, makes the proxy compact.
	say := q(strings.Repeat("Reasoning about the failing test. ", 90))
	for n := 1; n <= 40 && sum == nil; n++ {
		body := bytes.ReplaceAll(chatBody("cs", n, 3000), []byte(`"role":"assistant","content":null`), []byte(`"role":"assistant","content":`+say))
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn %d: %d", n, resp.StatusCode)
		}
		calls := up.Calls()
		for i, c := range calls {
			if isSummaryCall(c) && sum == nil {
				sum, prev = c, calls[i-1]
			}
		}
	}
	if sum == nil {
		t.Fatal("the proxy never summarized")
	}
	if sum.System == SummaryPrompt {
		t.Fatal("the summary went as a transcript, not on the client's request")
	}
	if sum.Header.Get("Authorization") != "Bearer sk-test" || sum.Model != "gpt-5.1" {
		t.Fatalf("summary request: model %q, authorization %q; want the client's", sum.Model, sum.Header.Get("Authorization"))
	}
	pr, err := parseChat(prev.Body)
	if err != nil {
		t.Fatal(err)
	}
	keep := pr.Messages[len(pr.Messages)-1].Span.e
	if !bytes.Equal(sum.Body[:keep], prev.Body[:keep]) {
		t.Fatal("the summary request does not start with the upstream's previous request")
	}
	sr, err := parseChat(sum.Body)
	if err != nil {
		t.Fatal(err)
	}
	if lm := sr.Messages[len(sr.Messages)-1]; lm.Role != "user" || !strings.HasPrefix(str(sum.Body, lm.Content), SummaryPrompt) {
		t.Fatalf("the instruction is not the final user message: %.200s", sum.Body[lm.Span.s:])
	}
	if sum.Usage.CacheRead == 0 {
		t.Errorf("the summary request read nothing from the cache (usage %+v)", sum.Usage)
	}
}

func TestStreamText(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            bool
	}{
		{"anthropic", "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n" +
			"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n" +
			"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"<summary>Goal\"}}\n\n" +
			"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\": x</summary>\"}}\n\n" +
			"data: {\"type\":\"message_stop\"}\n\n", "<summary>Goal: x</summary>", false},
		{"openai", "data: {\"choices\":[{\"delta\":{\"content\":\"Goal\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\": y\"}}]}\n\ndata: [DONE]\n\n", "Goal: y", false},
		{"cut", "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Goal\"}}\n\n", "", true},
		{"error event", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "", true},
	}
	for _, tt := range tests {
		got, err := streamText(strings.NewReader(tt.in))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: %q, %v; want %q (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}

// TestPrefixSummaryCountsAsTheEngine: whether a summary fits on the
// client's prefix is judged by the engine's count of the request (its
// encrypted reasoning at what the provider reported), not by the body's
// bytes, where a ciphertext counts many times its cost. A Codex session's
// prefix looked over the window long before it was, and its summaries
// went out as transcripts that read nothing of the cache.
func TestPrefixSummaryCountsAsTheEngine(t *testing.T) {
	cipher := strings.Repeat("Zm9vYmFyYmF6cXV4", 4000) // 64 kB of ciphertext: ~16k tokens as text
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":2000,"messages":[` +
		`{"role":"user","content":"fix the build"},` +
		`{"role":"assistant","content":[{"type":"redacted_thinking","data":"` + cipher + `"},{"type":"text","text":"on it"}]},` +
		`{"role":"user","content":"go on"}]}`)
	s, req, m := prefixFixture(t, body, 20_000)
	limit := m.e.Budget().Limit // the engine's, at the proxy's window and the request's max_tokens
	idx := []int{0, 1}
	instr := s.counter.Count(prefixInstruction(req, idx, keptWords{from: -1}, 0))
	if n := s.counter.Count(string(body)); n <= limit {
		t.Fatalf("the body counts %d tokens, want it over the limit %d for the test to mean anything", n, limit)
	}
	tests := []struct {
		name   string
		tokens int // the engine's count of the request
		want   bool
	}{
		{"the engine's count well within", 500, true},
		{"with the instruction, at the limit", limit - instr, true},
		{"with the instruction, one over", limit - instr + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.prefixSummaryBody(req, nil, tt.tokens, m.e, idx, keptWords{from: -1}, 0)
			if ok != tt.want {
				t.Fatalf("on the prefix: %v, want %v (limit %d)", ok, tt.want, limit)
			}
			if ok && !bytes.Contains(got, []byte(cipher)) {
				t.Error("the summary request lost the client's reasoning")
			}
		})
	}
}

// TestTranscriptLeavesKeptOut: a transcript summary request shows the
// region without the text the compaction keeps verbatim (keptWords.skip),
// a block of a message or a message's whole string content, and with
// everything else.
func TestTranscriptLeavesKeptOut(t *testing.T) {
	body := []byte(`{"model":"m","max_tokens":10,"messages":[` +
		`{"role":"user","content":"Fix the parser."},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"Bash","input":{"command":"go test"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"FAIL parse"},{"type":"text","text":"Keep the API stable."}]}]}`)
	req, err := parseAnthropic(body)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		skip       map[[2]int]bool
		want, gone []string
	}{
		{"nothing kept", nil, []string{"Fix the parser.", "FAIL parse", "Keep the API stable."}, nil},
		{"a block kept", map[[2]int]bool{{2, 1}: true}, []string{"Fix the parser.", "FAIL parse"}, []string{"Keep the API stable."}},
		{"a string content kept", map[[2]int]bool{{0, -1}: true}, []string{"FAIL parse", "Keep the API stable."}, []string{"Fix the parser."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := transcript(req, []int{0, 1, 2}, keptWords{from: -1, skip: tt.skip})
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("transcript lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.gone {
				if strings.Contains(got, w) {
					t.Errorf("transcript holds %q, which stays verbatim:\n%s", w, got)
				}
			}
		})
	}
}

// TestPrefixSummaryLeavesRoom: the window holds a request's prompt and its
// answer, so a summary request on the client's prefix asks max_tokens no
// more than the room its prompt leaves, as the engine's requests do
// (Claude Code asks 128,000 of a 60,000-token window, and the API refuses
// that); under the client's thinking budget it cannot, and the transcript
// serves.
func TestPrefixSummaryLeavesRoom(t *testing.T) {
	for _, tt := range []struct {
		name     string
		thinking string
		max      int
		ok       bool
	}{
		{"max_tokens over the room", "", 128_000, true},
		{"max_tokens within it", "", 2_000, true},
		{"room under the thinking budget", `"thinking":{"type":"enabled","budget_tokens":59000},`, 128_000, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,%s"messages":[{"role":"user","content":[{"type":"text","text":"fix the build"}]},`+
				`{"role":"assistant","content":[{"type":"text","text":"on it"}]},{"role":"user","content":[{"type":"text","text":"go on"}]}]}`, tt.max, tt.thinking))
			s, req, m := prefixFixture(t, body, 60_000)
			const prompt = 20_000
			got, ok := s.prefixSummaryBody(req, nil, prompt, m.e, []int{0, 1}, keptWords{from: -1}, 0)
			if ok != tt.ok {
				t.Fatalf("on the prefix: %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			var sent struct {
				MaxTokens int `json:"max_tokens"`
			}
			if err := json.Unmarshal(got, &sent); err != nil {
				t.Fatal(err)
			}
			instr := s.counter.Count(prefixInstruction(req, []int{0, 1}, keptWords{from: -1}, 0))
			if want := min(tt.max, m.e.Room(prompt+instr)); sent.MaxTokens != want || sent.MaxTokens+prompt > 60_000 {
				t.Errorf("max_tokens %d, want %d: the room a %d-token prompt leaves", sent.MaxTokens, want, prompt+instr)
			}
		})
	}
}

// prefixFixture is a proxy with the given --window, the Messages request
// body as it parses, and a mirror's engine for it.
func prefixFixture(t *testing.T, body []byte, window int) (*Server, *request, *mirror) {
	t.Helper()
	s := newProxy(t, "http://127.0.0.1:1", Config{Window: window}).srv
	req, err := s.parse(context.Background(), providerAnthropic, "messages", body)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.newMirror("k", req, s.window(req.Model), "")
	if err != nil {
		t.Fatal(err)
	}
	return s, req, m
}
