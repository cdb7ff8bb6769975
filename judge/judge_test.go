package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/llm/openai"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/tokens"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		reply   string
		want    bool
		wantErr bool
	}{
		{"YES", true, false},
		{"NO", false, false},
		{"yes", true, false},
		{" No.\n", false, false},
		{"**YES**", true, false},
		{"Yes, they agree.", true, false},
		{"NO — answer B does not know.", false, false},
		{"The answers agree: YES", true, false},
		{"Maybe.", false, true},
		{"", false, true},
		{"YES or NO", false, true},
		{"Nope", false, true},
		{"yesterday", false, true},
		{"是", false, true},
	}
	for _, tt := range tests {
		got, err := ParseVerdict(tt.reply)
		if tt.wantErr {
			if !errors.Is(err, ErrVerdict) {
				t.Errorf("ParseVerdict(%q) = %v, %v; want ErrVerdict", tt.reply, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseVerdict(%q) = %v, %v; want %v", tt.reply, got, err, tt.want)
		}
	}
}

func TestWithQuestion(t *testing.T) {
	rec := session()
	// The request before message 5: ends with the read's result.
	req := &llm.Request{System: rec.System, Tools: rec.Tools, Messages: rec.Messages[:5]}
	before := len(req.Messages[4].Blocks)
	q, err := withQuestion(req, "m", 100, "What failed?")
	if err != nil {
		t.Fatal(err)
	}
	if q.Model != "m" || q.MaxTokens != 100 {
		t.Errorf("model %q, max tokens %d", q.Model, q.MaxTokens)
	}
	if len(q.Messages) != 5 {
		t.Fatalf("got %d messages, want the question in the final user message (5)", len(q.Messages))
	}
	last := q.Messages[4].Blocks
	if len(last) != before+1 || last[0].Type != conv.TypeToolResult || last[len(last)-1].Type != conv.TypeText ||
		!strings.HasSuffix(last[len(last)-1].Text, "Question: What failed?") {
		t.Errorf("final user message: results first, then the question; got %+v", last)
	}
	for _, m := range q.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeThinking {
				t.Errorf("thinking block %s was sent", b.ID)
			}
		}
	}
	if len(req.Messages[4].Blocks) != before || req.Messages[3].Blocks[0].Type != conv.TypeThinking {
		t.Error("withQuestion changed the request it was given")
	}
	if vs := conv.CheckRequest(&conv.Conversation{System: q.System, Tools: q.Tools, Messages: q.Messages}); len(vs) > 0 {
		t.Errorf("invalid request: %v", vs)
	}

	// A request that ends with the assistant gets a new user message.
	req = &llm.Request{System: rec.System, Tools: rec.Tools, Messages: rec.Messages[:10]}
	q, err = withQuestion(req, "m", 100, "What now?")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Messages) != 11 || q.Messages[10].Role != conv.RoleUser {
		t.Errorf("got %d messages, want a new user message at the end", len(q.Messages))
	}

	// A message of thinking alone keeps its place, so roles still alternate.
	alone := []conv.Message{rec.Messages[0], {Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewThinking("hmm", "sig")}}, {Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "go on")}}}
	q, err = withQuestion(&llm.Request{Messages: alone}, "m", 100, "Why?")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Messages) != 3 || q.Messages[1].Blocks[0].Type != conv.TypeText {
		t.Errorf("thinking-only message: got %+v", q.Messages[1])
	}

	// A strategy's invalid request is an error, not a call.
	broken := &llm.Request{Messages: rec.Messages[1:4]}
	if _, err := withQuestion(broken, "m", 100, "?"); err == nil {
		t.Error("a request starting with the assistant was accepted")
	}
}

// fake is a test strategy: it keeps the recording and sends it through
// edit, so the tests know exactly what each strategy lost.
type fake struct {
	c    conv.Conversation
	edit func(*llm.Request)
}

