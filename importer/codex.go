package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// codexLine is one line of a Codex CLI rollout: {timestamp, type, payload}.
// Rollouts written before 0.3x have no wrapper: a first line with the
// session's id and instructions, then bare response items.
type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// codexItem holds the fields of the envelope payloads the import reads
// (session_meta, turn_context, compacted, event_msg), and the type of a
// response_item, which wire.DecodeResponsesItem decodes.
type codexItem struct {
	Type string `json:"type"`
	// session_meta, turn_context
	Instructions *string `json:"instructions"`
	Model        string  `json:"model"`
	Cwd          string  `json:"cwd"`
	// compacted
	Message            string            `json:"message"`
	ReplacementHistory []json.RawMessage `json:"replacement_history"`
	// event_msg token_count
	Info *struct {
		Total *codexTokens `json:"total_token_usage"`
		Last  *codexTokens `json:"last_token_usage"`
	} `json:"info"`
}

// codexTokens is OpenAI usage: input_tokens includes the cached ones,
// output_tokens the reasoning ones.
type codexTokens struct {
	Input     int `json:"input_tokens"`
	Cached    int `json:"cached_input_tokens"`
	Output    int `json:"output_tokens"`
	Reasoning int `json:"reasoning_output_tokens"`
	Total     int `json:"total_tokens"`
}

func (t codexTokens) usage() conv.Usage {
	cached := min(t.Cached, t.Input)
	return conv.Usage{Input: t.Input - cached, CacheRead: cached, Output: t.Output}
}

// codexImport is the state of one rollout import.
type codexImport struct {
	*run
	pending          *conv.Usage  // usage recorded before the items of its response
	pendingReasoning int          // its reasoning tokens
	lastTotal        *codexTokens // last cumulative usage, to drop repeated token_count events
	records          int          // rollout records read
	reasoning        map[int]int  // message index → reasoning tokens of its response
}

// codex imports a Codex CLI rollout (~/.codex/sessions/YYYY/MM/DD/
// rollout-*.jsonl). The conversation is the response_item sequence: messages,
// reasoning (opaque, kept as redacted thinking), tool calls and their outputs
// paired by call_id; compacted records start a new epoch with their summary;
// token_count events are the recorded usage of the response they follow or
// precede; everything else is UI events and skipped.
func (r *run) codex() error {
	cx := codexImport{run: r}
	if err := r.eachLine(cx.line); err != nil {
		return err
	}
	r.total = cx.records
	cx.reasoningTokens()
	return nil
}

// reasoningTokens sets the token count of the encrypted reasoning blocks
// from the reasoning tokens recorded for their response: the ciphertext's
// length says little about what the reasoning costs when sent back.
func (cx *codexImport) reasoningTokens() {
	for i, n := range cx.reasoning {
		if i >= len(cx.b.msgs) || n <= 0 {
			continue
		}
		var rs []*conv.Block
		for j := range cx.b.msgs[i].Blocks {
			if b := &cx.b.msgs[i].Blocks[j]; b.Type == conv.TypeRedactedThinking {
				rs = append(rs, b)
			}
		}
		for _, b := range rs {
			b.Meta.Tokens = max(1, n/len(rs))
		}
	}
}

// attach records usage u, with reasoning tokens, on message i.
func (cx *codexImport) attach(i int, u *conv.Usage, reasoning int) {
	cx.b.msgs[i].Usage = u
	if reasoning > 0 {
		if cx.reasoning == nil {
			cx.reasoning = map[int]int{}
		}
		cx.reasoning[i] = reasoning
	}
}

func (cx *codexImport) line(n int, line []byte) error {
	var l codexLine
	if err := json.Unmarshal(line, &l); err != nil {
		return cx.damaged(n, err)
	}
	cx.records++
	cx.b.at, _ = time.Parse(time.RFC3339Nano, l.Timestamp)
	payload := l.Payload
	kind := l.Type
	if len(payload) == 0 { // a rollout from before the {type, payload} wrapper
		var legacy struct {
			RecordType string `json:"record_type"`
		}
		_ = json.Unmarshal(line, &legacy)
		payload, kind = line, "response_item"
		switch {
		case legacy.RecordType != "":
			cx.skip("record_type " + legacy.RecordType) // resume state, never sent
			return nil
		case n == 1 && l.Type == "":
			kind = "session_meta"
		}
	}
	var it codexItem
	if err := json.Unmarshal(payload, &it); err != nil {
		return cx.damaged(n, fmt.Errorf("%s record: %v", kind, err))
	}
	switch kind {
	case "session_meta":
		if it.Instructions != nil {
			cx.b.systemText(*it.Instructions)
		}
		if cx.s.Model == "" {
			cx.s.Model = it.Model
		}
		cx.s.Cwd = it.Cwd
	case "turn_context":
		if it.Model != "" {
			cx.s.Model = it.Model
		}
		if it.Cwd != "" {
			cx.s.Cwd = it.Cwd
		}
	case "response_item":
		return cx.item(n, it.Type, payload)
	case "compacted":
		cx.compacted(n, &it)
	case "event_msg":
		if it.Type == "token_count" {
			cx.tokens(&it)
			return nil
		}
		cx.skip("event_msg " + it.Type)
	default:
		cx.unknown(kind)
	}
	return nil
}

