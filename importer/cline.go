package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// clineMessage is one entry of a Cline or Roo Code task's
// api_conversation_history.json: an Anthropic MessageParam plus the
// extension's own fields.
type clineMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Ts        int64           `json:"ts"` // Unix milliseconds
	ModelInfo *struct {
		ModelID string `json:"modelId"`
	} `json:"modelInfo"`
	Metrics *struct {
		Tokens *struct {
			Prompt     int `json:"prompt"` // cached included
			Completion int `json:"completion"`
			Cached     int `json:"cached"`
		} `json:"tokens"`
	} `json:"metrics"`
	// Roo Code's context condensing: a summary message, and the messages
	// it replaced in the requests that followed.
	IsSummary      bool   `json:"isSummary"`
	CondenseParent string `json:"condenseParent"`
}

// anthropicBlockTypes are the content blocks the Anthropic decoder reads.
var anthropicBlockTypes = map[string]bool{
	"text": true, "image": true, "tool_use": true, "tool_result": true, "thinking": true, "redacted_thinking": true,
}

// clineToolResultRE matches the text Cline writes for a tool's result when
// tools are called through XML in the response text (before native tool
// calls): "[read_file for 'a.go'] Result:".
var clineToolResultRE = regexp.MustCompile(`\A\[[a-z_]+(?: for [^\]]*)?\] Result:`)

// cline imports a Cline / Roo Code task history (api_conversation_history.json
// in the task's folder under the extension's VS Code global storage): the
// Anthropic messages the extension sent, with its usage metrics and
// timestamps.
func (r *run) cline() error {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return err
	}
	var msgs []clineMessage
	if err := json.Unmarshal(bytes.TrimPrefix(data, bom), &msgs); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	r.total = len(msgs)
	asked := false
	for i, m := range msgs {
		if err := r.tick(i); err != nil {
			return err
		}
		r.b.at = time.Time{}
		if m.Ts > 0 {
			r.b.at = time.UnixMilli(m.Ts).UTC()
		}
		role := conv.Role(m.Role)
		if role != conv.RoleUser && role != conv.RoleAssistant {
			r.unknown("message role " + m.Role)
			continue
		}
		content, err := r.clineContent(m.Content)
		if err != nil {
			return fmt.Errorf("%w: message %d: %v", ErrMalformed, i, err)
		}
		bs, err := wire.DecodeAnthropicContent(role, content)
		if err != nil {
			return fmt.Errorf("%w: message %d: %v", ErrMalformed, i, err)
		}
		r.countOpaque(bs)
		r.b.named(bs)
		if m.CondenseParent != "" {
			// Kept in the file, left out of the requests after the
			// summary that replaced it (Roo Code's non-destructive condensing).
			r.skip("condensed message (still imported)")
		}
		if role == conv.RoleAssistant {
			if m.ModelInfo != nil && m.ModelInfo.ModelID != "" {
				r.s.Model = m.ModelInfo.ModelID
			}
			r.b.assistant(bs...)
			if t := m.Metrics; t != nil && t.Tokens != nil && r.b.last() != nil && r.b.last().Role == conv.RoleAssistant {
				cached := min(t.Tokens.Cached, t.Tokens.Prompt)
				r.b.last().Usage = &conv.Usage{Input: t.Tokens.Prompt - cached, CacheRead: cached, Output: t.Tokens.Completion}
			}
			continue
		}
		inResult := false // after a "[tool] Result:" marker, the text is the tool's output
		for j := range bs {
			b := &bs[j]
			if b.Type != conv.TypeText {
				continue
			}
			t := strings.TrimSpace(b.Text)
			switch {
			case inResult && !strings.HasPrefix(t, "<environment_details>"):
				b.Meta = conv.DefaultMeta(conv.TypeText, conv.SourceTool)
				continue
			case m.IsSummary: // Roo Code's condensing summary, as a user message
				*b = conv.NewSummary(b.Text, conv.Span{First: 1, Last: max(1, r.b.rounds())})
			case strings.HasPrefix(t, "<environment_details>"), strings.HasPrefix(t, "[TASK RESUMPTION]"):
				b.Meta = conv.DefaultMeta(conv.TypeText, conv.SourceHook)
				inResult = false
			case clineToolResultRE.MatchString(t):
				b.Meta = conv.DefaultMeta(conv.TypeText, conv.SourceTool)
				inResult = true
			case asked && strings.HasPrefix(t, "[ERROR]"):
				b.Meta = conv.DefaultMeta(conv.TypeText, conv.SourceHook)
			}
		}
		asked = true
		if m.IsSummary {
			r.b.epoch(bs...)
			continue
		}
		r.b.user(bs...)
	}
	return nil
}

// clineContent drops the content blocks the Anthropic decoder does not read
// (documents, provider-specific reasoning), counting them.
func (r *run) clineContent(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return raw, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	kept := blocks[:0]
	for _, b := range blocks {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &t)
		switch {
		case anthropicBlockTypes[t.Type]:
			kept = append(kept, b)
		case t.Type == "document" || t.Type == "reasoning":
			r.skip("content block " + t.Type)
		default:
			r.unknown("content block " + t.Type)
		}
	}
	return json.Marshal(kept)
}