func (f *fake) Step(_ context.Context, arrived []conv.Message) (*llm.Request, bench.StepInfo, error) {
	for _, m := range arrived {
		m.Blocks = append([]conv.Block(nil), m.Blocks...)
		f.c.Messages = append(f.c.Messages, m)
	}
	req := &llm.Request{System: f.c.System, Tools: f.c.Tools}
	for _, m := range f.c.Messages {
		m.Blocks = append([]conv.Block(nil), m.Blocks...)
		req.Messages = append(req.Messages, m)
	}
	if f.edit != nil {
		f.edit(req)
	}
	return req, bench.StepInfo{}, nil
}

func fakeFactory(name string, edit func(*llm.Request)) bench.Factory {
	return bench.Factory{Name: name, New: func(e bench.Env) bench.Strategy {
		return &fake{c: conv.Conversation{System: e.System, Tools: e.Tools}, edit: edit}
	}}
}

var (
	// keeper sends the full context: identical to "none".
	keeper = fakeFactory("keeper", nil)
	// forgetter clears every tool result: it loses the error.
	forgetter = fakeFactory("forgetter", func(r *llm.Request) {
		for i := range r.Messages {
			for j := range r.Messages[i].Blocks {
				if b := &r.Messages[i].Blocks[j]; b.Type == conv.TypeToolResult {
					c := b.Clone()
					c.SetText("[cleared]", conv.RungPlaceholder)
					r.Messages[i].Blocks[j] = c
				}
			}
		}
	})
	// rephrase changes the system prompt only: not identical, same facts.
	rephrase = fakeFactory("rephrase", func(r *llm.Request) {
		r.System = append(append([]conv.Block(nil), r.System...), conv.NewText(conv.SourceSystem, "Be concise."))
	})
	// garble's answers confuse the judge.
	garble = fakeFactory("garble", func(r *llm.Request) {
		r.System = append(append([]conv.Block(nil), r.System...), conv.NewText(conv.SourceSystem, "GARBLE"))
	})
)

var answerRe = regexp.MustCompile(`(?s)Answer A: (.*)\n\nAnswer B: (.*)\n\nReply with`)

// scripted plays the model: it can answer the recall question only when
// the error line is in its context, answers the other questions alike
// whatever the context, and as the judge says YES when the two answers are
// the same, NO when not — and "Maybe." when answer B is garbled.
func scripted(c *llmtest.Call) llmtest.Reply {
	var last string
	if n := len(c.Messages); n > 0 {
		bs := c.Messages[n-1].Blocks
		last = bs[len(bs)-1].Text
	}
	if m := answerRe.FindStringSubmatch(last); m != nil {
		switch {
		case strings.Contains(m[2], "garbled"):
			return llmtest.Text("Maybe.")
		case m[1] == m[2]:
			return llmtest.Text("YES")
		default:
			return llmtest.Text("NO")
		}
	}
	_, q, ok := strings.Cut(last, "Question: ")
	if !ok {
		return llmtest.Text("unexpected request")
	}
	switch {
	case strings.Contains(c.System, "GARBLE"):
		return llmtest.Text("a garbled answer")
	case strings.HasPrefix(q, "What was the original error") && !strings.Contains(string(c.Body), "Add(2,2) = 5"):
		return llmtest.Text("I do not know.")
	case strings.HasPrefix(q, "What was the original error"):
		return llmtest.Text("The test failed: Add(2,2) = 5, want 4.")
	}
	return llmtest.Text("The answer to: " + q)
}

func benchOptions(strategies ...bench.Factory) bench.Options {
	return bench.Options{
		Window: 200_000, Pricing: pricing.Anthropic(), Counter: tokens.NewEstimator(), Strategies: strategies,
		Summarize: func(context.Context, []conv.Message) (string, error) { return "summary", nil },
	}
}

