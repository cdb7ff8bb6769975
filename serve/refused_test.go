package serve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/serve/servetest"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/tokens"
)

// TestRefusal reads the refusals for size of each API, as the stand-ins
// (and the APIs they copy) word them, and nothing else.
func TestRefusal(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
		want   llm.Limit
		ok     bool
	}{
		{"anthropic, prompt", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 14000 tokens > 12000 maximum"},"request_id":"req_1"}`,
			llm.Limit{Prompt: 14000, Window: 12000}, true},
		{"anthropic, prompt and max_tokens", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 11000 + 4096 > 12000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`,
			llm.Limit{Prompt: 11000, MaxTokens: 4096, Window: 12000}, true},
		{"openai chat", 400, `{"error":{"message":"This model's maximum context length is 12000 tokens. However, your messages resulted in 14000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			llm.Limit{Prompt: 14000, Window: 12000}, true},
		{"openai responses: no sizes", 400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`,
			llm.Limit{}, true},
		{"vllm", 400, `{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 4096 output tokens and your prompt contains at least 5000 input tokens, for a total of at least 9096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			llm.Limit{Prompt: 5000, MaxTokens: 4096, Window: 8192}, true},
		{"llama.cpp", 400, `{"error":{"code":400,"message":"request (14000 tokens) exceeds the available context size (12000 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14000,"n_ctx":12000}}`,
			llm.Limit{Prompt: 14000, Window: 12000}, true},
		{"gemini", 400, `{"error":{"code":400,"message":"The input token count (14000) exceeds the maximum number of tokens allowed (12000).","status":"INVALID_ARGUMENT"}}`,
			llm.Limit{Prompt: 14000, Window: 12000}, true},
		{"gemini, an array", 400, `[{"error":{"code":400,"message":"The input token count (14000) exceeds the maximum number of tokens allowed (12000).","status":"INVALID_ARGUMENT"}}]`,
			llm.Limit{Prompt: 14000, Window: 12000}, true},
		{"anthropic, the bytes", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, llm.Limit{}, false},
		{"another bad request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: unexpected tool_use_id"}}`, llm.Limit{}, false},
		{"max_tokens over the model's", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for claude-opus-4"}}`, llm.Limit{}, false},
		{"not JSON", 400, `Bad Request`, llm.Limit{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := refusal(tt.status, []byte(tt.body))
			if got != tt.want || ok != tt.ok {
				t.Errorf("refusal = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestRefusedForSize: the model behind the proxy has a smaller window
// than the proxy takes it to have (a local model, a wrong --window). The
// first request over it is refused upstream; the proxy does what the
// agent does — the engine retries it at the window the refusal states —
// and the client gets the answer, not the refusal. From then on every
// request fits, and a restarted proxy (another replica) that rebuilds the
// conversation from the store decides as the first did, byte for byte,
// without being refused again.
func TestRefusedForSize(t *testing.T) {
	const window = 12_000
	gemini := func(n int) []byte { b, _ := geminiHistory(n); return b }
	for _, tt := range []struct {
		provider, path string
		body           func(n int) []byte
		rounds         int // about 18,000 tokens by the end
	}{
		{providerAnthropic, "/v1/messages", shape{name: "refused", result: 4000, maxTokens: 1024}.anthropicBody, 18},
		{providerOpenAI, "/v1/chat/completions", shape{name: "refused", provider: providerOpenAI, result: 4000, maxTokens: 1024}.chatBody, 18},
		{providerGemini, "/v1beta/models/gemini-2.5-pro:generateContent", gemini, 12},
		// The Responses API states no size: the engine bounds the window
		// by the prompt and answer room it refused.
		{providerOpenAI, "/v1/responses", codexBody, 18},
	} {
		t.Run(tt.provider+tt.path, func(t *testing.T) {
			key := ""
			if tt.provider == providerGemini {
				key = "gk"
			}
			up := llmtest.NewServer(t, llmtest.Config{Window: window, APIKey: key})
			up.Handle(summaryAware)
			st := openStore(t, "")
			cfg := Config{Store: st, GeminiUpstream: up.URL} // the model's window by the table: 200k, 400k, 1M
			p := newProxy(t, up.URL, cfg)
			post := func(p *proxy, n int) {
				t.Helper()
				before := len(up.Calls())
				defer func() {
					// What went upstream for the client's request differs
					// from it only as the engine decided, at the window
					// the upstream stated.
					calls := up.Calls()[before:]
					for i := len(calls) - 1; i >= 0; i-- {
						if c := calls[i]; c.Status == http.StatusOK && !isSummaryCall(c) {
							if _, err := servetest.Check(tt.body(n), c.Body, servetest.Limits{Window: window, Counter: tokens.NewEstimator(), OpenAI: tt.path == "/v1/chat/completions"}); err != nil {
								t.Errorf("%d rounds: %v", n, err)
							}
							return
						}
					}
					t.Errorf("%d rounds: nothing went upstream for the client's request", n)
				}()
				resp, data := p.postWith(t, tt.path, "refused", tt.body(n), http.Header{"Authorization": {"Bearer sk-test"}, "X-Goog-Api-Key": {"gk"}})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("%d rounds: the client got %d: %s", n, resp.StatusCode, data)
				}
			}
			for n := 1; n <= tt.rounds; n++ {
				post(p, n)
			}
			refused := 0
			for _, c := range up.Calls() {
				if c.Status != http.StatusOK {
					refused++
					if !strings.Contains(c.Error, fmt.Sprint(window)) && !strings.Contains(c.Error, "exceeds the context window") {
						t.Errorf("upstream request %d refused for another reason: %s", c.N, c.Error)
					}
				}
			}
			if refused != 1 {
				t.Fatalf("the upstream refused %d requests, want 1: the first over its window, and none once its window was known", refused)
			}
			if m := metricsText(t, p); !strings.Contains(m, `ctxkit_serve_resent_total{provider="`+tt.provider+`"} 1`) {
				t.Errorf("the retry is not counted:\n%s", grep(m, "resent"))
			}
			kept := 0
			for _, key := range []string{testKey, "sk-test", "gk"} {
				ts := scoped(t, st, key)
				ss, err := ts.Sessions(context.Background(), 10)
				if err != nil {
					t.Fatal(err)
				}
				for _, sess := range ss {
					ds, _, err := ts.Decisions(context.Background(), sess.ID)
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range ds {
						if d.Kind == store.KindRefused {
							kept++
						}
					}
				}
			}
			if kept != 1 {
				t.Fatalf("the store holds %d refusals, want 1", kept)
			}

			// The next request, through this proxy and through a new
			// one on the same store: the same bytes upstream, and no
			// refusal.
			post(p, tt.rounds+1)
			first := up.Last().Body
			p2 := newProxy(t, up.URL, cfg)
			post(p2, tt.rounds+1)
			if again := up.Last(); again.Status != http.StatusOK || !bytes.Equal(again.Body, first) {
				t.Errorf("a rebuilt conversation sent %d bytes (status %d), not the %d the first proxy sent", len(again.Body), again.Status, len(first))
			}
		})
	}
}

// TestRefusedAnswerOnly: the prompt fits the model's window but not with
// the max_tokens the client asks; the refusal says so, and the request
// goes again asking for the room left, its prompt as it was (no summary).
func TestRefusedAnswerOnly(t *testing.T) {
	const window = 12_000
	up := llmtest.NewServer(t, llmtest.Config{Window: window})
	up.Handle(summaryAware)
	p := newProxy(t, up.URL, Config{})
	// Results of about 500 tokens: the first prompt the upstream refuses
	// with max_tokens is under the engine's limit at the window it states
	// (half the window goes to the answer at most: compact.Budget).
	s := shape{name: "answer", result: 2000, maxTokens: 8000}
	for n := 1; ; n++ {
		resp, data := p.post(t, "/v1/messages", "answer", s.anthropicBody(n))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d rounds: the client got %d: %s", n, resp.StatusCode, data)
		}
		calls := up.Calls()
		if last := len(calls) - 1; last > 0 && calls[last-1].Status != http.StatusOK {
			refused, again := calls[last-1], calls[last]
			if !strings.Contains(refused.Error, "max_tokens") {
				t.Fatalf("upstream request %d refused for another reason: %s", refused.N, refused.Error)
			}
			if isSummaryCall(again) || again.Prompt != refused.Prompt || again.MaxTokens >= s.maxTokens || again.Prompt+again.MaxTokens > window {
				t.Fatalf("refused with %d + %d, sent again with %d + %d (a summary: %v); want the same prompt and the room left", refused.Prompt, refused.MaxTokens, again.Prompt, again.MaxTokens, isSummaryCall(again))
			}
			// The window is known from then on: the next request asks
			// for the room it leaves, and is not refused.
			p.post(t, "/v1/messages", "answer", s.anthropicBody(n+1))
			if next := up.Last(); next.Status != http.StatusOK {
				t.Fatalf("the next request was refused too: %s", next.Error)
			}
			return
		}
		if n > 20 {
			t.Fatal("the upstream never refused a request: the test tests nothing")
		}
	}
}

// codexBody is a Codex-shaped Responses request after n tool rounds:
// encrypted reasoning before each call, results of about 1,000 tokens.
func codexBody(n int) []byte {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Read every file."}]}`,
	}
	for i := range n {
		items = append(items,
			fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":%s}`, i, q(llmtest.EncryptedContent(fmt.Sprintf("reasoning %d", i)))),
			fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"shell","arguments":%s}`, i, q(fmt.Sprintf(`{"command":"cat f%d.go"}`, i))),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%s}`, i, q(filler(fmt.Sprint("out", i), 4_000))))
	}
	return []byte(`{"model":"gpt-5.1-codex","max_output_tokens":1024,"store":false,"stream":false,"prompt_cache_key":"refused","include":["reasoning.encrypted_content"],"input":[` + strings.Join(items, ",") + `]}`)
}
