package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/toolresult"
)

// cut turns a plan's cuts into decisions: tool results become clear
// decisions whose placeholder is the result's head and tail, other values
// shrink decisions; every original is stored first, for recall.
func (s *Server) cut(ctx context.Context, req *request, cuts []Cut, present []int, session string, now time.Time) ([]store.Decision, error) {
	want := make(map[string]int, len(cuts))
	for _, c := range cuts {
		want[c.Hash] = c.Tokens
	}
	recallTool := recallToolOf(req.Tools)
	body := req.Body
	var clearHashes, clearTexts, shrinkHashes []string
	var shrinkRepl []json.RawMessage
	var originals []store.Original
	for _, i := range present {
		m := req.Messages[i]
		for _, b := range m.Blocks {
			tok, ok := want[b.Hash]
			if !ok || b.Type != "tool_result" || !b.Content.ok() {
				continue
			}
			delete(want, b.Hash)
			text := textOf(body, b.Content)
			n := cutChars(text, b.Content.e-b.Content.s, tok)
			if n >= len(text) {
				continue
			}
			clearHashes = append(clearHashes, b.Hash)
			clearTexts = append(clearTexts, toolresult.ClipText(text, n, cutNote(text, n, "result", b.Hash, recallTool)))
			originals = append(originals, store.Original{Hash: b.Hash, Session: session, Tool: b.Name,
				Label: keyArg(body, b.Input), Content: []byte(text), At: now})
		}
		if len(want) == 0 {
			break
		}
		for _, v := range cutValues(body, m) {
			h := valueHash(body, v.sp)
			tok, ok := want[h]
			if !ok {
				continue
			}
			delete(want, h)
			repl, orig, ok := cutValue(body, v, tok, h, recallTool)
			if !ok {
				continue
			}
			shrinkHashes = append(shrinkHashes, h)
			shrinkRepl = append(shrinkRepl, repl)
			originals = append(originals, store.Original{Hash: h, Session: session, Label: "cut to fit the window", Content: []byte(orig), At: now})
		}
	}
	if len(originals) == 0 {
		return nil, nil
	}
	// Originals first: nothing leaves the context before it is durable.
	if err := s.st(ctx).PutOriginals(ctx, originals); err != nil {
		return nil, fmt.Errorf("storing originals for recall: %w", err)
	}
	var nds []store.Decision
	if len(clearHashes) > 0 {
		data, _ := json.Marshal(clearTexts)
		nds = append(nds, store.Decision{Kind: store.KindClear, Hashes: clearHashes, Data: data, At: now})
	}
	if len(shrinkHashes) > 0 {
		data, err := json.Marshal(shrinkRepl)
		if err != nil {
			return nil, fmt.Errorf("writing the cut values: %w", err)
		}
		nds = append(nds, store.Decision{Kind: store.KindShrink, Hashes: shrinkHashes, Data: data, At: now})
	}
	return nds, nil
}

