package summarize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// LLMOptions tunes the LLM summarizer; the zero value is the default.
type LLMOptions struct {
	// NoCacheReuse turns off the cache-reusing request: every summary is
	// asked of the summary model with the region as a transcript. Turn it
	// off for providers without prompt caching, where the cheaper model
	// wins.
	NoCacheReuse bool
	// Attempts is how many times a request is tried when the provider is
	// unavailable (after the adapter's own retries); 0 means 2.
	Attempts int
	// PTLRetries is how many times a summary request that is itself too long
	// is retried with its oldest rounds dropped; 0 means 3.
	PTLRetries int
	// MaxResultChars bounds each tool result in the transcript; 0 means
	// 6,000 (head and tail kept).
	MaxResultChars int
	// MaxOutput caps the summary request's max_tokens; 0 means 20,000.
	MaxOutput int
}

// LLM summarizes through a model. Where Input.Prefix is set (and cache
// reuse is on) it sends the agent's own request, unchanged, with the
// summary instruction appended to the final user message, so the provider
// reads the history from its prompt cache; the agent's model writes that
// summary, since a cache belongs to one model. Otherwise it sends the region
// as a transcript to the configured summary model, which may be a cheaper
// one.
//
// Failures it handles itself: a prompt-too-long on the cache-reusing
// request falls back to the transcript request; a prompt-too-long on the
// transcript request drops the oldest fifth of the region, inserting the
// marker "[earlier conversation truncated for compaction retry]", and
// retries (PTLRetries times); an unavailable provider is retried
// (Attempts). Anything else is returned for the caller to fall back on.
type LLM struct {
	p     llm.Provider
	model string
	opts  LLMOptions
}

// NewLLM returns a summarizer that asks model through p.
func NewLLM(p llm.Provider, model string, opts LLMOptions) *LLM {
	if opts.Attempts <= 0 {
		opts.Attempts = 2
	}
	if opts.PTLRetries <= 0 {
		opts.PTLRetries = 3
	}
	if opts.MaxResultChars <= 0 {
		opts.MaxResultChars = 6000
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = 20_000
	}
	return &LLM{p: p, model: model, opts: opts}
}

// TruncationMarker replaces the rounds dropped from a summary request that
// was too long.
const TruncationMarker = "[earlier conversation truncated for compaction retry]"

// Summarize implements Summarizer.
func (l *LLM) Summarize(ctx context.Context, in Input) (Output, error) {
	if len(in.Messages) == 0 {
		return Output{}, ErrNothing
	}
	t := in.Template.orDefault()
	target := in.TargetTokens
	if target <= 0 {
		target = MinTarget
	}
	var notes []string
	var usage llm.Usage
	if in.Prefix != nil && !l.opts.NoCacheReuse {
		req := l.prefixRequest(in, t, target)
		out, u, err := l.ask(ctx, req)
		usage = usage.Add(u)
		if err == nil {
			out.Kind, out.Template, out.Model, out.CacheReuse, out.Usage = "llm", t, req.Model, true, usage
			out.Folded = len(in.Earlier) > 0
			return out, nil
		}
		if !errors.Is(err, llm.ErrPromptTooLong) {
			return Output{Usage: usage}, err
		}
		notes = append(notes, "the cache-reusing summary request was too long; sent the region as a transcript instead")
	}
	msgs := in.Messages
	truncated := false
	// Once a refusal states the summary model's window, each request is
	// fitted to it before it goes: the oldest messages dropped until the
	// transcript leaves room for the analysis and the summary the target
	// asks (maxTokens' rule without its floor), and max_tokens lowered to
	// the room left. The prompt is the refused one's by the provider's
	// count, scaled by the transcript's length.
	var lim llm.Limit
	limChars := 0
	roomIn := func(req *llm.Request) int { return lim.Window - lim.Prompt*requestChars(req)/limChars }
	needed := min(target*3+2048, l.opts.MaxOutput)
	for try := 0; ; try++ {
		req := l.transcriptRequest(msgs, in, t, target, truncated)
		if limChars > 0 {
			dropped := 0
			for roomIn(req) < needed {
				next := dropOldest(msgs)
				if len(next) == len(msgs) || len(next) == 0 {
					break
				}
				dropped += len(msgs) - len(next)
				msgs, truncated = next, true
				req = l.transcriptRequest(msgs, in, t, target, truncated)
			}
			room := roomIn(req)
			if room <= 0 {
				return Output{Usage: usage, Notes: notes}, fmt.Errorf("summarize: the summary model's %d-token window has no room for a summary of even the newest messages: %w", lim.Window, llm.ErrPromptTooLong)
			}
			req.MaxTokens = min(req.MaxTokens, room)
			notes = append(notes, fmt.Sprintf("summary request fitted to the summary model's %d-token window: dropped the oldest %d of %d messages, max_tokens %d (retry %d)", lim.Window, dropped, len(in.Messages), req.MaxTokens, try))
		}
		out, u, err := l.ask(ctx, req)
		usage = usage.Add(u)
		if err == nil {
			out.Kind, out.Template, out.Model, out.Usage, out.Notes = "llm", t, l.model, usage, notes
			out.Folded = len(in.Earlier) > 0
			return out, nil
		}
		if !errors.Is(err, llm.ErrPromptTooLong) || try >= l.opts.PTLRetries {
			return Output{Usage: usage, Notes: notes}, err
		}
		if stated, ok := llm.ParseLimit(err); ok {
			lim, limChars = stated, max(requestChars(req), 1)
			continue
		}
		next := dropOldest(msgs)
		if len(next) == len(msgs) || len(next) == 0 {
			return Output{Usage: usage, Notes: notes}, err
		}
		notes = append(notes, fmt.Sprintf("summary request too long: dropped the oldest %d of %d messages from its input (retry %d)", len(msgs)-len(next), len(in.Messages), try+1))
		msgs, truncated = next, true
	}
}

