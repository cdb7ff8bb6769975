package openai

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// TestOfficialMaxTokens: api.openai.com gets max_completion_tokens (its
// reasoning models refuse max_tokens), every other server max_tokens.
func TestOfficialMaxTokens(t *testing.T) {
	t.Setenv(KeyEnv, "sk-test")
	req := &llm.Request{MaxTokens: 100, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hi")}}}}
	for base, want := range map[string]string{
		"https://api.openai.com/v1":   `"max_completion_tokens":100`,
		"http://localhost:11434/v1":   `"max_tokens":100`,
		"https://api.deepseek.com/v1": `"max_tokens":100`,
	} {
		p, err := New("gpt-5", WithBaseURL(base))
		if err != nil {
			t.Fatal(err)
		}
		params, err := p.params(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(params)
		if !strings.Contains(string(body), want) {
			t.Errorf("%s: body %s lacks %s", base, body, want)
		}
	}
}

func TestUsage(t *testing.T) {
	var acc sdk.ChatCompletionAccumulator
	for _, tc := range []struct {
		usage string
		want  llm.Usage
	}{
		{`{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_tokens_details":{"cached_tokens":768}}`, llm.Usage{Input: 232, Output: 50, CacheRead: 768}},
		// DeepSeek's own fields.
		{`{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":360}`, llm.Usage{Input: 360, Output: 50, CacheRead: 640}},
		// A local server that reports no cache.
		{`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`, llm.Usage{Input: 10, Output: 5}},
	} {
		var u sdk.CompletionUsage
		if err := json.Unmarshal([]byte(tc.usage), &u); err != nil {
			t.Fatal(err)
		}
		if got := response(&acc, "stop", u).Usage; got != tc.want {
			t.Errorf("%s: usage %+v, want %+v", tc.usage, got, tc.want)
		}
	}
}

func TestStopReason(t *testing.T) {
	for in, want := range map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal", "weird": "weird"} {
		if got := stopReason(in); got != want {
			t.Errorf("stopReason(%q) = %q, want %q", in, got, want)
		}
	}
}
