package importer

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/corpus"
)

// corpusDir locates ../shared/corpus/raw beside the module root.
func corpusDir(t *testing.T) string { return corpus.Require(t) }

// corpusWant is what each corpus file must import to. The tool call counts
// were counted independently from the raw files (SOURCES.md lists steps;
// mini-swe-agent responses with other than exactly one bash block make no
// call, an OpenHands finish is a call, a resolver finish is not).
var corpusWant = map[string]struct {
	format   string
	calls    int
	minMsgs  int
	minTurns int
	fixes    int
}{
	"claude-code/ccviewer-1af7fc5e.jsonl":                             {FormatClaudeCode, 12, 14, 1, 0},
	"claude-code/ccviewer-5c0375b4.jsonl":                             {FormatClaudeCode, 13, 20, 1, 0},
	"claude-code/ccviewer-fe5e1c67.jsonl":                             {FormatClaudeCode, 11, 18, 2, 0},
	"claude-code/sessionshare-0ccf1a04.jsonl":                         {FormatClaudeCode, 7, 22, 5, 0},
	"claude-code/sessionshare-0ccf1a04.subagents/agent-a5bdbc1.jsonl": {FormatClaudeCode, 1, 4, 1, 0},
	"claude-code/sessionshare-0ccf1a04.subagents/agent-a9cad17.jsonl": {FormatClaudeCode, 1, 4, 1, 0},
	"claude-code/sessionshare-0ccf1a04.subagents/agent-aa5ef13.jsonl": {FormatClaudeCode, 1, 4, 1, 0},
	"claude-code/sessionshare-0ccf1a04.subagents/agent-ac27727.jsonl": {FormatClaudeCode, 1, 4, 1, 0},
	"claude-code/sessionshare-0ccf1a04.subagents/agent-afbbf75.jsonl": {FormatClaudeCode, 1, 4, 1, 0},
	"claude-code/sessionshare-4b2030ed.jsonl":                         {FormatClaudeCode, 1, 4, 1, 0},
	"claude-code/sessionshare-4b2030ed.subagents/agent-a2018e5.jsonl": {FormatClaudeCode, 1, 4, 1, 0},
	"mini-swe-agent/gemini3pro-django__django-11138.traj.json":        {FormatMiniSWEAgent, 100, 231, 1, 0},
	"mini-swe-agent/gemini3pro-django__django-14855.traj.json":        {FormatMiniSWEAgent, 44, 89, 1, 0},
	"mini-swe-agent/gemini3pro-sphinx-doc__sphinx-8459.traj.json":     {FormatMiniSWEAgent, 53, 107, 1, 0},
	"mini-swe-agent/gemini3pro-sympy__sympy-19954.traj.json":          {FormatMiniSWEAgent, 24, 49, 1, 0},
	"openhands/multiswebench-ponylang__ponyc-4593.jsonl":              {FormatOpenHands, 33, 66, 1, 0},
	"openhands/multiswebench-ponylang__ponyc-4595.jsonl":              {FormatOpenHands, 23, 46, 1, 0},
	"openhands/resolver-darkmode-toggle.jsonl":                        {FormatOpenHandsResolver, 21, 44, 1, 0},
	"swe-agent/demo-ctf-i_got_id.traj":                                {FormatSWEAgent, 21, 42, 1, 0},
	"swe-agent/demo-fc-replace-marshmallow-1867.traj":                 {FormatSWEAgent, 13, 27, 1, 4}, // reused tool call ids
	"swe-agent/gpt4-pydicom__pydicom-1458.traj":                       {FormatSWEAgent, 12, 24, 1, 0},
	"swe-agent/gpt4-swe-agent__test-repo-i1.traj":                     {FormatSWEAgent, 5, 10, 1, 0},
	// Long sessions (SOURCES.md, "Long sessions"); TestCorpusCounts checks
	// them against counts taken from the raw records.
	"claude-code/mclaude-3cfce0ff.jsonl":                  {FormatClaudeCode, 290, 180, 5, 0},
	"claude-code/mclaude-abc757d1.jsonl":                  {FormatClaudeCode, 92, 180, 3, 0},
	"claude-code/mclaude-c76e5be5.jsonl":                  {FormatClaudeCode, 296, 600, 10, 2}, // line 859's results are lost: two responses merge, one call gets an error result
	"claude-code/mclaude-ff59cfd2.jsonl":                  {FormatClaudeCode, 191, 400, 10, 0},
	"codex/openprintkit-97b66f6c.jsonl":                   {FormatCodex, 329, 700, 40, 0},
	"codex/openprintkit-c61729d4.jsonl":                   {FormatCodex, 400, 900, 40, 0},
	"mini-swe-agent/deepseekchat-django-13265.traj.json":  {FormatMiniSWEAgent, 156, 310, 1, 0},
	"mini-swe-agent/deepseekchat-sqlfluff-1733.traj.json": {FormatMiniSWEAgent, 157, 310, 1, 0},
}

// damagedCorpus are the corpus files with a line that is not valid JSON:
// imported without Strict, each must warn naming the line.
var damagedCorpus = map[string]string{
	"claude-code/mclaude-c76e5be5.jsonl": "line 859: damaged line skipped",
}

// TestCorpus imports every file of the shared corpus, sub-agent logs
// included: each must pass conv.Check with the counts above, so an
// importer that quietly imports little cannot pass.
func TestCorpus(t *testing.T) {
	raw := corpusDir(t)
	seen := 0
	err := filepath.WalkDir(raw, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(raw, path)
		rel = filepath.ToSlash(rel)
		seen++
		t.Run(rel, func(t *testing.T) {
			want, ok := corpusWant[rel]
			if !ok {
				t.Fatalf("corpus file %s has no expectations in corpusWant; add them", rel)
			}
			_, damaged := damagedCorpus[rel]
			s := mustLoad(t, path, Options{Strict: !damaged})
			got := count(s.Conv)
			if s.Format != want.format {
				t.Errorf("format %q, want %q", s.Format, want.format)
			}
			if got.calls != want.calls {
				t.Errorf("%d tool calls, want %d", got.calls, want.calls)
			}
			// Every call is answered, except a final one (submit, finish).
			if got.results < got.calls-1 {
				t.Errorf("%d results for %d calls", got.results, got.calls)
			}
			if got.messages < want.minMsgs || got.rounds < want.minTurns {
				t.Errorf("%d messages, %d rounds; want at least %d, %d", got.messages, got.rounds, want.minMsgs, want.minTurns)
			}
			if len(s.Fixes) != want.fixes {
				t.Errorf("fixes: %v, want %d", s.Fixes, want.fixes)
			}
			switch want := damagedCorpus[rel]; {
			case want != "" && (len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], want)):
				t.Errorf("warnings: %v, want one saying %q", s.Warnings, want)
			case want == "" && len(s.Warnings) > 0:
				t.Errorf("warnings: %v", s.Warnings)
			}
			if strings.HasPrefix(rel, "claude-code/") && s.Model == "" {
				t.Error("no model recorded")
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(corpusWant) {
		t.Errorf("walked %d corpus files, expected %d", seen, len(corpusWant))
	}
}
