package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// geminiMessage is a MessageRecord of a Gemini CLI session
// (packages/core/src/services/chatRecordingTypes.ts).
type geminiMessage struct {
	ID        string           `json:"id"`
	Timestamp string           `json:"timestamp"`
	Type      string           `json:"type"` // user, gemini, info, error, warning
	Content   json.RawMessage  `json:"content"`
	ToolCalls []geminiToolCall `json:"toolCalls"`
	Thoughts  json.RawMessage  `json:"thoughts"`
	Tokens    *struct {
		Input    int `json:"input"`  // promptTokenCount, cached included
		Output   int `json:"output"` // candidatesTokenCount
		Cached   int `json:"cached"`
		Thoughts int `json:"thoughts"`
	} `json:"tokens"`
	Model string `json:"model"`
}

type geminiToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Status string          `json:"status"`
}

// geminiParts reads a PartListUnion: a string, a part, or a list of
// strings and parts.
func geminiParts(raw json.RawMessage) ([]wire.GeminiPart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return []wire.GeminiPart{{Text: &s}}, err
	case '{':
		var p wire.GeminiPart
		err := json.Unmarshal(raw, &p)
		return []wire.GeminiPart{p}, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("content is neither text, a part nor a list of parts: %v", err)
	}
	var out []wire.GeminiPart
	for _, it := range items {
		ps, err := geminiParts(it)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// gemini imports a Gemini CLI session: the JSONL log of current versions
// (~/.gemini/tmp/<project>/chats/session-*.jsonl: a metadata line, message
// records where a later record with the same id replaces the earlier one,
// $rewindTo and $set records), the single JSON document of earlier ones
// (session-*.json), or a /chat save checkpoint (checkpoint-*.json, the
// Gemini API history: a list of {role, parts}).
func (r *run) gemini() error {
	f, err := os.Open(r.path)
	if err != nil {
		return err
	}
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = bytes.TrimLeft(bytes.TrimPrefix(head[:n], bom), " \t\r\n")
	if len(head) > 0 && head[0] == '[' {
		return r.geminiCheckpoint()
	}
	msgs, err := r.geminiMessages()
	if err != nil {
		return err
	}
	return r.geminiSession(msgs)
}

// geminiMessages reads the message records of a session file, JSONL or a
// single JSON document.
func (r *run) geminiMessages() ([]geminiMessage, error) {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, bom)
	var doc struct {
		SessionID string          `json:"sessionId"`
		Messages  []geminiMessage `json:"messages"`
	}
	if json.Unmarshal(data, &doc) == nil && doc.SessionID != "" {
		r.total = len(doc.Messages)
		return doc.Messages, nil // a session from before the JSONL log
	}
	var order []string
	byID := map[string]geminiMessage{}
	var replaced []geminiMessage // the history as last replaced by $set.messages
	ls := newLines(bytes.NewReader(data), MaxLine)
	for {
		line, err := ls.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r.total++
		var rec struct {
			geminiMessage
			RewindTo *string `json:"$rewindTo"`
			Set      *struct {
				Messages []geminiMessage `json:"messages"`
			} `json:"$set"`
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			if err := r.damaged(ls.n, err); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case rec.RewindTo != nil:
			// The user rewound: the messages from this one on are gone.
			for i, id := range order {
				if id == *rec.RewindTo {
					for _, gone := range order[i:] {
						delete(byID, gone)
						r.skip("message removed by a rewind")
					}
					order = order[:i]
					break
				}
			}
		case rec.Set != nil:
			if len(rec.Set.Messages) > 0 {
				replaced = rec.Set.Messages
			}
		case rec.ID != "":
			if _, ok := byID[rec.ID]; !ok {
				order = append(order, rec.ID)
			}
			byID[rec.ID] = rec.geminiMessage
		case rec.SessionID != "":
			// The metadata line.
		default:
			r.unknown("record without id")
		}
	}
	if replaced != nil {
		// Gemini CLI itself resumes from the replaced history (after a
		// compression or masking), not from the records before it.
		r.skip("messages before a history replacement")
		return replaced, nil
	}
	msgs := make([]geminiMessage, 0, len(order))
	for _, id := range order {
		msgs = append(msgs, byID[id])
	}
	return msgs, nil
}

