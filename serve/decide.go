package serve

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Decider decides the rewrite of one conversation: which consumed tool
// results move to a placeholder now, which run of messages a summary (or
// a truncation marker) replaces, and which blocks are cut to head and
// tail. It sees the conversation as it would go upstream with the
// session's earlier decisions applied, and answers with new decisions
// only; the proxy makes them durable, writes the placeholders, the
// summary and the cuts, and re-applies them by content hash on every
// later request.
//
// A Decider must be deterministic: the same View gives the same Plan, so
// two replicas (or a restarted proxy) decide alike. Everything it may
// depend on is in the View; it keeps nothing between calls.
type Decider interface {
	Decide(ctx context.Context, v *View) (Plan, error)
}

// View is what a Decider sees.
type View struct {
	// Provider is "anthropic" (the provider's cache is read at the
	// client's anchors) or "openai" (every prefix is cached).
	Provider string
	// Budget is the window's arithmetic for this request: the window and
	// the request's max_tokens through compact.Config.Budget. No request
	// may go upstream over Budget.Limit.
	Budget compact.Budget
	Tokens int // estimated input tokens of the request as it stands
	Head   int // the first user message, which carries summaries; never summarized (-1: none, so no summary)
	// Requests is how many requests the session has made, this one
	// included: the assistant messages of the client's history (those a
	// summary replaced included), plus one.
	Requests int
	Messages []MessageInfo
}

// MessageInfo is one message of a View.
type MessageInfo struct {
	Role    string // user, assistant, tool (OpenAI), system/developer (OpenAI)
	Hash    string
	Tokens  int
	Results []ResultInfo // its tool results, in order
	Calls   []CallInfo   // its tool calls, in order (assistant)
	// Cuts are the values the last rung may cut to head and tail, other
	// than tool results: text blocks, string contents, tool call inputs.
	// Thinking blocks are never among them. Set only when the request is
	// over Budget.Limit.
	Cuts []CutInfo
}

// ResultInfo is one tool result.
type ResultInfo struct {
	Hash     string
	Tool     string
	Call     CallInfo // the call it answers
	Tokens   int
	Bytes    int  // the content's size
	Cleared  bool // already a placeholder (or cut)
	Consumed bool // an assistant message follows it
}

// CallInfo is a tool call: the tool's name and its input as the client
// sent it (raw JSON: an object, or for OpenAI a string holding one).
// Classifying it parses the input, shell commands included, so a Decider
// does it only for the calls it needs.
type CallInfo struct {
	Name  string
	Input []byte
	memo  *callMemo // the proxy's memo of classified calls, if any
}

// Classify tells what the call does (toolresult.Classify).
func (c CallInfo) Classify() toolresult.Call {
	if c.memo != nil {
		return c.memo.classify(c.Name, c.Input)
	}
	return classify(c.Name, c.Input)
}

func classify(name string, in []byte) toolresult.Call {
	if len(in) > 0 && in[0] == '"' {
		var s string
		if json.Unmarshal(in, &s) == nil {
			in = []byte(s)
		}
	}
	return toolresult.Classify(name, in)
}

// callMemo remembers classified calls by the hash of their name and
// input: the client resends its whole history every turn, and
// classifying a shell command parses it. A memo of a pure function: what
// it returns does not depend on what it has seen.
type callMemo struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]toolresult.Call
}

const callMemoSize = 1 << 16

func newCallMemo() *callMemo { return &callMemo{m: map[[sha256.Size]byte]toolresult.Call{}} }

func (cm *callMemo) classify(name string, in []byte) toolresult.Call {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(in)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	cm.mu.Lock()
	c, ok := cm.m[k]
	cm.mu.Unlock()
	if ok {
		return c
	}
	c = classify(name, in)
	cm.mu.Lock()
	if len(cm.m) >= callMemoSize {
		clear(cm.m)
	}
	cm.m[k] = c
	cm.mu.Unlock()
	return c
}

// CutInfo is a value the shrink rung may cut.
type CutInfo struct {
	Hash   string
	Tokens int
}

// Plan is a Decider's answer. The zero Plan changes nothing.
type Plan struct {
	Clear []string // hashes of tool results to clear
	// Summarize, when To > 0, replaces Messages[From..To] (inclusive) with
	// a summary. From > Head; Messages[To+1] is an assistant message, so
	// tool pairs and alternation survive. Drop replaces them with a
	// truncation marker instead (no model call).
	From, To int
	Drop     bool
	Words    int // with Drop: tokens of the user's own words in the run the marker keeps, newest first
	// Cut shrinks blocks (tool results by their hash, other values by
	// theirs) to about Tokens each, head and tail.
	Cut []Cut
}

// Cut is one block cut to head and tail.
type Cut struct {
	Hash   string
	Tokens int
}

func (p Plan) empty() bool { return len(p.Clear) == 0 && p.To == 0 && len(p.Cut) == 0 }
