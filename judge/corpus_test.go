package judge

import (
	"bytes"
	"context"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/tokens"
)

// corpusDir locates ../shared/corpus/raw beside the module root, or skips.
func corpusDir(t *testing.T) string { return corpus.Require(t) }

// TestProbesOnCorpus generates probes from every recorded session of the
// corpus: deterministic, well-formed, asked before an assistant message
// whose full context fits the budget.
func TestProbesOnCorpus(t *testing.T) {
	raw := corpusDir(t)
	var paths []string
	filepath.WalkDir(raw, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	slices.Sort(paths)
	counter := tokens.NewEstimator()
	kinds := make(map[Kind]int)
	total := 0
	for _, p := range paths {
		s, err := importer.Load(context.Background(), p, importer.Options{})
		if err != nil {
			t.Logf("%s: not imported: %v", filepath.Base(p), err)
			continue
		}
		opts := ProbeOptions{N: 8, MaxPromptTokens: 150_000, Counter: counter}
		a := Probes(s.Conv, opts)
		b := Probes(s.Conv, opts)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: probes differ between two runs", p)
		}
		if len(a) > 8 {
			t.Errorf("%s: %d probes, want at most 8", p, len(a))
		}
		for _, pr := range a {
			kinds[pr.Kind]++
			total++
			if pr.Question == "" || pr.Reference == "" {
				t.Errorf("%s: empty question or reference: %+v", p, pr)
			}
			if pr.At <= 0 || pr.At >= len(s.Conv.Messages) || s.Conv.Messages[pr.At].Role != conv.RoleAssistant {
				t.Errorf("%s: probe asked at message %d, not an assistant message", p, pr.At)
			}
			if fits := fullTokens(s.Conv, pr.At, counter); fits > opts.MaxPromptTokens {
				t.Errorf("%s: probe at message %d has %d tokens of full context, over the budget", p, pr.At, fits)
			}
			if testing.Verbose() {
				t.Logf("%s @%d %s: %s\n\t→ %s", filepath.Base(p), pr.At, pr.Kind, pr.Question, textfmt.Clip(pr.Reference, 200))
			}
		}
	}
	t.Logf("%d probes: %v", total, kinds)
	for _, k := range Kinds() {
		if kinds[k] == 0 {
			t.Errorf("no %s probe in the whole corpus", k)
		}
	}
}

func fullTokens(c *conv.Conversation, k int, counter conv.Counter) int {
	n := 0
	for i := range c.System {
		n += counter.Count(c.System[i].PlainText())
	}
	for _, t := range c.Tools {
		n += counter.Count(t.Name + " " + t.Description + " " + string(t.InputSchema))
	}
	for i := range k {
		for j := range c.Messages[i].Blocks {
			n += counter.Count(c.Messages[i].Blocks[j].PlainText()) + 4
		}
	}
	return n
}

// TestRunOnCorpus runs the consistency test over one session of each
// recorded format against the test server: every request the judge builds from a real recording (thinking blocks, images,
// text-action agents) passes the server's validator.
func TestRunOnCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: replays real sessions")
	}
	raw := corpusDir(t)
	var sessions []bench.Session
	for _, dir := range []string{"claude-code", "mini-swe-agent", "swe-agent", "openhands"} {
		entries, err := os.ReadDir(filepath.Join(raw, dir))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			p := filepath.Join(raw, dir, e.Name())
			s, err := importer.Load(context.Background(), p, importer.Options{})
			if err != nil {
				continue
			}
			sessions = append(sessions, bench.Session{Name: p, Conv: s.Conv})
			break
		}
	}
	if len(sessions) == 0 {
		t.Skip("no corpus session could be imported")
	}
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Handle(scripted)
	// Three strategies cover the request shapes: dropped rounds
	// (truncate), a summary in place of history (codex), and ctxkit's own
	// anchors and placeholders.
	factories, err := bench.Lookup("truncate,codex,ctxkit")
	if err != nil {
		t.Fatal(err)
	}
	opts := benchOptions(factories...)
	opts.Window = 16_000
	rep, err := Run(context.Background(), sessions, opts, Config{Provider: apis[0].new(t, srv, "m"), Model: "m",
		MaxPromptTokens: 150_000, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		var buf bytes.Buffer
		rep.WriteTable(&buf)
		t.Log(buf.String())
	}
	if rep.Probes == 0 {
		t.Fatal("no probe generated from the corpus")
	}
	for _, s := range rep.Strategies {
		if s.Errors != 0 {
			t.Errorf("%s: %d errors: %q", s.Name, s.Errors, rep.ErrorMessages)
		}
	}
	if rs := srv.Rejected(); len(rs) > 0 {
		t.Errorf("the server rejected %d request(s); first: %v", len(rs), rs[0])
	}
}
