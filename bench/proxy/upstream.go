package proxy

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/tokens"
	"github.com/ctxkit/ctxkit/wire"
)

// Upstream is the stand-in provider a proxy under test forwards to: the
// Anthropic Messages API at /v1/messages, OpenAI chat completions at
// /v1/chat/completions, the OpenAI Responses API at /v1/responses and the
// Gemini API at /v1beta/models/{model}:generateContent and
// :streamGenerateContent (package llmtest's wire-faithful server, which
// validates every request as the real API does and reports usage as it
// does, cached tokens included). It tells the requests
// of concurrent replays apart by their credential (x-api-key, Bearer or
// x-goog-api-key),
// which the proxy passes on, summary requests included.
//
// A request that ends with the newest message the replay sent is the
// client's request forwarded, and is answered "ok" (the replay takes the
// model's answer from the recording). Any other request is one the proxy
// made itself — a summary request — and is answered with the bench's
// offline summarizer's summary of the messages it carries, inside
// <summary></summary>, the way the proxy asked for it. A model follows the
// length its instruction asks for (summarize.Aim), so where it names one
// the summary is the extractive summarizer's aimed at it, as the engine's
// own replay writes its summaries.
type Upstream struct {
	srv       *llmtest.Server
	summarize func(ctx context.Context, msgs []conv.Message) (string, error)

	mu      sync.Mutex
	newest  map[string]string          // credential → text of the client's newest message
	usage   map[string]*reported       // credential → the usage to report for it
	inbox   map[string][]*llmtest.Call // credential → calls not yet taken
	answers map[int]answered           // call number → what it carried and was answered
}

// answered is one call the stand-in answered: the request decoded with
// package wire (nil when it did not decode) and the text of the answer.
type answered struct {
	req  *llm.Request
	text string
}

// NewUpstream returns a stand-in upstream whose summaries are written by
// summarize (the bench's offline summarizer).
func NewUpstream(summarize func(ctx context.Context, msgs []conv.Message) (string, error)) *Upstream {
	u := &Upstream{
		// Requests over the window are answered: the bench counts them,
		// as a provider would refuse them.
		srv:       llmtest.NewHandler(llmtest.Config{Window: 1 << 30, MaxOutput: 1 << 20}),
		summarize: summarize,
		newest:    map[string]string{},
		usage:     map[string]*reported{},
		inbox:     map[string][]*llmtest.Call{},
		answers:   map[int]answered{},
	}
	u.srv.Handle(u.answer)
	return u
}

// ServeHTTP answers one request as the provider would.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.srv.ServeHTTP(w, r) }

// credential is the key a request was sent with.
func credential(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	if k := h.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}

// expect says that the next request under key ends with a message whose
// text is newest, and what usage to report for it (usage.go).
func (u *Upstream) expect(key, newest string, r *reported) {
	u.mu.Lock()
	u.newest[key] = newest
	u.usage[key] = r
	u.mu.Unlock()
}

// forget drops what the stand-in holds for key.
func (u *Upstream) forget(key string) {
	u.mu.Lock()
	delete(u.newest, key)
	delete(u.usage, key)
	delete(u.inbox, key)
	u.mu.Unlock()
}

func (u *Upstream) answer(c *llmtest.Call) llmtest.Reply {
	key := credential(c.Header)
	u.mu.Lock()
	newest, known := u.newest[key]
	rep := u.usage[key]
	u.mu.Unlock()
	req, err := decode(c.API, c.Body)
	if err != nil {
		req = nil
	}
	text := "ok"
	var usage *llm.Usage
	if n := 0; req != nil && known {
		n = len(req.Messages)
		if n > 0 && messageText(&req.Messages[n-1]) != newest {
			msgs := req.Messages[:n-1] // the instruction is the last user message
			if n == 1 {
				msgs = req.Messages // a transcript in one message
			}
			s, err := u.summary(msgs, messageText(&req.Messages[n-1]))
			if err != nil || strings.TrimSpace(s) == "" {
				s = "(no summary)"
			}
			text = "<summary>\n" + strings.TrimSpace(s) + "\n</summary>"
		} else if n > 0 && rep != nil {
			// The client's request: the usage the bench bills for it.
			uu := rep.usage(req)
			usage = &uu
		}
	}
	u.mu.Lock()
	u.answers[c.N] = answered{req, text}
	u.mu.Unlock()
	reply := llmtest.Text(text)
	reply.Usage = usage
	return reply
}

// decode reads a request body of api with package wire.
func decode(api llmtest.API, body []byte) (*llm.Request, error) {
	switch api {
	case llmtest.OpenAI:
		return wire.DecodeOpenAI(body)
	case llmtest.Responses:
		return wire.DecodeResponses(body)
	case llmtest.Gemini:
		return wire.DecodeGemini(body)
	}
	return wire.DecodeAnthropic(body)
}

// take returns the calls made under key since the last take, in order,
// with what each carried and was answered (zero for a refused call).
func (u *Upstream) take(key string) ([]*llmtest.Call, []answered) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range u.srv.TakeCalls() {
		k := credential(c.Header)
		u.inbox[k] = append(u.inbox[k], c)
	}
	cs := u.inbox[key]
	delete(u.inbox, key)
	as := make([]answered, len(cs))
	for i, c := range cs {
		as[i] = u.answers[c.N]
		delete(u.answers, c.N)
	}
	return cs, as
}

// callNumber is the number of the stand-in's call a response answered,
// from its request id (req_llmtest000042), or 0.
func callNumber(h http.Header) int {
	id := h.Get("Request-Id")
	if id == "" {
		id = h.Get("X-Request-Id")
	}
	n, err := strconv.Atoi(strings.TrimPrefix(id, "req_llmtest"))
	if err != nil || !strings.HasPrefix(id, "req_llmtest") {
		return 0
	}
	return n
}

// messageText is the text of a message's blocks, to recognise the
// client's newest message in what the proxy sent.
func messageText(m *conv.Message) string {
	var sb strings.Builder
	for i := range m.Blocks {
		sb.WriteString(m.Blocks[i].PlainText())
		sb.WriteByte(0)
	}
	return sb.String()
}

// aimFor finds the length a summary instruction asks for (summarize.Aim).
var aimFor = regexp.MustCompile(`Aim for about (\d+) tokens`)

// summary answers a summary request carrying msgs and the instruction:
// aimed at the length the instruction asks for, when it names one.
func (u *Upstream) summary(msgs []conv.Message, instruction string) (string, error) {
	ctx := context.Background()
	if m := aimFor.FindStringSubmatch(instruction); m != nil {
		if target, err := strconv.Atoi(m[1]); err == nil && target > 0 {
			out, err := summarize.NewExtractive().Summarize(ctx, summarize.Input{Messages: msgs, TargetTokens: target, Counter: tokens.NewEstimator()})
			return out.Text, err
		}
	}
	return u.summarize(ctx, msgs)
}
