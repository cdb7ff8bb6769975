package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/internal/attempt"
)

const (
	// KeyEnv is the environment variable the API key is read from.
	KeyEnv = "ANTHROPIC_API_KEY"
	// BaseURLEnv overrides DefaultBaseURL when WithBaseURL is not given.
	BaseURLEnv = "ANTHROPIC_BASE_URL"
	// DefaultBaseURL is the Anthropic API.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultTimeout is how long an attempt may go without a byte from the
	// server before it is abandoned and retried.
	DefaultTimeout = 3 * time.Minute
)

// Provider is the Anthropic Messages API as an llm.Provider. It is safe
// for concurrent use.
type Provider struct {
	cfg    attempt.Config
	client sdk.Client
}

// An Option configures a Provider.
type Option func(*Provider)

// WithBaseURL sends requests to url instead of the Anthropic API (a proxy,
// a gateway, a test server).
func WithBaseURL(url string) Option { return func(p *Provider) { p.cfg.BaseURL = url } }

// WithRetry sets the retry policy.
func WithRetry(r llm.Retry) Option { return func(p *Provider) { p.cfg.Retry = r } }

// WithTimeout sets how long an attempt may go without a byte from the
// server (before the response headers or between two reads of the stream);
// 0 keeps DefaultTimeout, negative disables it.
func WithTimeout(d time.Duration) Option { return func(p *Provider) { p.cfg.Timeout = d } }

// WithBadRequestDir makes the provider save the body of every request the
// API rejects as malformed into dir (the session folder), and name the
// file in the error.
func WithBadRequestDir(dir string) Option { return func(p *Provider) { p.cfg.BadDir = dir } }

// WithHTTPClient sends requests through c (its transport is wrapped, not
// changed).
func WithHTTPClient(c *http.Client) Option { return func(p *Provider) { p.cfg.HC = c } }

// WithLogger logs retries to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option { return func(p *Provider) { p.cfg.Log = l } }

// WithModelInfo replaces the model's entry from llm.LookupModel; its
// MaxOutput is the max_tokens of requests that set none.
func WithModelInfo(info llm.ModelInfo) Option { return func(p *Provider) { p.cfg.Info = info } }

// New returns a provider for model. The key comes from ANTHROPIC_API_KEY;
// without it New fails with llm.ErrMissingKey.
func New(model string, opts ...Option) (*Provider, error) {
	key := os.Getenv(KeyEnv)
	if key == "" {
		return nil, fmt.Errorf("%w: set the environment variable %s to your Anthropic API key", llm.ErrMissingKey, KeyEnv)
	}
	if model == "" {
		return nil, errors.New("anthropic: no model given")
	}
	p := &Provider{cfg: attempt.NewConfig("anthropic", model, BaseURLEnv, DefaultTimeout)}
	for _, o := range opts {
		o(p)
	}
	p.cfg.Finish(DefaultBaseURL)
	p.client = sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(key),
		option.WithBaseURL(p.cfg.BaseURL),
		option.WithHTTPClient(p.cfg.HC),
		option.WithMaxRetries(0), // the loop in Stream retries, streams included
		option.WithoutOpenTelemetry(),
		option.WithOpenTelemetryPropagation(false),
	)
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

func (p *Provider) once(ctx context.Context, params sdk.MessageNewParams, on func(llm.Event)) (*llm.Response, error) {
	actx, tr := attempt.Start(ctx, p.cfg.Timeout)
	defer tr.Stop()
	stream := p.client.Messages.NewStreaming(actx, params)
	defer stream.Close()
	var msg sdk.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &attempt.Retryable{Err: &llm.APIError{Kind: llm.ErrUnavailable,
				Message: fmt.Sprintf("malformed stream from %s: %v", p.cfg.BaseURL, err)}}
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" && on != nil {
				on(llm.Event{Kind: llm.EventToolUse, Name: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			if on == nil {
				break
			}
			switch ev.Delta.Type {
			case "text_delta":
				on(llm.Event{Kind: llm.EventText, Text: ev.Delta.Text})
			case "thinking_delta":
				on(llm.Event{Kind: llm.EventThinking, Text: ev.Delta.Thinking})
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, p.classify(ctx, tr, err)
	}
	if !stopped {
		return nil, p.cfg.Cut(tr, "message_stop")
	}
	return response(&msg), nil
}

// classify turns an attempt's error into an *llm.APIError, retryable or
// not, saving the request of a 400 when asked to.
func (p *Provider) classify(ctx context.Context, tr *attempt.Trace, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae *sdk.Error
	if !errors.As(err, &ae) {
		return attempt.Network(p.cfg.BaseURL, tr, err)
	}
	e := apiError(ae)
	return p.cfg.Answered(e, ae.Response, tr, false)
}

// apiError reads the API's error body into an *llm.APIError classified by
// status and error type.
func apiError(ae *sdk.Error) *llm.APIError {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	raw := ae.RawJSON()
	json.Unmarshal([]byte(raw), &body)
	e := &llm.APIError{Status: ae.StatusCode, Type: body.Error.Type, Message: attempt.Message(body.Error.Message, raw, ae.StatusCode), RequestID: ae.RequestID}
	if e.Status == http.StatusOK {
		// An error event in the middle of a stream: the status is the
		// stream's, the type says what happened.
		switch e.Type {
		case "overloaded_error":
			e.Status = 529
		case "rate_limit_error":
			e.Status = http.StatusTooManyRequests
		default:
			e.Status = http.StatusInternalServerError
		}
	}
	auth := e.Type == "authentication_error" || e.Type == "permission_error"
	// Too long (llm.TooLong): the prompt alone, or the prompt with the
	// max_tokens the request asked for ("input length and `max_tokens`
	// exceed context limit: 188240 + 21333 > 200000, …"): either way a
	// smaller prompt gets through.
	e.Kind = attempt.Kind(e.Status, auth, llm.TooLong(e.Status, e.Type, "", e.Message))
	return e
}
