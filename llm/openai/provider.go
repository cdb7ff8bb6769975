package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/internal/attempt"
)

const (
	// KeyEnv is the environment variable the API key is read from.
	KeyEnv = "OPENAI_API_KEY"
	// BaseURLEnv overrides DefaultBaseURL when WithBaseURL is not given.
	BaseURLEnv = "OPENAI_BASE_URL"
	// DefaultBaseURL is the OpenAI API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultTimeout is how long an attempt may go without a byte from the
	// server. It is long because a local server may read a large prompt
	// for minutes before it sends anything.
	DefaultTimeout = 10 * time.Minute
)

// Provider is a chat completions endpoint as an llm.Provider. It is safe
// for concurrent use.
type Provider struct {
	cfg  attempt.Config
	chat sdk.ChatCompletionService
	// official is true against api.openai.com, which wants
	// max_completion_tokens where other servers know max_tokens.
	official bool
}

// An Option configures a Provider.
type Option func(*Provider)

// WithBaseURL sends requests to url (for example http://localhost:11434/v1
// for Ollama) instead of the OpenAI API.
func WithBaseURL(url string) Option { return func(p *Provider) { p.cfg.BaseURL = url } }

// WithRetry sets the retry policy.
func WithRetry(r llm.Retry) Option { return func(p *Provider) { p.cfg.Retry = r } }

// WithTimeout sets how long an attempt may go without a byte from the
// server; 0 keeps DefaultTimeout, negative disables it.
func WithTimeout(d time.Duration) Option { return func(p *Provider) { p.cfg.Timeout = d } }

// WithBadRequestDir makes the provider save the body of every request the
// server rejects as malformed into dir, and name the file in the error.
func WithBadRequestDir(dir string) Option { return func(p *Provider) { p.cfg.BadDir = dir } }

// WithHTTPClient sends requests through c (its transport is wrapped, not
// changed).
func WithHTTPClient(c *http.Client) Option { return func(p *Provider) { p.cfg.HC = c } }

// WithLogger logs retries to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option { return func(p *Provider) { p.cfg.Log = l } }

// WithModelInfo replaces the model's entry from llm.LookupModel; its
// MaxOutput is the output limit of requests that set none.
func WithModelInfo(info llm.ModelInfo) Option { return func(p *Provider) { p.cfg.Info = info } }

// New returns a provider for model. The key comes from OPENAI_API_KEY; it
// may be missing only when a base URL other than the OpenAI API is given.
func New(model string, opts ...Option) (*Provider, error) {
	if model == "" {
		return nil, errors.New("openai: no model given")
	}
	p := &Provider{cfg: attempt.NewConfig("openai", model, BaseURLEnv, DefaultTimeout)}
	for _, o := range opts {
		o(p)
	}
	p.cfg.Finish(DefaultBaseURL)
	if u, err := url.Parse(p.cfg.BaseURL); err == nil && u.Host == "api.openai.com" {
		p.official = true
	}
	key := os.Getenv(KeyEnv)
	if key == "" && p.official {
		return nil, fmt.Errorf("%w: set the environment variable %s to your OpenAI API key (a server given with a base URL may need none)", llm.ErrMissingKey, KeyEnv)
	}
	opts2 := []option.RequestOption{
		option.WithHTTPClient(p.cfg.HC),
		option.WithBaseURL(p.cfg.BaseURL),
		option.WithMaxRetries(0), // the loop in Stream retries, streams included
	}
	if key != "" {
		opts2 = append(opts2, option.WithAPIKey(key))
	}
	// The service, not sdk.NewClient: the client would also pick up
	// OPENAI_ORG_ID and friends from the environment and send them to
	// whatever server the base URL names.
	p.chat = sdk.NewChatCompletionService(opts2...)
	return p, nil
}

// Model is the model the provider was made for.
func (p *Provider) Model() string { return p.cfg.Model }

// Info is the model's window and output limits.
func (p *Provider) Info() llm.ModelInfo { return p.cfg.Info }

// Stream sends req (streaming), calls on with each piece as it arrives and
// returns the whole response. A failed attempt that is retried is
// announced with an llm.EventRetry; what was streamed before it is void.
func (p *Provider) Stream(ctx context.Context, req *llm.Request, on func(llm.Event)) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	return p.cfg.Run(ctx, on, func(ctx context.Context) (*llm.Response, error) {
		return p.once(ctx, params, on)
	})
}

func (p *Provider) once(ctx context.Context, params sdk.ChatCompletionNewParams, on func(llm.Event)) (*llm.Response, error) {
	actx, tr := attempt.Start(ctx, p.cfg.Timeout)
	defer tr.Stop()
	stream := p.chat.NewStreaming(actx, params)
	defer stream.Close()
	var acc sdk.ChatCompletionAccumulator
	var usage sdk.CompletionUsage
	finish := ""
	started := map[int64]bool{}
	for stream.Next() {
		ch := stream.Current()
		if !acc.AddChunk(ch) {
			return nil, &attempt.Retryable{Err: &llm.APIError{Kind: llm.ErrUnavailable,
				Message: fmt.Sprintf("malformed stream from %s: a chunk did not fit the ones before it", p.cfg.BaseURL)}}
		}
		if ch.JSON.Usage.Valid() {
			usage = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			if on == nil {
				continue
			}
			if r := reasoning(&c.Delta); r != "" {
				on(llm.Event{Kind: llm.EventThinking, Text: r})
			}
			if c.Delta.Content != "" {
				on(llm.Event{Kind: llm.EventText, Text: c.Delta.Content})
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.Function.Name != "" && !started[tc.Index] {
					started[tc.Index] = true
					on(llm.Event{Kind: llm.EventToolUse, Name: tc.Function.Name})
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.classify(ctx, tr, err)
	}
	if finish == "" {
		return nil, p.cfg.Cut(tr, "a finish_reason")
	}
	return response(&acc, finish, usage), nil
}

// reasoning is the reasoning text a compatible server put in a delta.
func reasoning(d *sdk.ChatCompletionChunkChoiceDelta) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[k]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

func (p *Provider) classify(ctx context.Context, tr *attempt.Trace, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		e := &llm.APIError{Kind: llm.ErrUnavailable, Status: http.StatusInternalServerError, Message: streamErrorMessage(se)}
		return &attempt.Retryable{Err: e}
	}
	var ae *sdk.Error
	if !errors.As(err, &ae) {
		return attempt.Network(p.cfg.BaseURL, tr, err)
	}
	e := apiError(ae)
	return p.cfg.Answered(e, ae.Response, tr, e.Type == "insufficient_quota")
}

// streamErrorMessage digs the message out of an error event's JSON.
func streamErrorMessage(se *ssestream.StreamError) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(se.Event.Data, &body) == nil && body.Error.Message != "" {
		return "error in the stream: " + body.Error.Message
	}
	return se.Message
}

// apiError classifies an error answer. Compatible servers word
// prompt-too-long differently; all the known wordings count.
func apiError(ae *sdk.Error) *llm.APIError {
	e := &llm.APIError{Status: ae.StatusCode, Type: ae.Type, Message: attempt.Message(ae.Message, ae.RawJSON(), ae.StatusCode)}
	if ae.Response != nil {
		e.RequestID = ae.Response.Header.Get("X-Request-Id")
	}
	if ae.Code == "insufficient_quota" {
		e.Type = "insufficient_quota"
	}
	e.Kind = attempt.Kind(e.Status, false, llm.TooLong(ae.StatusCode, ae.Type, ae.Code, ae.Message))
	return e
}
