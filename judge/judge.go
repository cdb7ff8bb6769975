package judge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Errors Run and ParseVerdict return.
var (
	// ErrUnreachable: no model answered — the key is missing or refused,
	// or the provider stayed unavailable after its retries. The judge
	// section is skipped.
	ErrUnreachable = errors.New("judge: no model reachable")
	// ErrVerdict: the judge's reply was neither YES nor NO.
	ErrVerdict = errors.New("judge: reply is neither YES nor NO")
)

// Reference is the strategy whose request is the full context.
const Reference = "none"

// Config configures a consistency test.
type Config struct {
	// Provider answers the probe questions, as Model.
	Provider llm.Provider
	Model    string
	// Judge decides whether two answers agree, as JudgeModel; nil and ""
	// mean Provider and Model.
	Judge      llm.Provider
	JudgeModel string
	// Probes is the number of probe questions per session; 0 means 4.
	Probes int
	// MaxPromptTokens, when positive, keeps questions to turns whose full
	// context fits (the answer model's window less a margin), counted with
	// the bench options' Counter.
	MaxPromptTokens int
	// AnswerTokens and JudgeTokens cap the replies; 0 means 256 each.
	AnswerTokens int
	JudgeTokens  int
	// Parallel is how many model calls may be in flight; 0 means 4.
	Parallel int
	Logger   *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Judge == nil {
		c.Judge = c.Provider
	}
	if c.JudgeModel == "" {
		c.JudgeModel = c.Model
	}
	if c.Probes <= 0 {
		c.Probes = 4
	}
	if c.AnswerTokens <= 0 {
		c.AnswerTokens = 256
	}
	if c.JudgeTokens <= 0 {
		c.JudgeTokens = 256
	}
	if c.Parallel <= 0 {
		c.Parallel = 4
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Report is the result of the consistency test, in the shape `ctxkit bench
// --judge --json` prints as its "judge" object.
type Report struct {
	Model      string `json:"model"`
	JudgeModel string `json:"judge_model"`
	// Probes is the number of probe questions asked over all sessions.
	Probes     int              `json:"probes"`
	Sessions   int              `json:"sessions"`
	Reference  string           `json:"reference"`
	Calls      int              `json:"calls"`
	Strategies []StrategyResult `json:"strategies"`
	// ErrorMessages are the distinct errors met, at most ten.
	ErrorMessages []string `json:"error_messages,omitempty"`
	// Questions are the probes asked, for people reading the report.
	Questions []Question `json:"questions"`
}

// Question is one probe asked of one session.
type Question struct {
	Session string `json:"session"`
	Probe
}

// StrategyResult is one strategy's agreement with the full context.
type StrategyResult struct {
	Name string `json:"name"`
	// Agreement is the share of judged probes whose answers agree; nil when
	// none could be judged.
	Agreement *float64 `json:"agreement"`
	// ByKind is the agreement per probe kind, for the kinds judged.
	ByKind map[Kind]float64 `json:"by_kind"`
	// Probes is the number of probes; Judged of them ended in YES or NO
	// (Agreed in YES), Identical needed no call because the strategy sent
	// exactly the full context (they count as agreeing), and Errors could
	// not be judged (a failed call, a reply neither YES nor NO).
	Probes    int `json:"probes"`
	Judged    int `json:"judged"`
	Agreed    int `json:"agreed"`
	Identical int `json:"identical"`
	Errors    int `json:"errors"`
}

// outcome is one probe asked of one strategy.
type outcome struct {
	kind      Kind
	agree     bool
	identical bool
	err       error
}

// Run asks each session's probes from the full context (strategy "none")
// and from each strategy's context at the same turn, has the judge decide
// whether each pair of answers agrees, and reports the share of agreeing
// answers per strategy. opts are the bench options (window, counter,
// summarizer, strategies); "none" is replayed as the reference whether or
// not it is listed. A failed call or an unclear verdict is counted as an
// error of that probe; a model that cannot be reached at all ends the run
// with ErrUnreachable.
func Run(ctx context.Context, sessions []bench.Session, opts bench.Options, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Provider == nil {
		return nil, fmt.Errorf("%w: no provider configured", ErrUnreachable)
	}
	ref, err := bench.Lookup(Reference)
	if err != nil {
		return nil, err
	}
	var names []string
	factories := ref
	for _, f := range opts.Strategies {
		if f.Name != Reference {
			factories = append(factories, f)
			names = append(names, f.Name)
		}
	}
	opts.Strategies = factories
	rep := &Report{Model: cfg.Model, JudgeModel: cfg.JudgeModel, Sessions: len(sessions), Reference: Reference}
	byStrategy := make(map[string][]outcome)
	r := &runner{cfg: cfg}
	for _, s := range sessions {
		probes := Probes(s.Conv, ProbeOptions{N: cfg.Probes, MaxPromptTokens: cfg.MaxPromptTokens, Counter: opts.Counter})
		if len(probes) == 0 {
			cfg.Logger.Info("judge: no probe fits", "session", s.Name)
			continue
		}
		rep.Probes += len(probes)
		for _, p := range probes {
			rep.Questions = append(rep.Questions, Question{Session: s.Name, Probe: p})
		}
		var at []int
		for _, p := range probes {
			if !slices.Contains(at, p.At) {
				at = append(at, p.At)
			}
		}
		reqs, err := bench.RequestsAt(ctx, s, opts, at)
		if err != nil {
			return nil, err
		}
		outs, err := r.session(ctx, s.Name, probes, reqs, names)
		if err != nil {
			return nil, err
		}
		for name, os := range outs {
			byStrategy[name] = append(byStrategy[name], os...)
		}
	}
	rep.Calls = r.calls
	seen := make(map[string]bool)
	for _, name := range names {
		rep.Strategies = append(rep.Strategies, aggregate(name, byStrategy[name]))
		for _, o := range byStrategy[name] {
			if o.err != nil && !seen[o.err.Error()] && len(rep.ErrorMessages) < 10 {
				seen[o.err.Error()] = true
				rep.ErrorMessages = append(rep.ErrorMessages, o.err.Error())
			}
		}
	}
	return rep, nil
}

func aggregate(name string, os []outcome) StrategyResult {
	sr := StrategyResult{Name: name, ByKind: make(map[Kind]float64), Probes: len(os)}
	judged := make(map[Kind][2]int) // agreed, judged
	for _, o := range os {
		if o.err != nil {
			sr.Errors++
			continue
		}
		sr.Judged++
		j := judged[o.kind]
		j[1]++
		if o.identical {
			sr.Identical++
		}
		if o.agree {
			sr.Agreed++
			j[0]++
		}
		judged[o.kind] = j
	}
	if sr.Judged > 0 {
		a := float64(sr.Agreed) / float64(sr.Judged)
		sr.Agreement = &a
	}
	for k, j := range judged {
		sr.ByKind[k] = float64(j[0]) / float64(j[1])
	}
	return sr
}

// runner makes the model calls of a run.
type runner struct {
	cfg   Config
	mu    sync.Mutex
	calls int
}

// session asks one session's probes. The full-context answer of a probe is
// asked once and shared by every strategy; a strategy whose request carries
// exactly the full context needs no call at all.
func (r *runner) session(ctx context.Context, name string, probes []Probe, reqs map[string]map[int]*llm.Request, strategies []string) (map[string][]outcome, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	full := make([]func() (string, error), len(probes))
	for i, p := range probes {
		full[i] = sync.OnceValues(func() (string, error) {
			return r.answer(ctx, reqs[Reference][p.At], p.Question)
		})
	}
	type unit struct{ probe, strategy int }
	var units []unit
	for i := range probes {
		for j := range strategies {
			units = append(units, unit{i, j})
		}
	}
	results := make([][]outcome, len(strategies))
	for j := range results {
		results[j] = make([]outcome, len(probes))
	}
	work := make(chan unit)
	var wg sync.WaitGroup
	for range r.cfg.Parallel {
		wg.Go(func() {
			for u := range work {
				p := probes[u.probe]
				o := r.one(ctx, p, full[u.probe], reqs[Reference][p.At], reqs[strategies[u.strategy]][p.At])
				o.kind = p.Kind
				if o.err != nil {
					o.err = fmt.Errorf("%s, %s probe at message %d, %s: %w", name, p.Kind, p.At, strategies[u.strategy], o.err)
					if unreachable(o.err) {
						cancel(fmt.Errorf("%w: %w", ErrUnreachable, o.err))
					}
				}
				results[u.strategy][u.probe] = o
			}
		})
	}
	for _, u := range units {
		if ctx.Err() != nil {
			break
		}
		work <- u
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	out := make(map[string][]outcome, len(strategies))
	for j, s := range strategies {
		out[s] = results[j]
	}
	return out, nil
}

// unreachable reports whether err means no model can be reached: retrying
// other questions will not help.
func unreachable(err error) bool {
	return errors.Is(err, llm.ErrAuth) || errors.Is(err, llm.ErrMissingKey) || errors.Is(err, llm.ErrUnavailable)
}

// one asks probe p of one strategy and judges the pair of answers.
func (r *runner) one(ctx context.Context, p Probe, full func() (string, error), ref, req *llm.Request) outcome {
	if ref == nil || req == nil {
		return outcome{err: errors.New("no request recorded at that turn")}
	}
	if sameContent(ref, req) {
		return outcome{agree: true, identical: true}
	}
	a, err := full()
	if err != nil {
		return outcome{err: fmt.Errorf("full-context answer: %w", err)}
	}
	b, err := r.answer(ctx, req, p.Question)
	if err != nil {
		return outcome{err: fmt.Errorf("answer: %w", err)}
	}
	agree, err := r.judge(ctx, p.Question, a, b)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{agree: agree}
}

// answerInstruction opens every probe question (seed 002 §27.5 asks for a
// one-sentence answer).
const answerInstruction = "Answer the following question about this session from the conversation above only, in one or two short sentences. Do not call any tools. If the conversation does not tell, say you do not know."

// answer asks question at the end of req and returns the model's reply.
func (r *runner) answer(ctx context.Context, req *llm.Request, question string) (string, error) {
	q, err := withQuestion(req, r.cfg.Model, r.cfg.AnswerTokens, question)
	if err != nil {
		return "", err
	}
	resp, err := r.call(ctx, r.cfg.Provider, q)
	if err != nil {
		return "", err
	}
	if text := replyText(resp.Message); text != "" {
		return text, nil
	}
	return "", errors.New("the model gave an empty answer")
}

// replyText is a reply's text, or, when the model only called tools, the
// calls it made (what it would do is its answer).
func replyText(m conv.Message) string {
	var text, calls []string
	for i := range m.Blocks {
		b := &m.Blocks[i]
		switch b.Type {
		case conv.TypeText:
			if t := strings.TrimSpace(b.Text); t != "" {
				text = append(text, t)
			}
		case conv.TypeToolUse:
			calls = append(calls, "[calls "+callLabel(b)+"]")
		}
	}
	if len(text) > 0 {
		return strings.Join(text, "\n")
	}
	return strings.Join(calls, " ")
}

func (r *runner) call(ctx context.Context, p llm.Provider, req *llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
	return p.Stream(ctx, req, nil)
}

// withQuestion returns a copy of req that asks question: appended as text
// to the final user message (after its tool results, which must come
// first), or as a new user message when the request ends with the
// assistant. Thinking blocks are left out — their signatures bind them to
// the recording's key and model, and neither side of the comparison needs
// them — and cache anchors are kept, so the shared prefix is a cache read.
func withQuestion(req *llm.Request, model string, maxTokens int, question string) (*llm.Request, error) {
	q := &llm.Request{Model: model, MaxTokens: maxTokens, System: req.System, Tools: req.Tools}
	for _, m := range req.Messages {
		bs := make([]conv.Block, 0, len(m.Blocks)+1)
		for _, b := range m.Blocks {
			if b.Type != conv.TypeThinking && b.Type != conv.TypeRedactedThinking {
				bs = append(bs, b)
			}
		}
		if len(bs) == 0 {
			bs = append(bs, conv.NewText(conv.Source(m.Role), "(thinking omitted)"))
		}
		m.Blocks = bs
		q.Messages = append(q.Messages, m)
	}
	text := conv.NewText(conv.SourceUser, answerInstruction+"\n\nQuestion: "+question)
	if n := len(q.Messages); n > 0 && q.Messages[n-1].Role == conv.RoleUser {
		q.Messages[n-1].Blocks = append(q.Messages[n-1].Blocks, text)
	} else {
		q.Messages = append(q.Messages, conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{text}})
	}
	if vs := conv.CheckRequest(&conv.Conversation{System: q.System, Tools: q.Tools, Messages: q.Messages}); len(vs) > 0 {
		return nil, fmt.Errorf("the strategy's request is not valid: %v", vs[0])
	}
	return q, nil
}

// judgePrompt asks the judge to compare two answers (seed 002 §27.5).
const judgePrompt = `Two answers to the same question about a coding session follow. Do they agree — the same facts and the same meaning, ignoring wording and length? An answer that says it does not know does not agree with one that gives the facts; two answers that both do not know agree.

Question: %s

Answer A: %s

Answer B: %s

Reply with exactly one word: YES or NO.`

func (r *runner) judge(ctx context.Context, question, a, b string) (bool, error) {
	req := &llm.Request{
		Model: r.cfg.JudgeModel, MaxTokens: r.cfg.JudgeTokens,
		Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{
			conv.NewText(conv.SourceUser, fmt.Sprintf(judgePrompt, question, a, b)),
		}}},
	}
	resp, err := r.call(ctx, r.cfg.Judge, req)
	if err != nil {
		return false, fmt.Errorf("judge: %w", err)
	}
	return ParseVerdict(replyText(resp.Message))
}

