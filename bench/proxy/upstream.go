package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
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
// A request that ends with the newest message the replay sent
// (endsWithNewest: as sent, a block of it cut to head and tail by the
// proxy's oversize guard, or opened by a summary) is the client's request
// forwarded, and is answered "ok" (the replay takes the
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
	newest  map[string]conv.Message    // credential → the client's newest message, as the stand-in decodes it
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
		newest:    map[string]conv.Message{},
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

// expect says that the next request under key ends with the message
// newest, and what usage to report for it (usage.go).
func (u *Upstream) expect(key string, newest conv.Message, r *reported) {
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
		if n > 0 && !endsWithNewest(&req.Messages[n-1], &newest) {
			msgs := req.Messages[:n-1] // the instruction is the last user message
			if n == 1 {
				msgs = req.Messages // a transcript in one message
			}
			s, err := u.summary(msgs, messageText(&req.Messages[n-1]))
			if err != nil || strings.TrimSpace(s) == "" {
				s = "(no summary)"
			}
			text = "<summary>\n" + strings.TrimSpace(s) + "\n</summary>"
			if rep != nil {
				rep.cost(req) // billed as the provider bills it (usage.go)
			}
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
// endsWithNewest reports whether m, the last message of a request the
// proxy sent, is the client's newest message newest: its blocks end m,
// each as the client sent it, or cut to head and tail by the proxy's
// oversize guard (a tool result answers the same call; a text is shorter
// and keeps its opening); a summary of everything before may open the message, which a
// proxy does when the newest is all that is left of the client's messages
// (roles alternate). A summary request the proxy makes ends with its own
// instruction instead.
func endsWithNewest(m, newest *conv.Message) bool {
	n := len(newest.Blocks)
	if n == 0 || len(m.Blocks) < n {
		return false
	}
	for i := range newest.Blocks {
		a, b := &m.Blocks[len(m.Blocks)-n+i], &newest.Blocks[i]
		if a.Type != b.Type || a.ToolUseID != b.ToolUseID {
			return false
		}
		if a.Type == conv.TypeToolResult {
			continue // the same call's result, whole or cut
		}
		const opening = 64
		at, bt := a.PlainText(), b.PlainText()
		if at != bt && (len(at) >= len(bt) || len(at) < opening || at[:opening] != bt[:opening]) {
			return false
		}
	}
	return true
}

func messageText(m *conv.Message) string {
	var sb strings.Builder
	for i := range m.Blocks {
		sb.WriteString(m.Blocks[i].PlainText())
		sb.WriteByte(0)
	}
	return sb.String()
}

// The part of the conversation a summary instruction on the client's own
// prefix names (serve's prefixInstruction): from the message that begins
// with one excerpt up to the one that begins with another, not included.
var (
	spanFrom = regexp.MustCompile(`from the message that begins ("(?:[^"\\]|\\.)*")`)
	spanTo   = regexp.MustCompile(`up to the message that begins ("(?:[^"\\]|\\.)*") \(not included\)`)
)

// named is the part of msgs the instruction asks to summarize, as a model
// reads it: from the first message that begins with the excerpt after
// "from the message that begins" up to the last that begins with the
// excerpt after "up to the message that begins" (the part kept after it is
// the short tail); all of msgs when the instruction names no part or a
// part it cannot find.
func named(msgs []conv.Message, instruction string) []conv.Message {
	lo, hi := 0, len(msgs)
	if spanFrom.MatchString(instruction) {
		i, ok := firstBeginning(msgs, spanFrom, instruction)
		if !ok {
			return msgs
		}
		lo = i
	}
	if m := spanTo.FindStringSubmatch(instruction); m != nil {
		if ex, err := strconv.Unquote(m[1]); err == nil {
			for i := len(msgs) - 1; i > lo; i-- {
				if begins(&msgs[i], ex) {
					hi = i
					break
				}
			}
		}
	}
	return msgs[lo:hi]
}

// keptFrom finds the message serve's instruction says the user's words
// stay verbatim from (serve's keptWordsSentence).
var keptFrom = regexp.MustCompile(`The user's own words from the message that begins ("(?:[^"\\]|\\.)*") on stay as they are`)

// withoutKeptWords is msgs without the user's words the instruction says
// stay as they are, as a model following it leaves them out: the user's
// text in the message that begins with the excerpt it names and after.
func withoutKeptWords(msgs []conv.Message, instruction string) []conv.Message {
	from, ok := firstBeginning(msgs, keptFrom, instruction)
	if !ok {
		return msgs
	}
	out := slices.Clone(msgs)
	for i := from; i < len(out); i++ {
		if out[i].Role != conv.RoleUser {
			continue
		}
		out[i].Blocks = slices.DeleteFunc(slices.Clone(out[i].Blocks), func(b conv.Block) bool {
			return b.Type == conv.TypeText && b.Meta.Source == conv.SourceUser
		})
	}
	return out
}

// firstBeginning is the first of msgs that begins with the excerpt re
// finds quoted in instruction; false when it finds none, or no message
// begins so.
func firstBeginning(msgs []conv.Message, re *regexp.Regexp, instruction string) (int, bool) {
	m := re.FindStringSubmatch(instruction)
	if m == nil {
		return 0, false
	}
	ex, err := strconv.Unquote(m[1])
	if err != nil {
		return 0, false
	}
	for i := range msgs {
		if begins(&msgs[i], ex) {
			return i, true
		}
	}
	return 0, false
}

// begins reports whether m's opening is the excerpt ex (clipped with "…"):
// its first text, tool call or tool result, as serve's excerpt names it.
func begins(m *conv.Message, ex string) bool {
	ex = strings.TrimSuffix(ex, "…")
	for i := range m.Blocks {
		b := &m.Blocks[i]
		switch b.Type {
		case conv.TypeText, conv.TypeSummary:
			return strings.HasPrefix(b.Text, ex)
		case conv.TypeToolUse:
			return strings.HasPrefix(ex, "[tool call "+b.Name+" ")
		case conv.TypeToolResult:
			rest, ok := strings.CutPrefix(ex, "[tool result ")
			if !ok {
				return false
			}
			if _, text, ok := strings.Cut(rest, "] "); ok {
				return strings.HasPrefix(strings.TrimSpace(b.ResultText()), strings.TrimSpace(text))
			}
			return true
		}
	}
	return false
}

// fromTranscript reads the messages back from a transcript summary
// request (serve's transcript: "## role" opens a message; "[tool call name
// input]" is a call; "[tool result name]" opens a result that runs to the
// next call, result or message; other lines are text), so the stand-in
// summarizes the conversation the transcript shows as the engine's replay
// summarizes its own, not one user message holding it all. A result is
// paired with the oldest call of its tool still unanswered. None when text
// holds no "## role" line.
func fromTranscript(text string) []conv.Message {
	var out []conv.Message
	var cur *conv.Block // the text or result being read
	open := map[string][]string{}
	calls := 0
	flush := func() {
		if cur != nil && len(out) > 0 {
			if cur.Type == conv.TypeText {
				cur.Text = strings.TrimSpace(cur.Text)
			}
			if cur.Type != conv.TypeText || cur.Text != "" {
				m := &out[len(out)-1]
				m.Blocks = append(m.Blocks, *cur)
			}
		}
		cur = nil
	}
	for line := range strings.Lines(text) {
		l := strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(l, "## ") && !strings.Contains(l[3:], " "):
			flush()
			role := conv.RoleUser
			if r := l[3:]; r == "assistant" || r == "model" {
				role = conv.RoleAssistant
			}
			out = append(out, conv.Message{Role: role})
			continue
		case len(out) == 0:
			continue // the instruction before the transcript
		case strings.HasPrefix(l, "[tool call ") && strings.HasSuffix(l, "]"):
			flush()
			name, input, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(l, "[tool call "), "]"), " ")
			calls++
			id := "call" + strconv.Itoa(calls)
			open[name] = append(open[name], id)
			if !json.Valid([]byte(input)) {
				input = string(marshalText(input))
			}
			m := &out[len(out)-1]
			m.Blocks = append(m.Blocks, conv.NewToolUse(id, name, json.RawMessage(input)))
			continue
		case strings.HasPrefix(l, "[tool result ") && strings.HasSuffix(l, "]"):
			flush()
			name := strings.TrimSuffix(strings.TrimPrefix(l, "[tool result "), "]")
			var id string
			if ids := open[name]; len(ids) > 0 {
				id, open[name] = ids[0], ids[1:]
			} else {
				calls++
				id = "call" + strconv.Itoa(calls)
			}
			b := conv.NewToolResult(id, name, "", false)
			cur = &b
			continue
		}
		if cur == nil {
			b := conv.NewText(conv.SourceUser, "")
			if out[len(out)-1].Role == conv.RoleAssistant {
				b = conv.NewText(conv.SourceAssistant, "")
			}
			cur = &b
		}
		cur.Text += line
	}
	flush()
	for i := range out {
		for j := range out[i].Blocks {
			if b := &out[i].Blocks[j]; b.Type == conv.TypeToolResult {
				b.Text = strings.TrimSuffix(b.Text, "\n")
			}
		}
	}
	return out
}

// marshalText is a call input that is not JSON (a custom tool's free
// text) as the object {"input": s}.
func marshalText(s string) []byte {
	b, _ := json.Marshal(map[string]string{"input": s})
	return b
}

// summary answers a summary request carrying msgs and the instruction: of
// the part the instruction names (named), aimed at the length it asks for
// when it names one.
func (u *Upstream) summary(msgs []conv.Message, instruction string) (string, error) {
	ctx := context.Background()
	if len(msgs) == 1 {
		if ms := fromTranscript(strings.ReplaceAll(instruction, "\x00", "\n")); len(ms) > 0 {
			msgs = ms // a transcript in one message (serve's transcript summary request)
		}
	}
	msgs = withoutKeptWords(named(msgs, instruction), instruction)
	if target, ok := summarize.AimOf(instruction); ok {
		out, err := summarize.NewExtractive().Summarize(ctx, summarize.Input{Messages: msgs, TargetTokens: target, Counter: tokens.NewEstimator()})
		return out.Text, err
	}
	return u.summarize(ctx, msgs)
}
