package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/llm/llmtest"
)

// runBench runs `ctxkit bench` with args and returns its stdout, stderr
// and error.
func runBench(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"bench"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// clearProviderEnv makes sure no key or base URL from the environment
// reaches the providers.
func clearProviderEnv(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(k, "")
	}
}

var judgeAnswerRe = regexp.MustCompile(`(?s)Answer A: (.*)\n\nAnswer B: (.*)\n\nReply with`)

// judgeModel answers the recall question only when the failing test's
// line is in its context, every other question alike, and judges two
// answers the same when they are.
func judgeModel(c *llmtest.Call) llmtest.Reply {
	n := len(c.Messages)
	bs := c.Messages[n-1].Blocks
	last := bs[len(bs)-1].Text
	if m := judgeAnswerRe.FindStringSubmatch(last); m != nil {
		if m[1] == m[2] {
			return llmtest.Text("YES")
		}
		return llmtest.Text("NO.")
	}
	_, q, _ := strings.Cut(last, "Question: ")
	if strings.HasPrefix(q, "What was the original error") {
		if strings.Contains(string(c.Body), "Div(7, 2) = 3, want 3.5") {
			return llmtest.Text("Div(7, 2) = 3, want 3.5")
		}
		return llmtest.Text("I do not know.")
	}
	return llmtest.Text("Same answer to: " + q)
}

func TestBenchJudge(t *testing.T) {
	session := filepath.Join("testdata", "judge_session.json")
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			clearProviderEnv(t)
			srv := llmtest.NewServer(t, llmtest.Config{})
			srv.Handle(judgeModel)
			base := srv.BaseURL(llmtest.Anthropic)
			if provider == "anthropic" {
				t.Setenv("ANTHROPIC_API_KEY", "test-key")
			} else {
				base = srv.BaseURL(llmtest.OpenAI)
			}
			html := filepath.Join(t.TempDir(), "report.html")
			stdout, stderr, err := runBench(t, session, "--window", "1500", "--judge", "--provider", provider,
				"--model", "answerer", "--judge-model", "judger", "--base-url", base, "--json", "--html", html)
			if err != nil {
				t.Fatalf("bench failed: %v\n%s", err, stderr)
			}
			var got struct {
				Strategies []struct{ Name string } `json:"strategies"`
				Judge      *struct {
					Model      string `json:"model"`
					JudgeModel string `json:"judge_model"`
					Probes     int    `json:"probes"`
					Strategies []struct {
						Name      string             `json:"name"`
						Agreement *float64           `json:"agreement"`
						ByKind    map[string]float64 `json:"by_kind"`
						Errors    *int               `json:"errors"`
					} `json:"strategies"`
				} `json:"judge"`
			}
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, stdout)
			}
			if want := len(bench.Strategies()); len(got.Strategies) != want {
				t.Errorf("%d strategies in the bench report, want %d", len(got.Strategies), want)
			}
			j := got.Judge
			if j == nil {
				t.Fatalf("no judge object:\n%s\nstderr:\n%s", stdout, stderr)
			}
			if j.Model != "answerer" || j.JudgeModel != "judger" || j.Probes != 4 || len(j.Strategies) != len(bench.Strategies())-1 {
				t.Errorf("judge: model %q judge %q probes %d strategies %d", j.Model, j.JudgeModel, j.Probes, len(j.Strategies))
			}
			recall := make(map[string]float64)
			for _, s := range j.Strategies {
				recall[s.Name] = s.ByKind["recall"]
				if s.Agreement == nil || s.Errors == nil || *s.Errors != 0 || len(s.ByKind) != 4 {
					t.Errorf("%s: agreement %v errors %v by kind %v", s.Name, s.Agreement, s.Errors, s.ByKind)
					continue
				}
				// Only the recall answer can differ; it differs exactly
				// where the strategy's context lost the failing line.
				want := 0.75 + 0.25*s.ByKind["recall"]
				if *s.Agreement != want {
					t.Errorf("%s: agreement %v with recall %v", s.Name, *s.Agreement, s.ByKind["recall"])
				}
			}
			// truncate drops the first round (and the failing test) to fit
			// 1,500 tokens; mask-10 keeps every result of so short a session.
			if recall["truncate"] != 0 || recall["mask-10"] != 1 {
				t.Errorf("recall agreement: %v", recall)
			}
			for _, c := range srv.Calls() {
				if c.Model != "answerer" && c.Model != "judger" {
					t.Errorf("call %d to model %q", c.N, c.Model)
				}
			}
			page, err := os.ReadFile(html)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), "Judge: answers agreeing with the full context") {
				t.Error("the HTML report has no judge chart")
			}
			// The server's validator checked every request at cleanup.
		})
	}
}

