package main

import (
	"context"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/toolresult"
	"github.com/ctxkit/ctxkit/transcript"
)

// corpusSessions lists the recorded sessions of the shared corpus, sub-agent
// transcripts included, or skips the test when the corpus is absent.
func corpusSessions(t *testing.T) []string { return corpus.Files(t) }

// TestCompactCorpus is issue 4's "done when" for rungs 1-2: on every corpus
// session, the micro replay keeps the invariants after every step (replay
// checks them before every request), never grows the conversation, reduces
// it whenever something was clearable (eager; the default, cache-aware,
// clears only what pays and never costs more than sending everything),
// and every lowered block's recall id
// resolves to the exact original. The default policy runs against a real
// transcript in a session folder; the others against a MemoryKeeper.
func TestCompactCorpus(t *testing.T) {
	for _, path := range corpusSessions(t) {
		name, _ := filepath.Rel(filepath.Join(filepath.Dir(path), ".."), path)
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sess, err := importer.Load(ctx, path, importer.Options{})
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			for _, policy := range []string{"cache-aware", "eager", "batched"} {
				counter := tokens.NewEstimator()
				o := compactOptions{layers: []string{"micro"}, policy: policy, keep: micro.DefaultKeep,
					clearAtLeast: micro.DefaultClearAtLeast, guardTokens: micro.DefaultGuardTokens}
				var st store
				if policy == "cache-aware" {
					ts, err := transcript.Create(filepath.Join(t.TempDir(), "sess"))
					if err != nil {
						t.Fatal(err)
					}
					defer ts.Close()
					st = ts
				} else {
					st = micro.NewMemoryKeeper()
				}
				cfg, err := engineConfig(o, pricing.Anthropic(), counter, st)
				if err != nil {
					t.Fatal(err)
				}
				eng, err := engine.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				rep := &compactReport{}
				rec := sess.Conv.Clone()
				out, err := replay(ctx, rec, eng, st, counter, pricing.Anthropic(), rep)
				if err != nil {
					t.Fatalf("%s: replay: %v", policy, err)
				}
				if !rep.InvariantsOK || !rep.RecallOK {
					t.Errorf("%s: invariants %v, recall %v: %v", policy, rep.InvariantsOK, rep.RecallOK, rep.Violations)
				}
				if vs := conv.Check(out); len(vs) > 0 {
					t.Errorf("%s: final conversation: %v", policy, vs)
				}
				if rep.TokensAfter > rep.TokensBefore {
					t.Errorf("%s: tokens grew from %d to %d", policy, rep.TokensBefore, rep.TokensAfter)
				}
				if policy == "eager" && clearable(sess.Conv) && rep.TokensAfter >= rep.TokensBefore {
					t.Errorf("%s: nothing cleared though results older than the %d most recent are clearable (%d tokens)",
						policy, micro.DefaultKeep, rep.TokensBefore)
				}
				// Do no harm (issue 22): the default clears only what pays
				// for its rewrite and a recall round trip, so it never costs
				// more than sending everything; on a short session with
				// little to clear it may clear nothing.
				if policy == "cache-aware" && rep.CostRatio > 1+1e-9 {
					t.Errorf("%s: costs %.3f× sending everything", policy, rep.CostRatio)
				}
				checkOriginals(t, policy, sess.Conv, out, st)
				t.Logf("%-11s requests %3d  tokens %6d -> %6d  cleared %3d  compressed %2d  spilled %d B  cost ratio %.3f",
					policy, rep.Requests, rep.TokensBefore, rep.TokensAfter, rep.BlocksCleared, rep.BlocksCompressed,
					rep.BytesSpilled, rep.CostRatio)
			}
		})
	}
}

