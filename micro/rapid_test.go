package micro

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
)

// TestStepProperties drives a Clearer through random sessions — tool
// calls of every kind, parallel calls, new rounds, oversize output, files
// read and edited again — and checks after every step: the invariants,
// rungs only go down, the token tally matches a recount, and every lowered
// block names a recall id that gives back its exact original.
func TestStepProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		policies := []Policy{Eager{}, Batched{AtLeast: 500}, CacheAware{Pricing: pricing.Anthropic()}, CacheAware{Pricing: pricing.NoCache()}}
		cfg := Config{
			Policy:      policies[rapid.IntRange(0, len(policies)-1).Draw(rt, "policy")],
			Keep:        rapid.IntRange(-1, 4).Draw(rt, "keep"),
			GuardTokens: rapid.SampledFrom([]int{-1, 400, 5000}).Draw(rt, "guard"),
			Window:      rapid.SampledFrom([]int{3000, 200_000}).Draw(rt, "window"),
		}
		s := &session{t: rt, c: &conv.Conversation{}, m: New(cfg), k: NewMemoryKeeper(), orig: map[string]conv.Block{}}
		s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "start")}})
		rungs := map[string]conv.Rung{}
		files := []string{"a.go", "src/b.go", "/w/src/b.go", "c.py"}
		steps := rapid.IntRange(1, 18).Draw(rt, "steps")
		for range steps {
			if rapid.IntRange(0, 5).Draw(rt, "newRound") == 0 && s.c.Messages[len(s.c.Messages)-1].Role == conv.RoleUser && len(s.c.Messages) > 1 {
				s.say("next question")
			}
			n := rapid.IntRange(1, 3).Draw(rt, "parallel")
			var calls, results []conv.Block
			for range n {
				s.n++
				id := fmt.Sprintf("toolu_%d", s.n)
				file := rapid.SampledFrom(files).Draw(rt, "file")
				tool, input := "", ""
				switch rapid.IntRange(0, 5).Draw(rt, "tool") {
				case 0:
					tool, input = "Read", fmt.Sprintf(`{"file_path":%q}`, file)
				case 1:
					tool, input = "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":"a","new_string":"b"}`, file)
				case 2:
					tool, input = "bash", fmt.Sprintf(`{"command":"cat %s"}`, file)
				case 3:
					tool, input = "Grep", `{"pattern":"func"}`
				case 4:
					tool, input = "execute_bash", `{"command":"go test ./..."}`
				default:
					tool, input = "WebFetch", `{"url":"https://example.com"}`
				}
				size := rapid.SampledFrom([]int{0, 1, 5, 60, 300, 1200}).Draw(rt, "lines")
				var sb strings.Builder
				for l := range size {
					fmt.Fprintf(&sb, "%s output line %d of %s\n", tool, l, file)
				}
				calls = append(calls, conv.NewToolUse(id, tool, json.RawMessage(input)))
				results = append(results, conv.NewToolResult(id, tool, sb.String(), rapid.Bool().Draw(rt, "isErr")))
			}
			s.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: append([]conv.Block{conv.NewText(conv.SourceAssistant, "working")}, calls...)})
			s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: results})
			for _, b := range s.c.Messages[len(s.c.Messages)-1].Blocks {
				s.orig[b.ID] = b.Clone()
			}
			s.step()
			// The model has not seen the newest results: only the guard
			// may have touched them.
			for _, b := range s.c.Messages[len(s.c.Messages)-1].Blocks {
				if b.Meta.Rung > conv.RungCompressed || b.Meta.Rung == conv.RungCompressed && !strings.Contains(b.Text, "output too large") {
					rt.Fatalf("unconsumed result %s lowered to rung %d: %.100q", b.ID, b.Meta.Rung, b.Text)
				}
			}
			// The cache picture: cuts ascending within the conversation,
			// the frontier among them, held anchors on blocks that exist.
			st := &s.m.st
			for i, k := range st.cuts {
				if k.n < 1 || k.n > len(s.c.Messages) || i > 0 && k.n <= st.cuts[i-1].n {
					rt.Fatalf("cuts %v not ascending within %d messages", st.cuts, len(s.c.Messages))
				}
			}
			if st.frontier != 0 && !slices.ContainsFunc(st.cuts, func(k cut) bool { return k.n == st.frontier }) {
				rt.Fatalf("frontier %d not among the cuts %v", st.frontier, st.cuts)
			}
			for _, id := range s.m.Hold() {
				if i, _ := s.c.Find(id); i < 0 {
					rt.Fatalf("Hold names %s, not in the conversation", id)
				}
			}
			for _, m := range s.c.Messages {
				for _, b := range m.Blocks {
					if b.Meta.Rung < rungs[b.ID] {
						rt.Fatalf("%s went up from rung %d to %d", b.ID, rungs[b.ID], b.Meta.Rung)
					}
					rungs[b.ID] = b.Meta.Rung
				}
			}
		}
		s.m.Expire()
		s.step()
	})
}