func TestBenchJudgeTable(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	srv := llmtest.NewServer(t, llmtest.Config{})
	srv.Handle(judgeModel)
	stdout, stderr, err := runBench(t, filepath.Join("testdata", "judge_session.json"), "--window", "1500",
		"--strategies", "truncate,ctxkit", "--judge", "--base-url", srv.URL, "--probes", "2")
	if err != nil {
		t.Fatalf("bench failed: %v\n%s", err, stderr)
	}
	for _, want := range []string{"judge: agreement per strategy", "answers claude-haiku-4-5, judge claude-haiku-4-5; 2 probe(s)", "truncate", "ctxkit"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if testing.Verbose() {
		t.Log(stdout)
	}
	// none is the reference: replayed for the judge, not judged.
	section := stdout[strings.Index(stdout, "judge: agreement"):]
	if regexp.MustCompile(`(?m)^\s+none\s`).MatchString(section) {
		t.Errorf("the reference is judged against itself:\n%s", section)
	}
	if !strings.Contains(stderr, "at most 10 model calls") {
		t.Errorf("stderr does not bound the calls (2 probes × (1 + 2×2 strategies)):\n%s", stderr)
	}
}

func TestBenchJudgeUnreachable(t *testing.T) {
	session := filepath.Join("testdata", "judge_session.json")
	t.Run("no key", func(t *testing.T) {
		clearProviderEnv(t)
		stdout, stderr, err := runBench(t, session, "--judge")
		if err != nil {
			t.Fatalf("bench failed: %v", err)
		}
		if !strings.Contains(stderr, "judge skipped: no model reachable") || !strings.Contains(stderr, "ANTHROPIC_API_KEY") {
			t.Errorf("stderr does not say why the judge was skipped:\n%s", stderr)
		}
		if !strings.Contains(stdout, "reference") || strings.Contains(stdout, "judge:") {
			t.Errorf("want the bench table without a judge section:\n%s", stdout)
		}
	})
	t.Run("no key, json", func(t *testing.T) {
		clearProviderEnv(t)
		stdout, _, err := runBench(t, session, "--judge", "--provider", "openai", "--json")
		if err != nil {
			t.Fatalf("bench failed: %v", err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got["judge"]; ok || got["strategies"] == nil {
			t.Errorf("want the bench report without a judge object: %v", got)
		}
	})
	t.Run("key refused", func(t *testing.T) {
		clearProviderEnv(t)
		t.Setenv("ANTHROPIC_API_KEY", "wrong-key")
		srv := llmtest.NewServer(t, llmtest.Config{APIKey: "right-key"})
		stdout, stderr, err := runBench(t, session, "--window", "1500", "--judge", "--base-url", srv.URL)
		if err != nil {
			t.Fatalf("bench failed: %v", err)
		}
		if !strings.Contains(stderr, "judge skipped: no model reachable") || !strings.Contains(stderr, "authentication") {
			t.Errorf("stderr:\n%s", stderr)
		}
		if !strings.Contains(stdout, "reference") || strings.Contains(stdout, "judge:") {
			t.Errorf("stdout:\n%s", stdout)
		}
	})
}

func TestBenchJudgeFlags(t *testing.T) {
	session := filepath.Join("testdata", "judge_session.json")
	for _, args := range [][]string{{"--judge", "--provider", "gemini"}, {"--judge", "--probes", "0"}} {
		if _, _, err := runBench(t, append([]string{session}, args...)...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