// apis makes a provider of each kind against srv.
var apis = []struct {
	name string
	new  func(t *testing.T, srv *llmtest.Server, model string) llm.Provider
}{
	{"anthropic", func(t *testing.T, srv *llmtest.Server, model string) llm.Provider {
		t.Setenv(anthropic.KeyEnv, "test-key")
		p, err := anthropic.New(model, anthropic.WithBaseURL(srv.BaseURL(llmtest.Anthropic)), anthropic.WithRetry(llm.Retry{Attempts: 1}))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
	{"openai", func(t *testing.T, srv *llmtest.Server, model string) llm.Provider {
		t.Setenv(openai.KeyEnv, "")
		p, err := openai.New(model, openai.WithBaseURL(srv.BaseURL(llmtest.OpenAI)), openai.WithRetry(llm.Retry{Attempts: 1}))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}},
}

func TestRunAgreement(t *testing.T) {
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Config{})
			srv.Handle(scripted)
			sessions := []bench.Session{{Name: "calc", Conv: session()}}
			rep, err := Run(context.Background(), sessions, benchOptions(keeper, forgetter, rephrase, garble),
				Config{Provider: api.new(t, srv, "answer-model"), Model: "answer-model", JudgeModel: "judge-model"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Probes != 4 || rep.Sessions != 1 || rep.Model != "answer-model" || rep.JudgeModel != "judge-model" {
				t.Errorf("report header: %+v", rep)
			}
			if want := Probes(session(), ProbeOptions{}); len(rep.Questions) != 4 || rep.Questions[0].Session != "calc" || rep.Questions[3].Probe != want[3] {
				t.Errorf("questions: %+v, want the session's four probes", rep.Questions)
			}
			got := make(map[string]StrategyResult)
			for _, s := range rep.Strategies {
				got[s.Name] = s
			}
			if len(rep.Strategies) != 4 || rep.Strategies[0].Name != "keeper" {
				t.Errorf("strategies %v, want keeper, forgetter, rephrase, garble (none is the reference)", rep.Strategies)
			}
			check := func(name string, agreement float64, byKind map[Kind]float64, judged, identical, errs int) {
				t.Helper()
				s := got[name]
				if s.Agreement == nil || *s.Agreement != agreement {
					t.Errorf("%s: agreement %v, want %v", name, share(s.Agreement), agreement)
				}
				if len(s.ByKind) != len(byKind) {
					t.Errorf("%s: by kind %v, want %v", name, s.ByKind, byKind)
				}
				for k, v := range byKind {
					if s.ByKind[k] != v {
						t.Errorf("%s: %s agreement %v, want %v", name, k, s.ByKind[k], v)
					}
				}
				if s.Probes != 4 || s.Judged != judged || s.Identical != identical || s.Errors != errs {
					t.Errorf("%s: probes %d judged %d identical %d errors %d; want 4, %d, %d, %d", name, s.Probes, s.Judged, s.Identical, s.Errors, judged, identical, errs)
				}
			}
			all := map[Kind]float64{Recall: 1, Artifact: 1, Continuation: 1, Decision: 1}
			check("keeper", 1, all, 4, 4, 0)
			check("forgetter", 0.75, map[Kind]float64{Recall: 0, Artifact: 1, Continuation: 1, Decision: 1}, 4, 0, 0)
			check("rephrase", 1, all, 4, 0, 0)

			// The judge's "Maybe." is an error, counted and reported.
			g := got["garble"]
			if g.Agreement != nil || g.Errors != 4 || g.Judged != 0 || len(g.ByKind) != 0 {
				t.Errorf("garble: %+v, want 4 errors and no agreement", g)
			}
			if len(rep.ErrorMessages) == 0 || !strings.Contains(rep.ErrorMessages[0], "neither YES nor NO") {
				t.Errorf("error messages %q do not report the unclear verdict", rep.ErrorMessages)
			}

			// Calls: one full-context answer per probe, and an answer and a
			// verdict per probe for each strategy not identical to it.
			if want := 4 + 3*4*2; rep.Calls != want || len(srv.Calls()) != want {
				t.Errorf("%d calls reported, %d received; want %d", rep.Calls, len(srv.Calls()), want)
			}
			for _, c := range srv.Calls() {
				if c.Status != 200 {
					t.Errorf("call %d: status %d: %s", c.N, c.Status, c.Error)
				}
				if !strings.Contains(string(c.Body), `"model":"answer-model"`) && !strings.Contains(string(c.Body), `"model":"judge-model"`) {
					t.Errorf("call %d names neither model", c.N)
				}
			}
			if rs := srv.Rejected(); len(rs) > 0 {
				t.Errorf("the server rejected %d request(s): %v", len(rs), rs)
			}
		})
	}
}

