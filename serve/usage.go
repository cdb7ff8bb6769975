package serve

import (
	"bytes"
	"encoding/json"
)

// usageWatch reads the upstream usage out of a response as it streams
// past (Anthropic message_start/message_delta events or a JSON body;
// OpenAI's usage object or response.completed event), keeping at most one
// line (or a bounded body) in memory.
type usageWatch struct {
	stream bool
	line   []byte
	body   []byte
	u      upstreamUsage
}

type upstreamUsage struct {
	input, cacheRead, cacheWrite, output int64
}

const maxWatch = 4 << 20

func (w *usageWatch) Write(p []byte) (int, error) {
	n := len(p)
	if !w.stream {
		if len(w.body)+len(p) <= maxWatch {
			w.body = append(w.body, p...)
		}
		return len(p), nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(w.line)+len(p) <= maxWatch {
				w.line = append(w.line, p...)
			}
			return n, nil
		}
		w.line = append(w.line, p[:i]...)
		w.event(w.line)
		w.line = w.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

var (
	usageKey       = []byte(`"usage"`)
	geminiUsageKey = []byte(`"usageMetadata"`)
)

func (w *usageWatch) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || !bytes.Contains(data, usageKey) && !bytes.Contains(data, geminiUsageKey) {
		return
	}
	w.parse(bytes.TrimSpace(data))
}

type usageJSON struct {
	InputTokens      *int64 `json:"input_tokens"`
	OutputTokens     *int64 `json:"output_tokens"`
	CacheCreation    *int64 `json:"cache_creation_input_tokens"`
	CacheRead        *int64 `json:"cache_read_input_tokens"`
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	PromptDetails    *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// geminiUsage is the Gemini API's usageMetadata: the prompt's tokens,
// the cached ones among them (implicit or explicit caching), the
// candidates' and the thoughts' (both output).
type geminiUsage struct {
	Prompt     int64 `json:"promptTokenCount"`
	Cached     int64 `json:"cachedContentTokenCount"`
	Candidates int64 `json:"candidatesTokenCount"`
	Thoughts   int64 `json:"thoughtsTokenCount"`
}

type withUsage struct {
	Usage    *usageJSON   `json:"usage"`
	Gemini   *geminiUsage `json:"usageMetadata"`
	Message  *withUsage   `json:"message"`
	Response *withUsage   `json:"response"`
}

func (w *usageWatch) parse(data []byte) {
	var x withUsage
	if json.Unmarshal(data, &x) != nil {
		return
	}
	if g := x.Gemini; g != nil { // each streamed chunk carries the totals so far
		w.u.input, w.u.cacheRead, w.u.output = g.Prompt-g.Cached, g.Cached, g.Candidates+g.Thoughts
	}
	for _, y := range []*withUsage{&x, x.Message, x.Response} {
		if y != nil && y.Usage != nil {
			w.merge(y.Usage)
		}
	}
}

func (w *usageWatch) merge(u *usageJSON) {
	set := func(dst *int64, v *int64) {
		if v != nil && *v > 0 {
			*dst = *v
		}
	}
	if u.PromptTokens != nil { // OpenAI: prompt tokens include the cached ones
		cached := int64(0)
		if u.PromptDetails != nil {
			cached = u.PromptDetails.CachedTokens
		}
		w.u.input, w.u.cacheRead = *u.PromptTokens-cached, cached
		set(&w.u.output, u.CompletionTokens)
		return
	}
	if u.InputDetails != nil { // OpenAI responses
		set(&w.u.output, u.OutputTokens)
		if u.InputTokens != nil {
			w.u.input, w.u.cacheRead = *u.InputTokens-u.InputDetails.CachedTokens, u.InputDetails.CachedTokens
		}
		return
	}
	set(&w.u.input, u.InputTokens)
	set(&w.u.cacheWrite, u.CacheCreation)
	set(&w.u.cacheRead, u.CacheRead)
	set(&w.u.output, u.OutputTokens)
}

func (w *usageWatch) result() upstreamUsage {
	if !w.stream && len(w.body) > 0 {
		w.parse(w.body)
		w.body = nil
	}
	return w.u
}