var wordRe = regexp.MustCompile(`[A-Za-z]+`)

// ParseVerdict reads a judge's reply: YES or NO, in any case, alone or in
// a sentence ("**Yes.**", "NO — they differ"). A reply with both words, or
// neither, is ErrVerdict.
func ParseVerdict(reply string) (bool, error) {
	yes, no := false, false
	for _, w := range wordRe.FindAllString(reply, -1) {
		switch strings.ToUpper(w) {
		case "YES":
			yes = true
		case "NO":
			no = true
		}
	}
	if yes == no {
		return false, fmt.Errorf("%w: %q", ErrVerdict, textfmt.Clip(strings.TrimSpace(reply), 80))
	}
	return yes, nil
}

// sameContent reports whether two requests carry the same context (cache
// anchors and block metadata aside): then the answers could differ only by
// sampling, and no call is needed.
func sameContent(a, b *llm.Request) bool {
	if len(a.Messages) != len(b.Messages) || len(a.System) != len(b.System) || len(a.Tools) != len(b.Tools) {
		return false
	}
	for i := range a.System {
		if !sameBlock(&a.System[i], &b.System[i]) {
			return false
		}
	}
	for i := range a.Tools {
		if a.Tools[i].Name != b.Tools[i].Name || a.Tools[i].Description != b.Tools[i].Description || string(a.Tools[i].InputSchema) != string(b.Tools[i].InputSchema) {
			return false
		}
	}
	for i := range a.Messages {
		ma, mb := &a.Messages[i], &b.Messages[i]
		if ma.Role != mb.Role || len(ma.Blocks) != len(mb.Blocks) {
			return false
		}
		for j := range ma.Blocks {
			if !sameBlock(&ma.Blocks[j], &mb.Blocks[j]) {
				return false
			}
		}
	}
	return true
}

func sameBlock(a, b *conv.Block) bool {
	return a.Type == b.Type && a.ToolUseID == b.ToolUseID && a.Name == b.Name && a.IsError == b.IsError &&
		a.PlainText() == b.PlainText() && string(a.Input) == string(b.Input) && a.Signature == b.Signature &&
		a.Data == b.Data && string(a.ImageSource) == string(b.ImageSource)
}