// TestRunRealStrategies runs the judge over every bench strategy with a
// window small enough that they compact: every request each of them leads
// to passes the server's validator.
func TestRunRealStrategies(t *testing.T) {
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Config{})
			srv.Handle(scripted)
			opts := benchOptions(bench.Strategies()...)
			opts.Window = 1500
			rep, err := Run(context.Background(), []bench.Session{{Name: "calc", Conv: session()}}, opts,
				Config{Provider: api.new(t, srv, "m"), Model: "m", Probes: 6, Parallel: 3})
			if err != nil {
				t.Fatal(err)
			}
			if testing.Verbose() {
				var buf bytes.Buffer
				rep.WriteTable(&buf)
				t.Log(buf.String())
			}
			if len(rep.Strategies) != len(bench.Strategies())-1 {
				t.Errorf("%d strategies reported, want all but none", len(rep.Strategies))
			}
			judged := 0
			for _, s := range rep.Strategies {
				if s.Name == Reference {
					t.Error("the reference strategy is reported against itself")
				}
				if s.Errors != 0 || s.Probes != 6 || s.Judged != 6 || s.Agreement == nil || *s.Agreement < 0 || *s.Agreement > 1 {
					t.Errorf("%s: %+v", s.Name, s)
				}
				judged += s.Judged - s.Identical
			}
			if judged == 0 {
				t.Error("every strategy sent the full context: the window is too large for this test")
			}
			if rs := srv.Rejected(); len(rs) > 0 {
				t.Errorf("the server rejected %d request(s): %v", len(rs), rs)
			}
			// truncate drops the oldest rounds to fit 1,500 tokens: the
			// error goes, and with it the recall answer.
			for _, s := range rep.Strategies {
				if s.Name == "truncate" && s.ByKind[Recall] != 0 {
					t.Errorf("truncate keeps the recall answer: %+v", s)
				}
			}
		})
	}
}

func TestRunUnreachable(t *testing.T) {
	faults := []struct {
		name string
		f    llmtest.Fault
		want error
	}{
		{"unauthorized", llmtest.Fault{Kind: llmtest.Unauthorized}, llm.ErrAuth},
		{"overloaded", llmtest.Fault{Kind: llmtest.Overloaded}, llm.ErrUnavailable},
	}
	for _, api := range apis {
		for _, ft := range faults {
			t.Run(api.name+"/"+ft.name, func(t *testing.T) {
				srv := llmtest.NewServer(t, llmtest.Config{})
				srv.Handle(func(*llmtest.Call) llmtest.Reply { return llmtest.Fail(ft.f) })
				_, err := Run(context.Background(), []bench.Session{{Name: "calc", Conv: session()}}, benchOptions(forgetter),
					Config{Provider: api.new(t, srv, "m"), Model: "m"})
				if !errors.Is(err, ErrUnreachable) || !errors.Is(err, ft.want) {
					t.Fatalf("err = %v, want ErrUnreachable wrapping %v", err, ft.want)
				}
				// It stops at once rather than asking every question.
				if n := len(srv.Calls()); n > 4 {
					t.Errorf("%d calls after the model proved unreachable", n)
				}
			})
		}
	}
	if _, err := Run(context.Background(), nil, benchOptions(), Config{}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("no provider: err = %v, want ErrUnreachable", err)
	}
}

