package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/toolresult"
)

// SummaryPrompt is the system prompt of the proxy's transcript summary
// requests, and the start of the instruction it appends to the client's
// own request when the summary reuses the client's cached prefix.
const SummaryPrompt = "You are summarizing part of a coding agent's conversation so it can continue without it. " +
	"Write a structured summary: the user's goal and instructions, what was done and found (files, commands, " +
	"errors and their fixes, decisions), and what is still open. Keep identifiers, paths, numbers and error " +
	"strings exactly. Do not include file contents; name the files instead."

const (
	maxSummaryTokens = 4096
	summaryTimeout   = 120 * time.Second
	resultClip       = 2000 // bytes of each tool result shown to the summarizer
)

// summarizeRegion writes the summary of req.Messages[idx...] for the
// engine, with the client's own credentials: first as the client's
// request itself (the engine's decisions so far applied, as the upstream
// last saw it) with the instruction appended as the final user turn, so
// the upstream reads the client's cached prefix (only when the mirror
// holds all of req: final); else (another --summary-model, a prefix too
// long for the window, a failure) as a transcript. It returns the text
// and the method ("model"), or "" when the upstream wrote none: then the
// engine's extractive summarizer does.
func (s *Server) summarizeRegion(ctx context.Context, h http.Header, req *request, m *mirror, idx []int, kw keptWords, final bool, target int) (string, string) {
	var text string
	var err error
	// The window in force: the engine's, which a refusal may have made
	// smaller than the model's (refused.go).
	b := m.e.Budget()
	if final {
		// The engine's count of the request as rendered (its
		// conversation as it stands): encrypted reasoning at what the
		// provider reported for it, not by its ciphertext.
		tokens := m.c.Tokens(m.e.Config().Counter).Total()
		if body, ok := s.prefixSummaryBody(req, m.render(req, m.e.Hold()), tokens, m.e, idx, kw, target); ok {
			text, err = s.summaryCall(ctx, h, req, req.API, body)
			if err != nil {
				s.log.Warn("summary on the client's prefix failed; sending a transcript", "err", err)
			}
		}
	}
	if strings.TrimSpace(text) == "" {
		body := s.transcriptSummaryBody(req, idx, kw, target, b.Window)
		if req.Provider == providerGemini {
			body = s.geminiTranscriptBody(req, idx, kw, target, b.Window)
		}
		text, err = s.summaryCall(ctx, h, req, "", body)
	}
	if err != nil || strings.TrimSpace(text) == "" {
		s.log.Warn("summary through the upstream failed; using the extractive summary", "err", err)
		return "", ""
	}
	if limit := b.Window / 5 * 4; len(text) > limit { // a summary may never crowd out the window
		text = text[:limit] + "\n[ctxkit: summary truncated]"
	}
	return strings.TrimSpace(text), "model"
}