// dropMarker is the truncation marker that replaces the messages idx
// dropped to fit the window: which messages, the files they changed, the
// recall ids of their tool results (stored first), newest first, and the
// newest of the user's own words there, up to words tokens — compact's
// marker, for a conversation the proxy sees as JSON.
func (s *Server) dropMarker(ctx context.Context, req *request, idx []int, words int, session string, now time.Time) (string, error) {
	body := req.Body
	recallTool := recallToolOf(req.Tools)
	var originals []store.Original
	var ids, files []string
	seen := map[string]bool{}
	calls := 0
	for _, i := range idx {
		for _, b := range req.Messages[i].Blocks {
			switch b.Type {
			case "tool_use":
				calls++
				c := callInfo(body, b, s.calls).Classify()
				if (c.Kind == toolresult.KindEdit || c.Kind == toolresult.KindWrite) && c.Path != "" && !seen[c.Path] {
					seen[c.Path] = true
					files = append(files, c.Path)
				}
			case "tool_result":
				if !b.Content.ok() {
					continue
				}
				ids = append(ids, b.Hash)
				originals = append(originals, store.Original{Hash: b.Hash, Session: session, Tool: b.Name,
					Label: keyArg(body, b.Input), Content: []byte(textOf(body, b.Content)), At: now})
			}
		}
	}
	if len(originals) > 0 {
		if err := s.st(ctx).PutOriginals(ctx, originals); err != nil {
			return "", fmt.Errorf("storing originals for recall: %w", err)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: messages %d–%d (%d tool calls) were removed by ctxkit.", compact.DropMarker, idx[0]+1, idx[len(idx)-1]+1, calls)
	switch {
	case len(ids) == 0:
	case recallTool != "":
		fmt.Fprintf(&sb, " Call %s with one of the ids below to get a tool result back.]", recallTool)
	default:
		sb.WriteString(" Read the files again or re-run the commands if you need their output.]")
	}
	if !strings.HasSuffix(sb.String(), "]") {
		sb.WriteString("]")
	}
	if len(files) > 0 {
		sb.WriteString("\nFiles changed in the dropped turns: " + strings.Join(files, ", "))
	}
	if len(ids) > 0 {
		newest := ids[max(len(ids)-30, 0):]
		rev := make([]string, len(newest))
		for i, id := range newest {
			rev[len(newest)-1-i] = id
		}
		fmt.Fprintf(&sb, "\nRecall ids of the dropped tool results, newest first: %s.", strings.Join(rev, ", "))
	}
	marker := toolresult.ClipText(sb.String(), compact.MarkerTokens*3, "[…]")
	// The user's words, newest first within the budget, shown oldest first.
	var said []string
	left := words * 4
	for j := len(idx) - 1; j >= 0 && left > 0; j-- {
		m := req.Messages[idx[j]]
		if m.Role != "user" || hasResults(m) {
			continue
		}
		text := strings.TrimSpace(wordsOf(body, m))
		if text == "" {
			continue
		}
		if len(text) > left {
			text = toolresult.ClipText(text, left, "[… cut]")
		}
		left -= len(text)
		said = append(said, text)
	}
	if len(said) == 0 {
		return marker, nil
	}
	var wb strings.Builder
	wb.WriteString(marker)
	wb.WriteString("\nWhat the user said in the dropped turns, oldest first:")
	for j := len(said) - 1; j >= 0; j-- {
		wb.WriteString("\n---\n")
		wb.WriteString(said[j])
	}
	return wb.String(), nil
}

func hasResults(m message) bool {
	for _, b := range m.Blocks {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// wordsOf is the text of a user message: its string content, or its text
// parts.
func wordsOf(body []byte, m message) string {
	if m.Str {
		return str(body, m.Content)
	}
	if !m.Content.ok() || body[m.Content.s] != '[' {
		return ""
	}
	var sb strings.Builder
	elems(body, m.Content, func(_ int, e span) error {
		if body[e.s] != '{' {
			return nil
		}
		var typ, text string
		members(body, e, func(k []byte, v span) error {
			switch {
			case bytes.Equal(k, kType):
				typ = str(body, v)
			case bytes.Equal(k, kText) && body[v.s] == '"':
				text = str(body, v)
			}
			return nil
		})
		if typ == "text" || typ == "input_text" {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(text)
		}
		return nil
	})
	return sb.String()
}

// fitTranscript cuts a summary request's transcript to head and tail so
// the request stays under the window's hard limit for its max_tokens:
// the proxy's own requests obey the limit too. Three bytes a token leave
// room for JSON escapes and the prompt.
func (s *Server) fitTranscript(transcript string, window int) string {
	limit := compact.Config{Window: window, MaxOutput: maxSummaryTokens}.Budget().Limit
	n := max(limit-tokensOf(len(SummaryPrompt))-64, 256) * 3
	return toolresult.ClipText(transcript, n, "[… part of the conversation cut to fit the summary request in the window]")
}
