package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/judge"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/anthropic"
	"github.com/ctxkit/ctxkit/llm/openai"
)

// judgeFlags are bench's flags for the model-judged consistency test.
type judgeFlags struct {
	on         bool
	provider   string
	model      string
	judgeModel string
	baseURL    string
	probes     int
}

// defaultModels are the answer models used when --model is not given:
// small, fast, non-reasoning (a reasoning model may spend a short reply's
// whole budget thinking).
var defaultModels = map[string]string{"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1-mini"}

func (j *judgeFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&j.on, "judge", false, "also run the consistency test: probe questions answered from the full and from each strategy's context, a judge model deciding whether the answers agree (needs a reachable model; skipped otherwise)")
	f.StringVar(&j.provider, "provider", "anthropic", "provider for --judge: anthropic (ANTHROPIC_API_KEY) or openai (OPENAI_API_KEY; any chat-completions server with --base-url)")
	f.StringVar(&j.model, "model", "", "model that answers the probe questions (default claude-haiku-4-5, or gpt-4.1-mini for openai)")
	f.StringVar(&j.judgeModel, "judge-model", "", "model that judges whether two answers agree (default: --model)")
	f.StringVar(&j.baseURL, "base-url", "", "send --judge requests to this server instead of the provider's API")
	f.IntVar(&j.probes, "probes", 4, "probe questions per session for --judge (one of each kind: recall, artifact, continuation, decision)")
}

func (j *judgeFlags) validate() error {
	if !j.on {
		return nil
	}
	if _, ok := defaultModels[j.provider]; !ok {
		return fmt.Errorf("unknown --provider %q (known: anthropic, openai)", j.provider)
	}
	if err := checkURL("--base-url", j.baseURL); err != nil {
		return err
	}
	if j.probes < 1 {
		return fmt.Errorf("--probes must be at least 1, got %d", j.probes)
	}
	return nil
}

// run runs the consistency test when --judge is set. It returns nil, and
// says why on stderr, when no model can be reached: the rest of the bench
// stands without it.
func (j *judgeFlags) run(cmd *cobra.Command, sessions []bench.Session, opts bench.Options) (*judge.Report, error) {
	if !j.on {
		return nil, nil
	}
	stderr := cmd.ErrOrStderr()
	model := j.model
	if model == "" {
		model = defaultModels[j.provider]
	}
	judgeModel := j.judgeModel
	if judgeModel == "" {
		judgeModel = model
	}
	skip := func(err error) (*judge.Report, error) {
		fmt.Fprintf(stderr, "ctxkit bench: judge skipped: no model reachable: %v\n", err)
		if errors.Is(err, llm.ErrMissingKey) {
			fmt.Fprintln(stderr, "ctxkit bench: set the provider's API key, or pass --base-url to a compatible server, to run the judge")
		}
		return nil, nil
	}
	answerer, err := j.newProvider(model)
	if err != nil {
		return skip(err)
	}
	judger := answerer
	if judgeModel != model {
		if judger, err = j.newProvider(judgeModel); err != nil {
			return skip(err)
		}
	}
	cfg := judge.Config{Provider: answerer, Model: model, Judge: judger, JudgeModel: judgeModel, Probes: j.probes}
	// Questions are asked only where the full context fits the answer
	// model, with room for the question, the reply and the estimate's
	// error.
	cfg.MaxPromptTokens = llm.LookupModel(model).Window - 256 - 4096
	others := 0
	for _, f := range opts.Strategies {
		if f.Name != judge.Reference {
			others++
		}
	}
	fmt.Fprintf(stderr, "ctxkit bench: judge: %s answers, %s judges; %d probe(s) per session, at most %d model calls\n",
		model, judgeModel, j.probes, len(sessions)*j.probes*(1+2*others))
	rep, err := judge.Run(cmd.Context(), sessions, opts, cfg)
	if errors.Is(err, judge.ErrUnreachable) {
		return skip(err)
	}
	if err != nil {
		return nil, err
	}
	for _, msg := range rep.ErrorMessages {
		fmt.Fprintf(stderr, "ctxkit bench: judge: %s\n", msg)
	}
	return rep, nil
}

func (j *judgeFlags) newProvider(model string) (llm.Provider, error) {
	if j.provider == "openai" {
		var opts []openai.Option
		if j.baseURL != "" {
			opts = append(opts, openai.WithBaseURL(j.baseURL))
		}
		return openai.New(model, opts...)
	}
	var opts []anthropic.Option
	if j.baseURL != "" {
		opts = append(opts, anthropic.WithBaseURL(j.baseURL))
	}
	return anthropic.New(model, opts...)
}
