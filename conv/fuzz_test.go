package conv_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/conv/convtest"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// seeds are small inputs that reach every shape the generator has.
var seeds = [][]byte{
	nil,
	{0},
	{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
	{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
	{255, 1, 254, 2, 253, 3, 252, 4, 251, 5, 250, 6, 249, 7, 248, 8, 247, 9, 246, 10},
	[]byte("parallel tool calls, thinking, images and summaries"),
	bytes.Repeat([]byte{7, 200, 13, 91, 2}, 40),
}

// jsonEqual compares raw JSON by meaning: encoding/json compacts and
// HTML-escapes a RawMessage, which changes bytes but not content.
var jsonEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(x, y)
})

// FuzzValid: a random valid conversation (with opaque blocks and server
// tool calls in two cases of three) passes Check, and still passes it
// after a JSON round trip that loses nothing, and after an Anthropic one
// that gives the same bytes again.
func FuzzValid(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := len(data)%2 == 0
		c := convtest.Valid(convtest.NewChoices(data), convtest.Options{Request: req, Opaque: len(data)%3 != 0})
		check := conv.Check
		if req {
			check = conv.CheckRequest
		}
		if vs := check(c); len(vs) > 0 {
			t.Fatalf("generated conversation is invalid: %v", vs)
		}
		enc, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back conv.Conversation
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("decoding %s: %v", enc, err)
		}
		if vs := check(&back); len(vs) > 0 {
			t.Fatalf("invalid after a JSON round trip: %v", vs)
		}
		// Every field of the model is encoded, so a field lost or altered
		// on the way in shows up in the second encoding. (cmp.Equal would
		// say the same at a thousandth of the fuzzing speed.)
		again, err := json.Marshal(&back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, again) {
			t.Fatalf("JSON round trip changed the conversation:\n%s", cmp.Diff(c, &back, jsonEqual))
		}

		// Through the Anthropic request body and back: still valid, and
		// encoding the decoded request gives the same bytes.
		body, err := wire.EncodeAnthropic(&llm.Request{System: c.System, Tools: c.Tools, Messages: c.Messages})
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := wire.DecodeAnthropic(body)
		if err != nil {
			t.Fatalf("decoding %s: %v", body, err)
		}
		dec := &conv.Conversation{System: decoded.System, Tools: decoded.Tools, Messages: decoded.Messages}
		if vs := check(dec); len(vs) > 0 {
			t.Fatalf("invalid after an Anthropic round trip: %v\n%s", vs, body)
		}
		if len(dec.Messages) != len(c.Messages) {
			t.Fatalf("Anthropic round trip: %d messages, want %d", len(dec.Messages), len(c.Messages))
		}
		body2, err := wire.EncodeAnthropic(decoded)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, body2) {
			t.Fatalf("re-encoding differs:\n%s\n%s", body, body2)
		}
	})
}

// FuzzMutation: every mutation of a valid conversation is caught, as a
// violation of the rule it breaks, located in the conversation.
func FuzzMutation(f *testing.F) {
	for i, s := range seeds {
		for m := range convtest.Mutations() {
			if (i+m)%3 == 0 {
				f.Add(s, uint8(m))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		ch := convtest.NewChoices(data)
		c := convtest.Valid(ch, convtest.Options{})
		ms := convtest.Mutations()
		mut := ms[int(which)%len(ms)]
		if !mut.Apply(c, ch) {
			return
		}
		vs := conv.Check(c)
		if !slices.ContainsFunc(vs, func(v conv.Violation) bool { return slices.Contains(mut.Rules, v.Rule) }) {
			t.Fatalf("%s: want a violation of %v, got %v", mut.Name, mut.Rules, vs)
		}
		for _, v := range vs {
			if v.Msg < -1 || v.Msg >= len(c.Messages)+1 || v.Detail == "" {
				t.Errorf("%s: violation badly located: %+v", mut.Name, v)
			}
		}
	})
}

// FuzzRepair: Repair turns any damaged conversation, mutated from a valid
// one or built at random, into one that passes Check, reports a fix
// whenever it changed something, and has nothing left to fix on a second
// pass.
func FuzzRepair(f *testing.F) {
	for i, s := range seeds {
		f.Add(s, []byte{byte(i), byte(3 * i), byte(7 * i)}, i%3 == 0)
	}
	f.Fuzz(func(t *testing.T, data, muts []byte, arbitrary bool) {
		ch := convtest.NewChoices(data)
		var c *conv.Conversation
		if arbitrary {
			c = convtest.Arbitrary(ch)
		} else {
			c = convtest.Valid(ch, convtest.Options{})
			ms := convtest.Mutations()
			for _, w := range muts[:min(len(muts), 6)] {
				if m := ms[int(w)%len(ms)]; m.Repairable {
					m.Apply(c, ch)
				}
			}
		}
		before := conv.Check(c)
		fixes := conv.Repair(c)
		if vs := conv.Check(c); len(vs) > 0 {
			t.Fatalf("after Repair (fixes %v): %v", fixes, vs)
		}
		if len(before) > 0 && len(fixes) == 0 {
			t.Fatalf("Repair fixed %v without reporting a fix", before)
		}
		if again := conv.Repair(c); len(again) > 0 {
			t.Fatalf("second Repair still fixed %v", again)
		}
	})
}