// TestRunFailedCall: a call that fails for another reason (the full context
// is too long for the model) is an error of that probe; the run goes on.
func TestRunFailedCall(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Config{Window: 3000})
	srv.Handle(scripted)
	rep, err := Run(context.Background(), []bench.Session{{Name: "calc", Conv: session()}}, benchOptions(forgetter),
		Config{Provider: apis[0].new(t, srv, "m"), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Strategies[0]
	t.Logf("forgetter: %+v; errors: %q", s, rep.ErrorMessages)
	// Every probe is asked after the large read, which a 3,000-token
	// window cannot hold in full; the forgetter's context fits.
	if s.Errors != 4 || s.Judged != 0 || s.Agreement != nil {
		t.Errorf("forgetter: %+v, want four errors: no full context fits", s)
	}
	if len(rep.ErrorMessages) == 0 || !strings.Contains(rep.ErrorMessages[0], "full-context answer") ||
		!strings.Contains(rep.ErrorMessages[0], "prompt is too long") {
		t.Errorf("error messages: %q", rep.ErrorMessages)
	}
	if rs := srv.Rejected(); len(rs) > 0 {
		t.Errorf("the server rejected %d request(s): %v", len(rs), rs)
	}
}

func TestReportOutput(t *testing.T) {
	a, b := 1.0, 0.75
	rep := &Report{
		Model: "claude-haiku-4-5", JudgeModel: "claude-haiku-4-5", Probes: 4, Sessions: 1, Reference: Reference, Calls: 28,
		Strategies: []StrategyResult{
			{Name: "keeper", Agreement: &a, ByKind: map[Kind]float64{Recall: 1, Artifact: 1, Continuation: 1, Decision: 1}, Probes: 4, Judged: 4, Agreed: 4, Identical: 4},
			{Name: "forgetter", Agreement: &b, ByKind: map[Kind]float64{Recall: 0, Artifact: 1, Continuation: 1, Decision: 1}, Probes: 4, Judged: 4, Agreed: 3},
			{Name: "garble", ByKind: map[Kind]float64{}, Probes: 4, Errors: 4},
		},
		ErrorMessages: []string{"calc, recall probe at message 9, garble: judge: reply is neither YES nor NO: \"Maybe.\""},
		Questions:     []Question{{Session: "calc", Probe: Probe{Kind: Recall, At: 9, Question: "What was the original error?", Reference: "FAIL"}}},
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", buf.Bytes())

	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", append(js, '\n'))
	var shape struct {
		Model      *string `json:"model"`
		JudgeModel *string `json:"judge_model"`
		Probes     *int    `json:"probes"`
		Strategies []struct {
			Name      *string            `json:"name"`
			Agreement *float64           `json:"agreement"`
			ByKind    map[string]float64 `json:"by_kind"`
			Errors    *int               `json:"errors"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal(js, &shape); err != nil {
		t.Fatal(err)
	}
	if shape.Model == nil || shape.JudgeModel == nil || shape.Probes == nil || len(shape.Strategies) != 3 ||
		shape.Strategies[1].ByKind["recall"] != 0 || shape.Strategies[1].ByKind["artifact"] != 1 || shape.Strategies[2].Errors == nil {
		t.Errorf("JSON shape: %s", js)
	}

	// The HTML report gets the agreement as a bar chart.
	runs, err := bench.Replay(context.Background(), []bench.Session{{Name: "calc", Conv: session()}}, benchOptions(keeper))
	if err != nil {
		t.Fatal(err)
	}
	var html bytes.Buffer
	br := bench.NewReport(runs, []bench.Session{{Name: "calc", Conv: session()}}, benchOptions(keeper))
	if err := br.WriteHTML(&html, rep.Chart()); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	if !strings.Contains(page, "Judge: answers agreeing with the full context") || strings.Count(page, "<svg") < 4 || !strings.Contains(page, "forgetter") {
		t.Errorf("HTML report lacks the judge chart")
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
