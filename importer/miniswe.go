package importer

import (
	"encoding/json"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// miniSWEAgent imports a mini-swe-agent trajectory (*.traj.json): messages
// is the exact chat prompt; each response's single ```bash block becomes
// a bash call and the next user message its result.
func (r *run) miniSWEAgent() error {
	call := ""      // id of the last step's call
	asked := false  // the task has been given
	native := false // the trajectory uses native tool calls (2.x)
	return r.document(func(s *stream, key string) error {
		switch key {
		case "messages":
			return elements(r, s, func(i int, m *miniMessage) error {
				r.b.at = time.Time{}
				if ts := m.Extra.Timestamp; ts > 0 {
					r.b.at = time.Unix(0, int64(ts*1e9)).UTC()
				}
				text, err := textParts(m.Content)
				if err != nil {
					return fmt.Errorf("%w: messages[%d]: %v", ErrMalformed, i, jsonerr.What(err))
				}
				switch m.Role {
				case "system":
					r.b.systemText(text)
				case "assistant":
					if len(m.ToolCalls) > 0 || native {
						// 2.x (format mini-swe-agent-1.1): native tool calls.
						native = true
						r.miniNative(m, text)
						call = ""
						break
					}
					thought, command, ok := miniAction(text)
					call = r.b.textStep(thought, command, ok)
					r.b.last().Usage = m.usage()
				case "tool":
					out, code := miniObservation(text)
					r.b.user(r.b.result(m.ToolCallID, out, code > 0))
				case "exit":
					// The run's end (its submission); never sent to the model.
					r.skip("exit")
				case "user":
					switch {
					case !asked:
						r.b.user(conv.NewText(conv.SourceUser, text))
						asked = true
					default:
						out, code := miniObservation(text)
						r.b.observation(call, out, code > 0)
						call = ""
					}
				default:
					r.unknown("message role " + m.Role)
				}
				return nil
			})
		case "info":
			var info struct {
				Config struct {
					Model struct {
						Name string `json:"model_name"`
					} `json:"model"`
				} `json:"config"`
			}
			if err := s.decode(&info); err != nil {
				return err
			}
			r.s.Model = info.Config.Model.Name
			return nil
		}
		return s.skip()
	})
}

// miniMessage is one message of a mini-swe-agent trajectory: 1.x has
// role and content only; 2.x (format mini-swe-agent-1.1) adds OpenAI
// tool_calls, role "tool" results with tool_call_id, and a final role
// "exit" message. Both record the provider response in extra.response.
type miniMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	Extra struct {
		Timestamp float64 `json:"timestamp"` // Unix seconds (2.x)
		Response  struct {
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Details    *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				CacheWrite int `json:"cache_creation_input_tokens"`
			} `json:"usage"`
		} `json:"response"`
	} `json:"extra"`
}

// usage is the recorded usage of the response (OpenAI semantics: prompt
// tokens include the cached ones).
func (m *miniMessage) usage() *conv.Usage {
	u := m.Extra.Response.Usage
	if u == nil {
		return nil
	}
	cached := 0
	if u.Details != nil {
		cached = min(u.Details.Cached, u.Prompt)
	}
	write := min(u.CacheWrite, u.Prompt-cached)
	return &conv.Usage{Input: u.Prompt - cached - write, CacheRead: cached, CacheWrite: write, Output: u.Completion}
}

// miniNative adds a 2.x response: its text and its native tool calls.
func (r *run) miniNative(m *miniMessage, text string) {
	var bs []conv.Block
	if strings.TrimSpace(text) != "" {
		bs = append(bs, conv.NewText(conv.SourceAssistant, text))
	}
	for _, tc := range m.ToolCalls {
		bs = append(bs, r.b.call(tc.ID, tc.Function.Name, wire.Arguments(tc.Function.Arguments)))
	}
	if len(bs) == 0 { // an empty response: Repair drops it and says so
		bs = append(bs, conv.NewText(conv.SourceAssistant, text))
	}
	r.b.assistant(bs...)
	r.b.last().Usage = m.usage()
}

// tick checks for cancellation every so often.
func (r *run) tick(i int) error {
	if i%256 == 0 {
		return r.ctx.Err()
	}
	return nil
}

// rest reports documents after the first one (an output.jsonl with
// several records): only the first is imported.
func (r *run) rest(s *stream) error {
	n := 0
	for s.dec.More() {
		if err := s.skip(); err != nil {
			r.w.add("after the first record: %v", r.jsonErr(s, err))
			return nil
		}
		n++
	}
	if n > 0 {
		r.w.add("the file holds %d more record(s) after the first; only the first was imported", n)
	}
	return nil
}