// item adds one response item: a Responses API item, which wire decodes.
func (cx *codexImport) item(n int, typ string, payload json.RawMessage) error {
	switch typ {
	case "ghost_snapshot":
		cx.skip("response_item ghost_snapshot") // undo state, never sent
		return nil
	case "", "compaction":
		// A compaction is encrypted and remote; an item without a type
		// is not one Codex writes.
		cx.unknown("response_item " + typ)
		return nil
	}
	it, err := wire.DecodeResponsesItem(payload)
	switch {
	case errors.Is(err, wire.ErrUnknownType):
		cx.unknown("response_item " + typ) // types this importer does not know
		return nil
	case err != nil:
		return cx.damaged(n, err)
	}
	b := cx.b
	switch typ {
	case "message":
		bs := cx.content(it.Role, it.Blocks)
		switch it.Role {
		case "assistant":
			cx.assistant(bs...)
		case "system":
			b.system = append(b.system, bs...)
		default: // user, developer
			b.user(bs...)
		}
	case "reasoning":
		// Encrypted, readable only by the provider that wrote it: opaque,
		// sent back verbatim to it and never as text. Its summary was shown
		// to the user, not sent back; what the reasoning costs is the
		// response's reasoning tokens (reasoningTokens).
		r := it.Blocks[0]
		if r.Type == conv.TypeThinking {
			r = conv.Block{Type: conv.TypeRedactedThinking, Data: r.Signature, Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)}
		}
		if r.Data == "" {
			cx.skip("reasoning without encrypted content")
			return nil
		}
		cx.assistant(r)
	case "function_call", "custom_tool_call", "local_shell_call":
		u := it.Blocks[0]
		cx.assistant(b.call(u.ToolUseID, u.Name, u.Input))
	case "web_search_call":
		// A search the provider ran itself (Codex 0.117+): part of the
		// model's response, a tool call with no local result to pair; its
		// results went to the model and are not in the rollout.
		cx.assistant(it.Blocks...)
	default: // a call's output
		b.named(it.Blocks)
		b.user(it.Blocks...)
	}
	return nil
}

// assistant adds blocks of a response: items of one response are recorded
// one by one and become one assistant message.
func (cx *codexImport) assistant(bs ...conv.Block) {
	last := cx.b.last()
	fresh := last == nil || last.Role != conv.RoleAssistant
	cx.b.assistantMore(bs...)
	if fresh && cx.pending != nil {
		cx.attach(len(cx.b.msgs)-1, cx.pending, cx.pendingReasoning)
		cx.pending = nil
	}
}

// tokens records a token_count event: the usage of one API response. Older
// rollouts write it before the response's items, newer ones after them: it
// belongs to the last assistant message when that has none yet, else to the
// next one. Repeated events (rate-limit updates) carry no new usage.
func (cx *codexImport) tokens(it *codexItem) {
	if it.Info == nil || it.Info.Total == nil && it.Info.Last == nil {
		cx.skip("event_msg token_count without usage")
		return
	}
	var t codexTokens
	switch {
	case it.Info.Total != nil && cx.lastTotal != nil && *it.Info.Total == *cx.lastTotal:
		return // the same usage again
	case it.Info.Last != nil:
		t = *it.Info.Last
	case cx.lastTotal != nil: // only cumulative usage: take the difference
		n, p := *it.Info.Total, *cx.lastTotal
		t = codexTokens{Input: n.Input - p.Input, Cached: n.Cached - p.Cached, Output: n.Output - p.Output, Reasoning: n.Reasoning - p.Reasoning}
	default:
		t = *it.Info.Total
	}
	cx.lastTotal = it.Info.Total
	u := t.usage()
	if last := cx.b.last(); last != nil && last.Role == conv.RoleAssistant && last.Usage == nil {
		cx.attach(len(cx.b.msgs)-1, &u, t.Reasoning)
		return
	}
	cx.pending, cx.pendingReasoning = &u, t.Reasoning
}

// compacted starts a new epoch: the summary replaces the history before it.
// Newer rollouts also record the replacement history (the user messages
// Codex keeps, the summary among them); older ones only the summary.
func (cx *codexImport) compacted(n int, it *codexItem) {
	span := conv.Span{First: 1, Last: max(1, cx.b.rounds())}
	cx.pending = nil
	if len(it.ReplacementHistory) == 0 {
		cx.b.epoch(conv.NewSummary(it.Message, span))
		return
	}
	started := false
	for _, raw := range it.ReplacementHistory {
		h, err := wire.DecodeResponsesItem(raw)
		if err != nil || h.Type != "message" {
			cx.skip("compacted replacement_history item")
			continue
		}
		bs := cx.content(h.Role, h.Blocks)
		if h.Role == "assistant" {
			cx.skip("compacted replacement_history item")
			continue
		}
		for i := range bs {
			if bs[i].Type == conv.TypeText && it.Message != "" && strings.Contains(bs[i].Text, it.Message) {
				bs[i] = conv.NewSummary(bs[i].Text, span)
			}
		}
		if !started {
			cx.b.epoch(bs...)
			started = true
		} else {
			cx.b.user(bs...)
		}
	}
	if !started {
		cx.b.epoch(conv.NewSummary(it.Message, span))
	}
}

// content sets who said the blocks of a message of role: user-side text
// Codex itself writes (environment context, AGENTS.md instructions,
// developer messages) is injected text, not the user's words.
func (cx *codexImport) content(role string, bs []conv.Block) []conv.Block {
	for i := range bs {
		bs[i].Meta = conv.DefaultMeta(bs[i].Type, codexSource(role, bs[i].Text))
	}
	cx.countOpaque(bs)
	return bs
}

func codexSource(role, text string) conv.Source {
	switch role {
	case "assistant":
		return conv.SourceAssistant
	case "system":
		return conv.SourceSystem
	case "developer":
		return conv.SourceHook
	}
	return wire.UserSource(text)
}
