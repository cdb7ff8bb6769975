package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
)

// longSession has eight rounds of a read with a 400-character result, so
// that seed-micro (keep 3, eager) clears the early ones in place.
func longSession() *conv.Conversation {
	c := &conv.Conversation{System: []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")}}
	c.Stamp(c.System)
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "Read every file.")}})
	for i := range 8 {
		id := fmt.Sprintf("t%d", i)
		c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
			conv.NewToolUse(id, "bash", json.RawMessage(fmt.Sprintf(`{"command":"cat f%d.txt"}`, i))),
		}})
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
			conv.NewToolResult(id, "bash", fmt.Sprintf("contents of f%d: %s", i, strings.Repeat("x", 400)), false),
		}})
	}
	c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Done.")}})
	return c
}

func TestRequestsAt(t *testing.T) {
	rec := longSession()
	factories, err := Lookup("none,seed-micro")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Window: 200_000, Pricing: pricing.Anthropic(), Counter: words{}, Strategies: factories,
		Summarize: func(context.Context, []conv.Message) (string, error) { return "summary", nil }}
	last := len(rec.Messages) - 1
	// 2 is a user message and 999 is out of range: both are ignored.
	got, err := RequestsAt(context.Background(), Session{Name: "long", Conv: rec}, opts, []int{7, 2, last, 999})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"none", "seed-micro"} {
		reqs := got[name]
		if len(reqs) != 2 || reqs[7] == nil || reqs[last] == nil {
			t.Fatalf("%s: requests at %v, want at 7 and %d", name, keys(reqs), last)
		}
		for k, req := range reqs {
			if len(req.Messages) != k {
				t.Errorf("%s at %d: %d messages, want the %d before it", name, k, len(req.Messages), k)
			}
			if vs := conv.CheckRequest(requestConv(req)); len(vs) > 0 {
				t.Errorf("%s at %d: invalid request: %v", name, k, vs)
			}
		}
	}
	// seed-micro clears the first result later in the walk; the request
	// captured at message 7 still shows it as it was sent then (message 2
	// carries no cache anchor there, so only the copy protects it).
	early := got["seed-micro"][7].Messages[2].Blocks[0].ResultText()
	if want := rec.Messages[2].Blocks[0].ResultText(); early != want {
		t.Errorf("the request captured at message 7 changed after capture: %q", early)
	}
	late := got["seed-micro"][last].Messages[2].Blocks[0].ResultText()
	if late == early {
		t.Error("seed-micro never cleared the first result: the test does not exercise the copy")
	}
	// The same request as Replay billed: the final prompt sizes agree.
	runs, err := Replay(context.Background(), []Session{{Name: "long", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		req := got[run.Strategy][last]
		if n := Segments(req, words{}); len(n) == 0 {
			t.Fatalf("%s: no segments", run.Strategy)
		}
		total := 0
		for _, s := range Segments(req, words{}) {
			total += s.Tokens
		}
		if p := run.Turns[len(run.Turns)-1].Prompt; p != total {
			t.Errorf("%s: final request has %d tokens, Replay billed %d", run.Strategy, total, p)
		}
	}
}

func keys[V any](m map[int]V) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWriteHTMLExtraChart(t *testing.T) {
	rec := longSession()
	opts := Options{Window: 200_000, Pricing: pricing.Anthropic(), Counter: words{}, Strategies: Strategies()[:1]}
	runs, err := Replay(context.Background(), []Session{{Name: "long", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(runs, []Session{{Name: "long", Conv: rec}}, opts)
	var plain, extra bytes.Buffer
	if err := rep.WriteHTML(&plain); err != nil {
		t.Fatal(err)
	}
	chart := Chart{Title: "Agreement <per> strategy", Note: "a note", Names: []string{"a", "b"}, Values: []float64{1, 0.5}}
	if err := rep.WriteHTML(&extra, chart); err != nil {
		t.Fatal(err)
	}
	if n, m := strings.Count(plain.String(), "<svg"), strings.Count(extra.String(), "<svg"); m != n+1 {
		t.Errorf("%d charts with the extra one, %d without", m, n)
	}
	if !strings.Contains(extra.String(), "<h2>Agreement &lt;per&gt; strategy</h2>") || !strings.Contains(extra.String(), "a note") {
		t.Error("extra chart's title (escaped) or note missing")
	}
	if err := rep.WriteHTML(&extra, Chart{Title: "bad", Names: []string{"a"}}); err == nil {
		t.Error("a chart with more names than values was drawn")
	}
}