// geminiSession converts session messages: a gemini message is one
// response, its text and its tool calls, and the calls' results are the
// next user message.
func (r *run) geminiSession(msgs []geminiMessage) error {
	for i, m := range msgs {
		if err := r.tick(i); err != nil {
			return err
		}
		r.b.at, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
		parts, err := geminiParts(m.Content)
		if err != nil {
			return fmt.Errorf("%w: message %s: %v", ErrMalformed, m.ID, err)
		}
		switch m.Type {
		case "user":
			r.b.user(r.geminiBlocks(parts, conv.SourceUser)...)
		case "gemini":
			if m.Model != "" {
				r.s.Model = m.Model
			}
			bs := r.geminiBlocks(parts, conv.SourceAssistant)
			ids := make([]string, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				call := r.b.call(tc.ID, tc.Name, geminiArgs(tc.Args))
				ids[j] = call.ToolUseID
				bs = append(bs, call)
			}
			if len(bs) == 0 {
				r.skip("gemini message without content")
				continue
			}
			r.b.assistant(bs...)
			if t := m.Tokens; t != nil {
				cached := min(t.Cached, t.Input)
				r.b.last().Usage = &conv.Usage{Input: t.Input - cached, CacheRead: cached, Output: t.Output + t.Thoughts}
			}
			for j, tc := range m.ToolCalls {
				rps, err := geminiParts(tc.Result)
				if err != nil {
					return fmt.Errorf("%w: tool call %s: %v", ErrMalformed, tc.ID, err)
				}
				text, isErr := geminiResult(rps)
				if len(rps) == 0 && tc.Status != "success" {
					text, isErr = fmt.Sprintf("[tool call %s]", strings.ToLower(cmpOr(tc.Status, "not run"))), true
				}
				r.b.user(r.b.result(ids[j], text, isErr || tc.Status == "error"))
			}
		case "info", "error", "warning":
			r.skip(m.Type) // shown to the user, never sent to the model
		default:
			r.unknown("message type " + m.Type)
		}
	}
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// geminiCheckpoint imports a /chat save checkpoint: the Gemini API
// history, a list of {role: user|model, parts}.
func (r *run) geminiCheckpoint() error {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return err
	}
	var contents []struct {
		Role  string          `json:"role"`
		Parts json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(bytes.TrimPrefix(data, bom), &contents); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	r.total = len(contents)
	var pending []string // ids of calls waiting for their response, in order
	for i, c := range contents {
		parts, err := geminiParts(c.Parts)
		if err != nil {
			return fmt.Errorf("%w: entry %d: %v", ErrMalformed, i, err)
		}
		switch c.Role {
		case "model":
			bs := r.geminiBlocks(parts, conv.SourceAssistant)
			pending = pending[:0]
			for _, p := range parts {
				if fc := p.FunctionCall; fc != nil {
					call := r.b.call(fc.ID, fc.Name, geminiArgs(fc.Args))
					pending = append(pending, call.ToolUseID)
					bs = append(bs, call)
				}
			}
			if len(bs) == 0 {
				r.skip("model entry without content")
				continue
			}
			r.b.assistant(bs...)
		case "user":
			var bs []conv.Block
			for _, p := range parts {
				if fr := p.FunctionResponse; fr != nil {
					id := fr.ID
					if id == "" && len(pending) > 0 {
						id, pending = pending[0], pending[1:]
					}
					text, isErr := geminiResult([]wire.GeminiPart{p})
					bs = append(bs, r.b.result(id, text, isErr))
				}
			}
			bs = append(bs, r.geminiBlocks(parts, conv.SourceUser)...)
			r.b.user(bs...)
		default:
			r.unknown("history role " + c.Role)
		}
	}
	return nil
}

// geminiBlocks converts the text and media parts; thought parts (summaries
// the model showed, never sent back) and function parts are left to the
// caller.
func (r *run) geminiBlocks(parts []wire.GeminiPart, src conv.Source) []conv.Block {
	var bs []conv.Block
	for _, p := range parts {
		switch {
		case p.Thought:
			r.skip("thought part")
		case p.FunctionCall != nil, p.FunctionResponse != nil:
		case p.InlineData != nil:
			img, err := wire.ImageFromBase64(p.InlineData.MimeType, p.InlineData.Data, src)
			if err != nil {
				r.skip("inline data without a media type or data")
				continue
			}
			bs = append(bs, img)
		case p.FileData != nil:
			bs = append(bs, conv.NewText(src, fmt.Sprintf("[file %s (%s)]", p.FileData.URI, p.FileData.MimeType)))
		case p.Text != nil && strings.TrimSpace(*p.Text) != "":
			bs = append(bs, wire.Text(src, *p.Text)) // Gemini CLI's session context is not typed
		}
	}
	return bs
}

// geminiArgs is a call's args as a tool input (an object).
func geminiArgs(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return json.RawMessage("{}")
	}
	return compact(raw)
}

// geminiResult is the text the model got back from a call: the
// functionResponse's output (or error), else its JSON, plus any text parts.
func geminiResult(parts []wire.GeminiPart) (string, bool) {
	var texts []string
	isErr := false
	for _, p := range parts {
		switch {
		case p.FunctionResponse != nil:
			if len(p.FunctionResponse.Response) == 0 {
				continue
			}
			t, e := p.FunctionResponse.Result()
			texts = append(texts, t)
			isErr = isErr || e
		case p.Text != nil && *p.Text != "":
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n"), isErr
}
