package serve

import (
	"strings"
	"testing"
)

// TestWithAnswer: the client's max_tokens is lowered, in place and with
// every other byte as sent, only to the room the engine left when that is
// less than asked, and never to or under a thinking budget.
func TestWithAnswer(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		name, api, body string
		answer          int
		want            string
	}{
		{"anthropic, lowered", "messages", `{"model":"m","max_tokens":32000,` + msgs + `}`, 9000,
			`{"model":"m","max_tokens":9000,` + msgs + `}`},
		{"anthropic, fits", "messages", `{"model":"m","max_tokens":8000,` + msgs + `}`, 9000,
			`{"model":"m","max_tokens":8000,` + msgs + `}`},
		{"anthropic, no room decided", "messages", `{"model":"m","max_tokens":32000,` + msgs + `}`, 0,
			`{"model":"m","max_tokens":32000,` + msgs + `}`},
		{"anthropic, above the thinking budget", "messages", `{"model":"m",` + msgs + `,"thinking":{"type":"enabled","budget_tokens":4000},"max_tokens": 32000}`, 9000,
			`{"model":"m",` + msgs + `,"thinking":{"type":"enabled","budget_tokens":4000},"max_tokens": 9000}`},
		{"anthropic, at the thinking budget", "messages", `{"model":"m","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":9000},` + msgs + `}`, 9000,
			`{"model":"m","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":9000},` + msgs + `}`},
		{"chat, max_completion_tokens", "chat", `{"model":"m","max_completion_tokens":16384,` + msgs + `}`, 5000,
			`{"model":"m","max_completion_tokens":5000,` + msgs + `}`},
		{"chat, none asked", "chat", `{"model":"m",` + msgs + `}`, 5000,
			`{"model":"m",` + msgs + `}`},
		{"responses", "responses", `{"model":"m","input":[{"role":"user","content":"hi"}],"max_output_tokens":20000}`, 7000,
			`{"model":"m","input":[{"role":"user","content":"hi"}],"max_output_tokens":7000}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{parses: newParseCache()}
			req, err := s.parse(t.Context(), "", tt.api, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			// The render's splices, before the value or after it, stay
			// in order: here the user's "hi" becomes "HI".
			at := strings.Index(tt.body, `"hi"`)
			sp := []splice{{s: at, e: at + 4, repl: []byte(`"HI"`)}}
			got := string(applySplices(req.Body, withAnswer(sp, req, tt.answer)))
			if want := strings.Replace(tt.want, `"hi"`, `"HI"`, 1); got != want {
				t.Errorf("body\n%s\nwant\n%s", got, want)
			}
		})
	}
}
