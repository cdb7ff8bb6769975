package engine_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ctxkit/ctxkit/engine"
)

// TestAddDecisions: the same decision on later requests extends one run;
// anything else, or the same decision within one request, starts another.
func TestAddDecisions(t *testing.T) {
	wait := func(req, tokens int) engine.Decision {
		return engine.Decision{Kind: engine.KindWait, Tokens: tokens, Reason: "policy cache-aware keeps these clearable results for now", Request: req}
	}
	clear := engine.Decision{Kind: engine.KindClear, Blocks: 3, Tokens: 900, Reason: "policy cache-aware cleared these consumed results", Request: 7}
	for _, tt := range []struct {
		name string
		in   [][]engine.Decision
		want []engine.Decided
	}{
		{"nothing", nil, nil},
		{"one", [][]engine.Decision{{wait(1, 100)}},
			[]engine.Decided{{Decision: wait(1, 100), First: 1, Times: 1}}},
		{"a run of waits, the latest sizes", [][]engine.Decision{{wait(2, 100)}, {wait(3, 150)}, {wait(5, 400)}},
			[]engine.Decided{{Decision: wait(5, 400), First: 2, Times: 3}}},
		{"broken by a clear", [][]engine.Decision{{wait(5, 100)}, {wait(6, 200)}, {clear}, {wait(8, 10)}},
			[]engine.Decided{{Decision: wait(6, 200), First: 5, Times: 2}, {Decision: clear, First: 7, Times: 1}, {Decision: wait(8, 10), First: 8, Times: 1}}},
		{"the same request twice", [][]engine.Decision{{wait(4, 100), wait(4, 100)}},
			[]engine.Decided{{Decision: wait(4, 100), First: 4, Times: 1}, {Decision: wait(4, 100), First: 4, Times: 1}}},
		{"another reason", [][]engine.Decision{{wait(4, 100)}, {{Kind: engine.KindWait, Reason: "until the session has saved enough", Request: 5}}},
			[]engine.Decided{{Decision: wait(4, 100), First: 4, Times: 1}, {Decision: engine.Decision{Kind: engine.KindWait, Reason: "until the session has saved enough", Request: 5}, First: 5, Times: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log []engine.Decided
			for _, ds := range tt.in {
				log = engine.AddDecisions(log, ds...)
			}
			if diff := cmp.Diff(tt.want, log); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}
