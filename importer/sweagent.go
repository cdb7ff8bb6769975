package importer

import (
	"encoding/json"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// sweMessage is one entry of a SWE-agent trajectory's history.
type sweMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Thought   string          `json:"thought"`
	Action    string          `json:"action"`
	IsDemo    bool            `json:"is_demo"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallIDs []string `json:"tool_call_ids"`
}

// sweAgent imports a SWE-agent trajectory (*.traj). history is the model's
// message list: in-context demonstrations (is_demo) are dropped; text
// actions become bash calls answered by the next user message; the
// function-calling variant's tool_calls and tool messages map natively.
// The per-step trajectory (which repeats the prompt) is skipped unread.
func (r *run) sweAgent() error {
	call := "" // id of the last text action's call
	asked := false
	demos := 0
	return r.document(func(s *stream, key string) error {
		if key != "history" {
			return s.skip()
		}
		return elements(r, s, func(i int, m *sweMessage) error {
			if m.IsDemo {
				demos++
				r.skip("demonstration")
				return nil
			}
			text, err := textParts(m.Content)
			if err != nil {
				return fmt.Errorf("%w: history[%d]: %v", ErrMalformed, i, jsonerr.What(err))
			}
			switch m.Role {
			case "system":
				r.b.systemText(text)
			case "assistant":
				call = ""
				if len(m.ToolCalls) > 0 {
					var bs []conv.Block
					if text != "" {
						bs = append(bs, conv.NewText(conv.SourceAssistant, text))
					}
					for _, tc := range m.ToolCalls {
						bs = append(bs, r.b.call(tc.ID, tc.Function.Name, wire.Arguments(tc.Function.Arguments)))
					}
					r.b.assistant(bs...)
					return nil
				}
				thought, command, ok := sweAction(text, m.Thought, m.Action)
				call = r.b.textStep(thought, command, ok)
			case "tool":
				for _, id := range m.ToolCallIDs {
					r.b.user(r.b.result(id, text, false))
				}
				if len(m.ToolCallIDs) == 0 {
					r.b.user(conv.NewText(conv.SourceTool, text))
				}
			case "user":
				switch {
				case !asked:
					r.b.user(conv.NewText(conv.SourceUser, text))
					asked = true
				default:
					r.b.observation(call, text, false)
					call = ""
				}
			default:
				r.unknown("history role " + m.Role)
			}
			return nil
		})
	})
}