// prefixSummaryBody is the client's request as the upstream last saw it
// (the splices of the engine's decisions so far applied) with the summary
// instruction appended as the final user turn: every byte before it —
// system, tools, messages, cache breakpoints, thinking and
// context_management settings, stream and max_tokens — is the client's.
// ok is false when the summary must come from another model (caches are
// per model), or when it would not fit the window: tokens, the engine's
// count of the request the splices render, and the instruction over the
// hard limit (e's, the engine deciding on the conversation). Its
// max_tokens goes down to the room the prompt leaves in the window, as
// the engine's requests' do. (Counted as the engine counts the request it forwards, not
// from the body: a body counts encrypted reasoning by its ciphertext, many
// times what the provider bills, and a Codex session's prefix then looked
// over the window long before it was, so its summaries went out as
// transcripts that read nothing from the cache.)
func (s *Server) prefixSummaryBody(req *request, splices []splice, tokens int, e *engine.Engine, idx []int, kw keptWords, target int) ([]byte, bool) {
	if s.cfg.SummaryModel != "" && s.cfg.SummaryModel != req.Model || len(req.Messages) == 0 {
		return nil, false
	}
	instr := prefixInstruction(req, idx, kw, target)
	last := len(req.Messages) - 1
	m := req.Messages[last]
	var add splice
	switch {
	case req.API == "messages" && m.Role == "user":
		if hasCut(splices, m) {
			return nil, false // a cut inside it: the transcript serves
		}
		sp, err := appendText(req.Body, m, []string{instr}, "text")
		if err != nil {
			return nil, false
		}
		add = sp
	case req.API == "messages": // the client prefilled an assistant turn
		at := req.MsgsSpan.e - 1
		add = splice{s: at, e: at, repl: []byte(`,{"role":"user","content":[{"type":"text","text":` + string(jsonString(instr)) + `}]}`)}
	case req.API == "chat":
		at := req.MsgsSpan.e - 1
		add = splice{s: at, e: at, repl: []byte(`,{"role":"user","content":` + string(jsonString(instr)) + `}`)}
	case req.API == "responses":
		at := req.MsgsSpan.e - 1
		add = splice{s: at, e: at, repl: []byte(`,{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(jsonString(instr)) + `}]}`)}
	case req.API == "gemini" && m.Role == "user" && !hasCut(splices, m):
		// A text part after the user turn's parts (function responses
		// included): a content of its own would follow a user content.
		sp, err := appendText(req.Body, m, []string{instr}, "")
		if err != nil {
			return nil, false
		}
		add = sp
	case req.API == "gemini" && m.Role == "model":
		at := req.MsgsSpan.e - 1
		add = splice{s: at, e: at, repl: []byte(`,{"role":"user","parts":[{"text":` + string(jsonString(instr)) + `}]}`)}
	default:
		return nil, false
	}
	sp := append(append([]splice(nil), splices...), add)
	sort.SliceStable(sp, func(a, b int) bool { return sp[a].s < sp[b].s })
	prompt := tokens + s.counter.Count(instr)
	if prompt > e.Budget().Limit {
		return nil, false
	}
	if room := e.Room(prompt); room < req.MaxOut {
		// The window holds the prompt and the answer: max_tokens goes
		// down to the room left, as the engine lowers its own requests'
		// (not under the thinking budget: then the transcript serves).
		if !req.lowers(room) {
			return nil, false
		}
		sp = withAnswer(sp, req, room)
	}
	return applySplices(req.Body, sp), true
}

// hasCut reports whether a splice falls inside message m or right at its
// end.
func hasCut(splices []splice, m message) bool {
	for _, x := range splices {
		if x.s < m.Span.e && x.e > m.Span.s || x.s == x.e && x.s == m.Span.e {
			return true
		}
	}
	return false
}

// prefixInstruction asks for the summary of req.Messages[idx...] on the
// client's own request: which messages, how long (the engine's target,
// summarize.Aim; none when 0), and that no tool may be called.
func prefixInstruction(req *request, idx []int, kw keptWords, target int) string {
	var sb strings.Builder
	sb.WriteString(SummaryPrompt)
	fmt.Fprintf(&sb, "\n\nSummarize the conversation above from the message that begins %q", excerpt(req, idx[0]))
	if next := idx[len(idx)-1] + 1; next < len(req.Messages) {
		fmt.Fprintf(&sb, " up to the message that begins %q (not included)", excerpt(req, next))
	}
	sb.WriteString(": that part is about to be replaced by your summary; the messages after it stay as they are.")
	if kw.from >= 0 {
		fmt.Fprintf(&sb, " "+keptWordsSentence, excerpt(req, kw.from))
	}
	if kw.opening {
		sb.WriteString(" " + keptOpeningSentence)
	}
	sb.WriteString(" Do not call any tool and do not continue the task: answer with the summary only, inside <summary></summary>.")
	if target > 0 {
		sb.WriteString(" " + summarize.Aim(target))
	}
	return sb.String()
}

// keptWordsSentence tells the summary model, in the instruction on the
// client's own prefix, from which message on the user's words stay as
// they are (%q: that message's excerpt). The bench's stand-in upstream
// reads it as a model follows it.
const keptWordsSentence = "The user's own words from the message that begins %q on stay as they are after your summary: do not repeat them."

// keptOpeningSentence tells it the context the client opened the session
// with (its own text in the first message: a CLAUDE.md reminder, Codex's
// environment context) stays too.
const keptOpeningSentence = "The context the client gives in the first message (its reminders and environment context) stays as it is too: do not repeat it."

// keptWords is what a compaction keeps verbatim of the text in a region
// it summarizes — the user's newest words, the context the session opened
// with (package compact) — which the engine leaves out of what it gives
// its summarizer, so the upstream's summary must leave it out too.
type keptWords struct {
	// from is the client message from which every word of the user's in
	// the region is kept (-1: none).
	from int
	// opening is set when the client's own text in the region (the
	// context its first message opens with) is kept.
	opening bool
	// skip are the client blocks kept, as (message, index in its blocks;
	// -1 for a message's string content): a transcript leaves them out.
	skip map[[2]int]bool
}

// keptWords works out keptWords for the region idx of req, whose
// messages the engine gave its summarizer as in.
func (m *mirror) keptWords(req *request, in []conv.Message, idx []int) keptWords {
	kw := keptWords{from: -1, skip: map[[2]int]bool{}}
	if len(idx) == 0 {
		return kw
	}
	given := map[string]bool{}
	for i := range in {
		for j := range in[i].Blocks {
			given[in[i].Blocks[j].ID] = true
		}
	}
	lo, hi := idx[0], idx[len(idx)-1]
	words := map[int]bool{} // client message → all its user words kept
	pc := &partsCache{req: req}
	for i := range m.c.Messages {
		for j := range m.c.Messages[i].Blocks {
			b := &m.c.Messages[i].Blocks[j]
			o, ok := m.origin[b.ID]
			if !ok || o.msg < lo || o.msg > hi || b.Type != conv.TypeText {
				continue
			}
			kept := !given[b.ID]
			if kept {
				if ps := pc.parts(o.msg); o.part < len(ps) {
					kw.skip[[2]int{o.msg, ps[o.part].blk}] = true
				}
			}
			if kept && i == 0 && b.Meta.Source != conv.SourceUser {
				kw.opening = true // the client's text in the conversation's first message
			}
			if b.Meta.Source == conv.SourceUser {
				all, seen := words[o.msg]
				words[o.msg] = kept && (!seen || all)
			}
		}
	}
	msgs := make([]int, 0, len(words))
	for i := range words {
		msgs = append(msgs, i)
	}
	sort.Ints(msgs)
	for k := len(msgs) - 1; k >= 0 && words[msgs[k]]; k-- {
		kw.from = msgs[k]
	}
	return kw
}

// excerpt is the start of message i, as the summarizer would recognize it.
func excerpt(req *request, i int) string {
	m := req.Messages[i]
	body := req.Body
	if m.Str {
		return textfmt.Clip(str(body, m.Content), 100)
	}
	for _, b := range m.Blocks {
		switch b.Type {
		case "text":
			return textfmt.Clip(blockText(body, b), 100)
		case "tool_use":
			return textfmt.Clip("[tool call "+b.Name+" "+keyArg(body, b.Input)+"]", 100)
		case "tool_result":
			return textfmt.Clip("[tool result "+b.Name+"] "+textOf(body, b.Content), 100)
		}
	}
	if m.Content.ok() {
		return textfmt.Clip(textOf(body, m.Content), 100)
	}
	return m.Role + " message"
}

// transcriptInstruction opens the user turn of a transcript summary
// request: what to do and how long (the engine's target, summarize.Aim;
// none when 0).
func transcriptInstruction(target int) string {
	if target > 0 {
		return "Summarize this part of the conversation. " + summarize.Aim(target) + "\n\n"
	}
	return "Summarize this part of the conversation:\n\n"
}

// transcript is the span as a plain transcript for the summarizer, without
// the text the compaction keeps verbatim (kw.skip).
func transcript(req *request, idx []int, kw keptWords) string {
	var sb strings.Builder
	body := req.Body
	for _, i := range idx {
		m := req.Messages[i]
		fmt.Fprintf(&sb, "## %s\n", m.Role)
		if m.Str {
			if !kw.skip[[2]int{i, -1}] {
				sb.WriteString(str(body, m.Content))
				sb.WriteString("\n")
			}
			continue
		}
		for j, b := range m.Blocks {
			switch b.Type {
			case "text":
				if kw.skip[[2]int{i, j}] {
					continue
				}
				sb.WriteString(blockText(body, b))
				sb.WriteString("\n")
			case "tool_use":
				fmt.Fprintf(&sb, "[tool call %s %s]\n", b.Name, textfmt.Clip(string(body[b.Input.s:b.Input.e]), 500))
			case "tool_result":
				fmt.Fprintf(&sb, "[tool result %s]\n%s\n", b.Name, textfmt.Clip(textOf(body, b.Content), resultClip))
			}
		}
	}
	return sb.String()
}

// blockText is a text block's text.
func blockText(body []byte, b block) string {
	var text string
	members(body, b.Span, func(k []byte, v span) error {
		if bytes.Equal(k, []byte(`"text"`)) {
			text = str(body, v)
		}
		return nil
	})
	return text
}

// transcriptSummaryBody is a fresh request that shows req.Messages[idx...]
// as a transcript to the summary model, fitted to window.
func (s *Server) transcriptSummaryBody(req *request, idx []int, kw keptWords, target, window int) []byte {
	model := s.summaryModel(req)
	user := transcriptInstruction(target) + s.fitTranscript(transcript(req, idx, kw), window)
	var body []byte
	if req.Provider == providerOpenAI {
		body, _ = json.Marshal(map[string]any{"model": model, "max_completion_tokens": maxSummaryTokens,
			"messages": []map[string]string{{"role": "system", "content": SummaryPrompt}, {"role": "user", "content": user}}})
	} else {
		body, _ = json.Marshal(map[string]any{"model": model, "max_tokens": maxSummaryTokens, "system": SummaryPrompt,
			"messages": []map[string]string{{"role": "user", "content": user}}})
	}
	return body
}

// summaryHeaders are the headers of a summary request: on the client's
// own request (prefix) the client's headers as forward sends them
// (upstreamHeader) (anthropic-beta included: the body keeps the
// client's beta fields); on a transcript only its credentials and API
// version.
func summaryHeaders(h http.Header, provider string, prefix bool) http.Header {
	out := http.Header{}
	if prefix {
		out = upstreamHeader(h)
	} else {
		keys := []string{"X-Api-Key", "Authorization", "Anthropic-Version"}
		switch provider {
		case providerOpenAI:
			keys = []string{"Authorization", "Openai-Organization", "Openai-Project"}
		case providerGemini:
			keys = []string{"X-Goog-Api-Key"}
		}
		for _, k := range keys {
			if v := h.Get(k); v != "" {
				out.Set(k, v)
			}
		}
	}
	if provider == providerAnthropic && out.Get("Anthropic-Version") == "" {
		out.Set("Anthropic-Version", "2023-06-01")
	}
	out.Set("Content-Type", "application/json")
	return out
}

// summaryCall sends a summary request upstream and returns the text of
// the answer, streamed (as the client's own request may ask) or not. api
// is the endpoint of the client's own request the body extends (its
// prefix), or "" for a transcript.
func (s *Server) summaryCall(ctx context.Context, h http.Header, req *request, api string, body []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	provider := req.Provider
	prefix := api != ""
	url := s.anthropic.String() + "/v1/messages"
	switch {
	case provider == providerOpenAI && api == "responses":
		url = s.openai.String() + "/responses"
	case provider == providerOpenAI:
		url = s.openai.String() + "/chat/completions"
	case provider == providerGemini:
		// The client's body, or the transcript, as one generateContent
		// call (not streamed) to the client's model.
		u := *s.geminiUp
		u.Path += "/v1beta/models/" + neturl.PathEscape(s.summaryModel(req)) + ":generateContent"
		url = u.String()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hr.Header = summaryHeaders(h, provider, prefix)
	resp, err := s.cfg.Client.Do(hr)
	if err != nil {
		return "", fmt.Errorf("summary request: %s", redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return "", fmt.Errorf("summary request: upstream answered %s: %s", resp.Status, textfmt.Clip(string(data), 300))
	}
	var text string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		text, err = streamText(resp.Body)
	} else {
		text, err = responseText(resp.Body)
	}
	if err != nil {
		return "", err
	}
	return summarize.ExtractSummary(text), nil
}

// answerJSON is the part of an answer (or of one streamed event) that
// carries text: Anthropic's content blocks, text deltas and errors,
// OpenAI's choices, the Responses API's output items and text deltas
// (there "delta" is the text itself).
type answerJSON struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Delta json.RawMessage `json:"delta"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text    string `json:"text"`
				Thought bool   `json:"thought"`
			} `json:"parts"`
		} `json:"content"`
	} `json:"candidates"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
}

// responseText is the text of a JSON answer.
func responseText(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, 4<<20))
	if err != nil {
		return "", err
	}
	var x answerJSON
	if err := json.Unmarshal(data, &x); err != nil {
		return "", fmt.Errorf("summary response: %w", err)
	}
	var sb strings.Builder
	for _, c := range x.Content {
		if c.Type == "text" {
			sb.WriteString(c.Text)
		}
	}
	for _, c := range x.Choices {
		sb.WriteString(c.Message.Content)
	}
	for _, c := range x.Candidates[:min(len(x.Candidates), 1)] {
		for _, p := range c.Content.Parts {
			if !p.Thought {
				sb.WriteString(p.Text)
			}
		}
	}
	for _, o := range x.Output {
		for _, c := range o.Content {
			if o.Type == "message" && c.Type == "output_text" {
				sb.WriteString(c.Text)
			}
		}
	}
	return sb.String(), nil
}

// streamText is the text of a streamed answer: Anthropic's text deltas or
// OpenAI's content deltas. A stream cut before its end (message_stop,
// [DONE]) is an error, not a shorter summary.
func streamText(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var sb strings.Builder
	done := false
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		data = bytes.TrimSpace(data)
		if ok && string(data) == "[DONE]" {
			done = true
		}
		if !ok || len(data) == 0 || data[0] != '{' {
			continue // event names, pings, [DONE]
		}
		var x answerJSON
		if err := json.Unmarshal(data, &x); err != nil {
			return "", fmt.Errorf("summary stream: %w", err)
		}
		if x.Error != nil {
			return "", fmt.Errorf("summary stream: upstream error: %s", textfmt.Clip(x.Error.Message, 300))
		}
		done = done || x.Type == "message_stop" || x.Type == "response.completed"
		switch x.Type {
		case "content_block_delta":
			var d struct{ Type, Text string }
			if json.Unmarshal(x.Delta, &d) == nil && d.Type == "text_delta" {
				sb.WriteString(d.Text)
			}
		case "response.output_text.delta":
			var d string
			if json.Unmarshal(x.Delta, &d) == nil {
				sb.WriteString(d)
			}
		}
		for _, c := range x.Choices {
			sb.WriteString(c.Delta.Content)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("summary stream: %w", err)
	}
	if !done {
		return "", errors.New("summary stream: the upstream ended it before the end of the answer")
	}
	return sb.String(), nil
}

// fitTranscript cuts a summary request's transcript to head and tail so
// the request stays under the window's hard limit for its max_tokens:
// the proxy's own requests obey the limit too. Three bytes a token leave
// room for JSON escapes and the prompt.
func (s *Server) fitTranscript(transcript string, window int) string {
	limit := compact.Config{Window: window, MaxOutput: maxSummaryTokens}.Budget().Limit
	n := max(limit-s.counter.Count(SummaryPrompt)-64, 256) * 3
	return toolresult.ClipText(transcript, n, "[… part of the conversation cut to fit the summary request in the window]")
}