// clearable reports whether c has a tool result that micro clears with
// the defaults whatever else happens: larger than the skip size, older
// than the Keep most recent results (all consumed at the end of a
// recording), and not from a read-file tool (kept until stale).
func clearable(c *conv.Conversation) bool {
	calls := map[string]toolresult.Call{}
	var big []bool
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			switch b.Type {
			case conv.TypeToolUse:
				calls[b.ToolUseID] = toolresult.Classify(b.Name, b.Input)
			case conv.TypeToolResult:
				call := calls[b.ToolUseID]
				read := call.Kind == toolresult.KindRead && !call.Shell()
				big = append(big, !read && len(b.ResultText()) > 2*micro.DefaultSkipChars)
			}
		}
	}
	for i := 0; i < len(big)-micro.DefaultKeep; i++ {
		if big[i] {
			return true
		}
	}
	return false
}

// checkOriginals compares every lowered block's recall with the recorded
// block, field by field (only the cached token count may differ).
func checkOriginals(t *testing.T, policy string, rec, out *conv.Conversation, st store) {
	t.Helper()
	orig := map[string]conv.Block{}
	for _, m := range rec.Messages {
		for _, b := range m.Blocks {
			orig[b.ID] = b
		}
	}
	for _, m := range out.Messages {
		for _, b := range m.Blocks {
			if b.Meta.Rung == conv.RungFull {
				continue
			}
			named := b.Text
			if b.Type == conv.TypeToolUse {
				named = string(b.Input) // rung 1 of a call keeps its recall id in the input
			}
			if !strings.Contains(named, b.ID) {
				t.Errorf("%s: %s %s at rung %d does not name its recall id: %.200q", policy, b.Type, b.ID, b.Meta.Rung, named)
			}
			got, err := st.Recall(b.ID)
			if err != nil {
				t.Errorf("%s: recall %s: %v", policy, b.ID, err)
				continue
			}
			if diff := cmp.Diff(orig[b.ID], got, cmpopts.IgnoreFields(conv.Meta{}, "Tokens"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: recall %s is not the original (-recorded +recalled):\n%s", policy, b.ID, diff)
			}
		}
	}
}

func TestEngineConfig(t *testing.T) {
	o := compactOptions{layers: []string{"micro"}, policy: "eager", keep: 3}
	k := micro.NewMemoryKeeper()
	bad := o
	bad.layers = []string{"lru"}
	if _, err := engineConfig(bad, pricing.Anthropic(), tokens.NewEstimator(), k); err == nil || !strings.Contains(err.Error(), `unknown layer "lru"`) {
		t.Errorf("unknown layer: %v", err)
	}
	bad = o
	bad.policy = "lru"
	if _, err := engineConfig(bad, pricing.Anthropic(), tokens.NewEstimator(), k); err == nil {
		t.Error("unknown policy accepted")
	}
	cfg, err := engineConfig(o, pricing.Anthropic(), tokens.NewEstimator(), k)
	if err != nil || cfg.NoMicro || !cfg.NoCompaction {
		t.Errorf("micro layer: %+v, %v", cfg, err)
	}
}

// TestCompactWindowReachesMicro: --window sets the window micro works
// with, so its high-water mark (above which it clears everything) follows
// it, with and without the summary layer.
func TestCompactWindowReachesMicro(t *testing.T) {
	for _, tt := range []struct {
		layers []string
		window int
		want   int
	}{
		{[]string{"micro", "summary"}, 32_000, 25_600},
		{[]string{"micro"}, 32_000, 25_600},
		{[]string{"micro", "summary"}, 64_000, 51_200},
		{[]string{"micro"}, 0, int(0.8 * float64(engine.DefaultWindow))}, // the recording names no model
	} {
		o := compactOptions{layers: tt.layers, policy: "cache-aware", keep: 3, window: tt.window, mode: "region"}
		cfg, err := engineConfig(o, pricing.Anthropic(), tokens.NewEstimator(), micro.NewMemoryKeeper())
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.HighWater(); got != tt.want {
			t.Errorf("%v --window %d: micro's high-water mark %d, want %d", tt.layers, tt.window, got, tt.want)
		}
	}
}
