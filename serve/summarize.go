package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/textfmt"
)

// SummaryPrompt is the system prompt of the proxy's summary requests.
const SummaryPrompt = "You are summarizing part of a coding agent's conversation so it can continue without it. " +
	"Write a structured summary: the user's goal and instructions, what was done and found (files, commands, " +
	"errors and their fixes, decisions), and what is still open. Keep identifiers, paths, numbers and error " +
	"strings exactly. Do not include file contents; name the files instead."

const (
	maxSummaryTokens = 4096
	summaryTimeout   = 120 * time.Second
	resultClip       = 2000 // bytes of each tool result shown to the summarizer
)

// summarize writes the summary of req.Messages[idx...]: through the
// upstream with the client's own credentials, else extractively. It
// returns the text (wrapped in <summary>) and the method.
func (s *Server) summarize(ctx context.Context, h http.Header, req *request, idx []int) (string, string) {
	transcript := s.fitTranscript(render(req, idx))
	turns := fmt.Sprintf("%d-%d", idx[0]+1, idx[len(idx)-1]+1)
	text, err := s.summarizeUpstream(ctx, h, req, transcript)
	method := "model"
	if err != nil || strings.TrimSpace(text) == "" {
		s.log.Warn("summary through the upstream failed; using the extractive summary", "err", err)
		text, method = extractive(req, idx, s.cfg.Window/10*4), "extractive"
	}
	if limit := s.cfg.Window / 5 * 4; len(text) > limit { // a summary may never crowd out the window
		text, method = text[:limit]+"\n[ctxkit: summary truncated]", "truncation"
	}
	return fmt.Sprintf("<summary turns=%q by=\"ctxkit\">\n%s\n</summary>", turns, strings.TrimSpace(text)), method
}

// render is the span as a plain transcript for the summarizer.
func render(req *request, idx []int) string {
	var sb strings.Builder
	body := req.Body
	for _, i := range idx {
		m := req.Messages[i]
		fmt.Fprintf(&sb, "## %s\n", m.Role)
		if m.Str {
			sb.WriteString(str(body, m.Content))
			sb.WriteString("\n")
			continue
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case "text":
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

// extractive keeps the first lines of what the user and the assistant said
// and the tool calls, up to limit bytes.
func extractive(req *request, idx []int, limit int) string {
	var sb strings.Builder
	sb.WriteString("Earlier turns (extractive summary; the model summary was unavailable):\n")
	body := req.Body
	for _, i := range idx {
		m := req.Messages[i]
		line := func(s string) {
			s = strings.TrimSpace(s)
			if s == "" || sb.Len() > limit {
				return
			}
			if j := strings.IndexByte(s, '\n'); j >= 0 {
				s = s[:j]
			}
			fmt.Fprintf(&sb, "- %s: %s\n", m.Role, textfmt.Clip(s, 200))
		}
		if m.Str {
			line(str(body, m.Content))
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case "text":
				line(blockText(body, b))
			case "tool_use":
				line("called " + b.Name + " " + keyArg(body, b.Input))
			}
		}
	}
	return sb.String()
}

// summarizeUpstream asks the upstream for the summary with the client's
// credentials and API version headers.
func (s *Server) summarizeUpstream(ctx context.Context, h http.Header, req *request, transcript string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	model := s.summaryModel(req)
	user := "Summarize this part of the conversation:\n\n" + transcript
	var body []byte
	var url string
	out := http.Header{}
	if req.Provider == providerOpenAI {
		url = s.openai.String() + "/chat/completions"
		body, _ = json.Marshal(map[string]any{"model": model, "max_completion_tokens": maxSummaryTokens,
			"messages": []map[string]string{{"role": "system", "content": SummaryPrompt}, {"role": "user", "content": user}}})
		for _, k := range []string{"Authorization", "Openai-Organization", "Openai-Project"} {
			if v := h.Get(k); v != "" {
				out.Set(k, v)
			}
		}
	} else {
		url = s.anthropic.String() + "/v1/messages"
		body, _ = json.Marshal(map[string]any{"model": model, "max_tokens": maxSummaryTokens, "system": SummaryPrompt,
			"messages": []map[string]string{{"role": "user", "content": user}}})
		for _, k := range []string{"X-Api-Key", "Authorization", "Anthropic-Version"} {
			if v := h.Get(k); v != "" {
				out.Set(k, v)
			}
		}
		if out.Get("Anthropic-Version") == "" {
			out.Set("Anthropic-Version", "2023-06-01")
		}
	}
	out.Set("Content-Type", "application/json")
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hr.Header = out
	resp, err := s.cfg.Client.Do(hr)
	if err != nil {
		return "", fmt.Errorf("summary request: %s", redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("summary request: upstream answered %s: %s", resp.Status, textfmt.Clip(string(data), 300))
	}
	var x struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
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
	return sb.String(), nil
}
