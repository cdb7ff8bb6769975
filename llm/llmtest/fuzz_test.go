package llmtest

import (
	"encoding/json"
	"testing"
)

// FuzzRequests feeds arbitrary bodies to both validators and the cache
// layout: they must never panic, and canonical form must be stable.
func FuzzRequests(f *testing.F) {
	f.Add(anthBody(`[` + userHi + `,` + callRead + `,{"role":"user","content":[` + result1 + `]}]`))
	f.Add(anthBody(`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]`, `"cache_control":{"type":"ephemeral"}`))
	f.Add(oaiBody(`[` + oUser + `,` + oCall + `,` + oTool + `]`))
	f.Add(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"image"}]}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		cfg := Config{}.withDefaults()
		if req, msg := parseAnthropic([]byte(body), cfg); msg == "" {
			validateAnthropic(req)
			req.positions()
			req.convMessages()
		}
		if req, e := parseOpenAI([]byte(body), cfg); e == nil {
			validateOpenAI(req)
			req.positions()
			req.convMessages()
		}
		if json.Valid([]byte(body)) {
			c := canonical([]byte(body))
			if !json.Valid(c) {
				t.Fatalf("canonical form is not JSON: %s", c)
			}
			if c2 := canonical(c); string(c2) != string(c) {
				t.Fatalf("canonical form is not stable:\n%s\n%s", c, c2)
			}
		}
	})
}