// requestChars is the length of req's text, what its prompt is scaled by.
func requestChars(req *llm.Request) int {
	n := 0
	for i := range req.System {
		n += len(req.System[i].Text)
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			n += len(req.Messages[i].Blocks[j].Text)
		}
	}
	return n
}

// prefixRequest is the agent's request plus the instruction, appended to
// its final user message so that alternation holds and every byte before
// it matches what the provider has cached.
func (l *LLM) prefixRequest(in Input, t Template, target int) *llm.Request {
	p := in.Prefix
	// No more than the agent's own request asks: the engine left the
	// window that much room for an answer to this prompt.
	maxTokens := l.maxTokens(target)
	if p.MaxTokens > 0 {
		maxTokens = min(maxTokens, p.MaxTokens)
	}
	req := &llm.Request{
		Model:     p.Model,
		MaxTokens: maxTokens,
		System:    p.System,
		Tools:     p.Tools,
		Messages:  make([]conv.Message, len(p.Messages), len(p.Messages)+1),
	}
	copy(req.Messages, p.Messages)
	instr := conv.NewText(conv.SourceSystem, instruction(t, scopePrefix(in.KeepFrom)+earlierInPrefix(in.Earlier), in.Focus, target))
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == conv.RoleUser {
		last := req.Messages[n-1]
		last.Blocks = append(append([]conv.Block(nil), last.Blocks...), instr)
		req.Messages[n-1] = last
	} else {
		req.Messages = append(req.Messages, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{instr}})
	}
	return req
}

func (l *LLM) transcriptRequest(msgs []conv.Message, in Input, t Template, target int, truncated bool) *llm.Request {
	body := Transcript(msgs, l.opts.MaxResultChars)
	if truncated {
		body = TruncationMarker + "\n\n" + body
	}
	text := earlierInTranscript(in.Earlier) + "<transcript>\n" + body + "\n</transcript>\n\n" + instruction(t, scopeTranscript(in.Span)+earlierInScope(in.Earlier), in.Focus, target)
	return &llm.Request{
		Model:     l.model,
		MaxTokens: l.maxTokens(target),
		System:    []conv.Block{conv.NewText(conv.SourceSystem, systemPrompt)},
		Messages:  []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, text)}}},
	}
}

// maxTokens leaves room for the analysis scratchpad on top of the
// target, and never less than the largest target would have: a small
// target is an aim, and the user's words and the artifact trail come
// before it (the instruction says so), so the model may write past it.
// max_tokens is a bound, not a charge: only what is written is billed.
func (l *LLM) maxTokens(target int) int {
	return min(max(target, MaxTarget)*3+2048, l.opts.MaxOutput)
}

// ask sends req, retrying while the provider is unavailable, and returns
// the summary text of the answer.
func (l *LLM) ask(ctx context.Context, req *llm.Request) (Output, llm.Usage, error) {
	var usage llm.Usage
	var err error
	for attempt := 0; attempt < l.opts.Attempts; attempt++ {
		var resp *llm.Response
		resp, err = l.p.Stream(ctx, req, nil)
		if resp != nil {
			usage = usage.Add(resp.Usage)
		}
		if err == nil {
			text, calls := responseText(resp)
			s := ExtractSummary(text)
			switch {
			case s == "" && calls > 0:
				return Output{}, usage, ErrToolCall
			case s == "":
				return Output{}, usage, ErrEmpty
			}
			return Output{Text: s}, usage, nil
		}
		if !errors.Is(err, llm.ErrUnavailable) || ctx.Err() != nil {
			break
		}
	}
	return Output{}, usage, fmt.Errorf("summarize: %w", err)
}

func responseText(resp *llm.Response) (string, int) {
	var parts []string
	calls := 0
	for _, b := range resp.Message.Blocks {
		switch b.Type {
		case conv.TypeText:
			parts = append(parts, b.Text)
		case conv.TypeToolUse:
			calls++
		}
	}
	return strings.Join(parts, "\n"), calls
}

// dropOldest removes about the oldest fifth of msgs, ending at a step
// boundary so that no tool result is left without its call.
func dropOldest(msgs []conv.Message) []conv.Message {
	k := max(1, len(msgs)/5)
	for k < len(msgs) && msgs[k].Role == conv.RoleUser && hasResults(&msgs[k]) {
		k++
	}
	return msgs[k:]
}

func hasResults(m *conv.Message) bool {
	for i := range m.Blocks {
		if m.Blocks[i].Type == conv.TypeToolResult {
			return true
		}
	}
	return false
}

// Merge implements Merger: one request that folds the parts into a single
// summary.
func (l *LLM) Merge(ctx context.Context, parts []Part, in MergeInput) (Output, error) {
	t := in.Template.orDefault()
	target := in.TargetTokens
	if target <= 0 {
		target = MinTarget
	}
	req := &llm.Request{
		Model:     l.model,
		MaxTokens: l.maxTokens(target),
		System:    []conv.Block{conv.NewText(conv.SourceSystem, systemPrompt)},
		Messages:  []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, mergeInstruction(t, parts, target))}}},
	}
	out, u, err := l.ask(ctx, req)
	if err != nil {
		return Output{Usage: u}, err
	}
	out.Kind, out.Template, out.Model, out.Usage = "llm", t, l.model, u
	return out, nil
}
