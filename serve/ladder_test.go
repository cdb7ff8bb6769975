package serve

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/micro"
)

// viewOf is a View of a head message and turns tool rounds, each an
// assistant message with one call and a user message with its result of
// resultTok tokens; tools names each round's tool and input (a Bash
// command by default).
func viewOf(window, turns, resultTok int, tool func(i int) CallInfo) *View {
	v := &View{Provider: providerAnthropic, Budget: compact.Config{Window: window, MaxOutput: 4096}.Budget(), Requests: turns + 1}
	v.Messages = append(v.Messages, MessageInfo{Role: "user", Hash: "head", Tokens: 20})
	total := 2000 + 20 // system and tools
	for i := range turns {
		c := CallInfo{Name: "Bash", Input: fmt.Appendf(nil, `{"command":"go test ./p%d"}`, i)}
		if tool != nil {
			c = tool(i)
		}
		v.Messages = append(v.Messages,
			MessageInfo{Role: "assistant", Hash: fmt.Sprintf("a%d", i), Tokens: 50, Calls: []CallInfo{c}},
			MessageInfo{Role: "user", Hash: fmt.Sprintf("u%d", i), Tokens: resultTok + 10, Results: []ResultInfo{{
				Hash: fmt.Sprintf("r%d", i), Tool: c.Name, Call: c, Tokens: resultTok, Bytes: 4 * resultTok, Consumed: i < turns-1}}})
		total += 50 + resultTok + 10
	}
	v.Tokens = total
	return v
}

func TestLadderClearableRent(t *testing.T) {
	l := NewLadder(micro.Config{}, compact.Config{})
	tests := []struct {
		turns int
		want  []clearItem
	}{
		{4, nil}, // three consumed results: all kept (Keep 3)
		{5, []clearItem{{msg: 2, hash: "r0", freed: 960, waited: 0}}},                                              // r0 just passed Keep
		{6, []clearItem{{msg: 2, hash: "r0", freed: 960, waited: 960}, {msg: 4, hash: "r1", freed: 960}}},          // r0 was sent once while clearable
		{8, []clearItem{{2, "r0", 960, 3 * 960}, {4, "r1", 960, 2 * 960}, {6, "r2", 960, 960}, {8, "r3", 960, 0}}}, // rent grows each request
	}
	for _, tt := range tests {
		v := viewOf(200_000, tt.turns, 1000, nil)
		got := l.clearable(v, len(v.Messages)-2)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%d turns: clearable %+v, want %+v", tt.turns, got, tt.want)
		}
	}
}

func TestLadderPreservesFreshReads(t *testing.T) {
	l := NewLadder(micro.Config{}, compact.Config{})
	read := func(i int) CallInfo {
		if i == 7 { // edits the file round 0 read: that read is stale from here
			return CallInfo{Name: "Edit", Input: []byte(`{"file_path":"/repo/f0.go","old_string":"a","new_string":"b"}`)}
		}
		return CallInfo{Name: "Read", Input: fmt.Appendf(nil, `{"file_path":"/repo/f%d.go"}`, i)}
	}
	v := viewOf(200_000, 10, 1000, read)
	got := l.clearable(v, len(v.Messages)-2)
	// Only r0 is clearable: the other reads are fresh; r0 went stale in
	// round 7's call, so requests 8 and 9 sent it while clearable.
	want := []clearItem{{msg: 2, hash: "r0", freed: 960, waited: 2 * 960}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clearable %+v, want %+v", got, want)
	}
}

func TestLadderDecides(t *testing.T) {
	l := NewLadder(micro.Config{}, compact.Config{})
	ctx := context.Background()
	tests := []struct {
		name              string
		v                 *View
		clear, summarize  bool
		drop, cut         bool
		wantEmptyPlanOnly bool
	}{
		{name: "small", v: viewOf(200_000, 6, 500, nil), wantEmptyPlanOnly: true},
		{name: "over the hard threshold: clearing is enough", v: viewOf(60_000, 40, 1000, nil), clear: true},
		{name: "over the hard threshold, fresh reads: compact", v: viewOf(60_000, 40, 1000, func(i int) CallInfo {
			return CallInfo{Name: "Read", Input: fmt.Appendf(nil, `{"file_path":"/repo/f%d.go"}`, i)}
		}), summarize: true},
		{name: "one huge result: cut", v: func() *View {
			v := viewOf(60_000, 3, 500, nil)
			last := &v.Messages[len(v.Messages)-1]
			last.Results[0].Tokens, last.Results[0].Bytes = 200_000, 800_000
			last.Tokens += 199_500
			v.Tokens += 199_500
			return v
		}(), summarize: true, drop: true, cut: true}, // compact's order: drop, then cut what is left
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := l.Decide(ctx, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := l.Decide(ctx, tt.v)
			if !reflect.DeepEqual(p, again) {
				t.Fatalf("two plans for one view: %+v and %+v", p, again)
			}
			if tt.wantEmptyPlanOnly {
				if !p.empty() {
					t.Fatalf("plan %+v, want none", p)
				}
				return
			}
			if (len(p.Clear) > 0) != tt.clear || (p.To > 0) != tt.summarize || p.Drop != tt.drop || (len(p.Cut) > 0) != tt.cut {
				t.Fatalf("plan %+v: want clear %v, summarize %v, drop %v, cut %v", p, tt.clear, tt.summarize, tt.drop, tt.cut)
			}
			if p.To > 0 && (p.From != tt.v.Head+1 || tt.v.Messages[p.To+1].Role != "assistant" || tt.v.Messages[p.To].Role == "assistant") {
				t.Fatalf("run %d..%d does not end before an assistant message", p.From, p.To)
			}
		})
	}
}
