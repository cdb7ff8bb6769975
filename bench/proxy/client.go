package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ctxkit/ctxkit/bench"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/llm/llmtest"
	"github.com/ctxkit/ctxkit/wire"
)

// client is how one kind of agent sends a session to its provider: the
// wire format, the request's shape and headers, and what it echoes back
// of what its provider gave it.
type client interface {
	// api is the provider's API the requests go to.
	api() llmtest.API
	// echo changes a recorded message into what the client holds: the
	// signatures and encrypted reasoning the stand-in issues for what the
	// recording holds, as a client keeps its provider's.
	echo(m *conv.Message)
	// encode is the request for req: its path (with query) and body.
	encode(req *llm.Request, session string) (path string, body []byte, err error)
	// header sets the client's credential and headers.
	header(h http.Header, key, session string)
	// decode reads a body of the client's wire format.
	decode(body []byte) (*llm.Request, error)
}

// Wires are the names --wire accepts, each a client's wire format.
var Wires = []string{"anthropic", "chat", "responses", "gemini"}

// clientFor is the client a session is replayed as: the one wire names,
// else the price table's provider, because the table is the provider the
// session is billed at. A table with automatic caching (OpenAI, Gemini)
// replays a session as its own client sent it — a Codex CLI rollout as
// Codex CLI on the Responses API, a Gemini CLI session as Gemini CLI on
// the Gemini API — and any other as an SDK client on chat completions; a
// table with explicit caching (Anthropic) replays every session as
// Claude Code on Anthropic Messages, with its cache breakpoints.
func clientFor(wireName, family string, automatic bool) (client, error) {
	if wireName == "" {
		switch {
		case !automatic:
			wireName = "anthropic"
		case family == "codex":
			wireName = "responses"
		case strings.HasPrefix(family, "gemini"):
			wireName = "gemini"
		default:
			wireName = "chat"
		}
	}
	switch wireName {
	case "anthropic":
		return anthropicClient{}, nil
	case "chat":
		return chatClient{}, nil
	case "responses":
		return codexClient{}, nil
	case "gemini":
		return geminiClient{}, nil
	}
	return nil, fmt.Errorf("unknown wire %q (known: %s)", wireName, strings.Join(Wires, ", "))
}

// signThinking gives recorded thinking the signature the stand-in gives
// its text.
func signThinking(m *conv.Message) {
	for j := range m.Blocks {
		if b := &m.Blocks[j]; b.Type == conv.TypeThinking {
			b.Signature = llmtest.Signature(b.Text)
		}
	}
}

// anthropicClient is Claude Code: Anthropic Messages with its cache
// breakpoints (bench.ClientAnchors), not streamed.
type anthropicClient struct{}

func (anthropicClient) api() llmtest.API     { return llmtest.Anthropic }
func (anthropicClient) echo(m *conv.Message) { signThinking(m) }
func (anthropicClient) encode(req *llm.Request, _ string) (string, []byte, error) {
	body, err := wire.EncodeAnthropic(bench.ClientAnchors(req))
	return "/v1/messages", body, err
}
func (anthropicClient) header(h http.Header, key, session string) {
	h.Set("X-Api-Key", key)
	h.Set("Anthropic-Version", "2023-06-01")
	h.Set("X-Claude-Code-Session-Id", session)
}
func (anthropicClient) decode(body []byte) (*llm.Request, error) { return wire.DecodeAnthropic(body) }

// chatClient is an OpenAI-style client on chat completions (SDKs and the
// agents built on them): no anchors, the provider caches prefixes.
type chatClient struct{}

func (chatClient) api() llmtest.API     { return llmtest.OpenAI }
func (chatClient) echo(m *conv.Message) { signThinking(m) }
func (chatClient) encode(req *llm.Request, _ string) (string, []byte, error) {
	r := *req
	r.Model = openaiModel
	body, err := wire.EncodeOpenAI(&r)
	return "/v1/chat/completions", body, err
}
func (chatClient) header(h http.Header, key, _ string) { h.Set("Authorization", "Bearer "+key) }
func (chatClient) decode(body []byte) (*llm.Request, error) {
	return wire.DecodeOpenAI(body)
}
