package importer

import (
	"encoding/json"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"

	"github.com/ctxkit/ctxkit/conv"
)

// miniSWEAgent imports a mini-swe-agent trajectory (*.traj.json): messages
// is the exact chat prompt; each response's single ```bash block becomes
// a bash call and the next user message its result.
func (r *run) miniSWEAgent() error {
	s, err := openStream(r.path, r.strict)
	if err != nil {
		return err
	}
	defer s.Close()
	call := ""     // id of the last step's call
	asked := false // the task has been given
	err = s.object(func(key string) error {
		switch key {
		case "messages":
			return s.array(func(i int) error {
				var m struct {
					Role    string          `json:"role"`
					Content json.RawMessage `json:"content"`
				}
				if err := s.decode(&m); err != nil {
					return err
				}
				if err := r.tick(i); err != nil {
					return err
				}
				text, err := textParts(m.Content)
				if err != nil {
					return fmt.Errorf("%w: messages[%d]: %v", ErrMalformed, i, jsonerr.What(err))
				}
				switch m.Role {
				case "system":
					r.b.systemText(text)
				case "assistant":
					thought, command, ok := miniAction(text)
					call = r.b.textStep(thought, command, ok)
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
					r.w.add("messages[%d]: role %q skipped", i, m.Role)
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
	if err != nil {
		return r.jsonErr(s, err)
	}
	r.utf8Warning(s.u)
	return r.rest(s)
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
