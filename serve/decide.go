package serve

import "context"

// Decider decides the rewrite of one conversation: which consumed tool
// results move to a placeholder now and which run of messages a summary
// replaces. It sees the conversation as it would go upstream with the
// session's earlier decisions applied, and answers with new decisions
// only; the proxy makes them durable, writes the placeholders and the
// summary, and re-applies them by content hash on every later request.
//
// A Decider must be deterministic: the same View gives the same Plan, so
// two replicas (or a restarted proxy) decide alike.
type Decider interface {
	Decide(ctx context.Context, v *View) (Plan, error)
}

// View is what a Decider sees.
type View struct {
	Window   int // effective window: the most input tokens a request may have
	Tokens   int // estimated input tokens of the request as it stands
	Head     int // the first user message, which carries summaries; never summarized
	Messages []MessageInfo
}

// MessageInfo is one message of a View.
type MessageInfo struct {
	Role    string // user, assistant, tool (OpenAI), system/developer (OpenAI)
	Hash    string
	Tokens  int
	Results []ResultInfo // its tool results, in order
}

// ResultInfo is one tool result.
type ResultInfo struct {
	Hash     string
	Tool     string
	Tokens   int
	Cleared  bool // already a placeholder
	Consumed bool // an assistant message follows it
}

// Plan is a Decider's answer. The zero Plan changes nothing.
type Plan struct {
	Clear []string // hashes of tool results to clear
	// Summarize, when To > 0, replaces Messages[From..To] (inclusive) with
	// a summary. From > Head; Messages[To+1] is an assistant message, so
	// tool pairs and alternation survive.
	From, To int
}

// Thresholds is the proxy's built-in Decider, used until the engine
// package's turn loop is wired in. Its rules follow the cost model of
// package micro (DESIGN.md): a cleared block rewrites the provider's cache
// from its position on, so clearing waits until it pays and then clears
// everything clearable in one batch; compaction rewrites everything after
// it anyway, so it comes only when clearing alone cannot keep the request
// under the compaction threshold.
//
//   - Below ClearAt of the window nothing changes (all cache reads).
//   - Above it, every consumed tool result but the Keep newest (fewer when
//     they would take more than KeepShare of the window), larger
//     than SkipTokens, becomes a placeholder, in one batch — once the
//     batch frees at least MinBatch of the window. A clear rewrites the
//     cache from its first block to the end of the request; clearing one
//     result per turn would pay that rewrite every turn (the 2.6× of
//     DESIGN.md), so clearing waits until the tokens freed are a
//     sizeable share of what the rewrite costs.
//   - Above CompactAt, every clearable result goes at once.
//   - If the request would still be above CompactAt, the oldest messages
//     after the first are summarized, as few as bring the rest under
//     TailAt, cut where an assistant message starts.
type Thresholds struct {
	ClearAt, CompactAt, TailAt float64 // shares of the window
	MinBatch                   float64 // share of the window a batch must free
	KeepShare                  float64 // share of the window the kept results may take
	Keep                       int
	SkipTokens                 int
}

// DefaultThresholds returns the built-in policy's settings.
func DefaultThresholds() Thresholds {
	return Thresholds{ClearAt: 0.5, CompactAt: 0.8, TailAt: 0.4, MinBatch: 0.2, KeepShare: 0.15, Keep: 3, SkipTokens: 100}
}

const placeholderTokens = 40 // what a placeholder costs, generously

// Decide implements Decider.
func (t Thresholds) Decide(_ context.Context, v *View) (Plan, error) {
	var p Plan
	w := float64(v.Window)
	if w <= 0 || float64(v.Tokens) <= t.ClearAt*w {
		return p, nil
	}
	// Consumed results, newest last.
	type res struct {
		msg int
		r   ResultInfo
	}
	var consumed []res
	for i, m := range v.Messages {
		for _, r := range m.Results {
			if r.Consumed && !r.Cleared {
				consumed = append(consumed, res{i, r})
			}
		}
	}
	tokens := v.Tokens
	keep, kept := 0, 0
	for i := len(consumed) - 1; i >= 0 && keep < t.Keep; i-- {
		kept += consumed[i].r.Tokens
		if float64(kept) > t.KeepShare*w {
			break
		}
		keep++
	}
	if len(consumed) > keep {
		for _, c := range consumed[:len(consumed)-keep] {
			if c.r.Tokens <= t.SkipTokens {
				continue
			}
			p.Clear = append(p.Clear, c.r.Hash)
			tokens -= c.r.Tokens - placeholderTokens
		}
	}
	if freed := v.Tokens - tokens; float64(freed) < t.MinBatch*w && float64(v.Tokens) <= t.CompactAt*w {
		p.Clear, tokens = nil, v.Tokens // not worth a cache rewrite yet
	}
	if float64(tokens) <= t.CompactAt*w {
		return p, nil
	}
	// Summarize messages[1..k]: the smallest k with the tail under TailAt.
	cleared := map[string]bool{}
	for _, h := range p.Clear {
		cleared[h] = true
	}
	msgTokens := make([]int, len(v.Messages))
	total := 0
	for i, m := range v.Messages {
		n := m.Tokens
		for _, r := range m.Results {
			if cleared[r.Hash] {
				n -= r.Tokens - placeholderTokens
			}
		}
		msgTokens[i] = n
		total += n
	}
	fixed := tokens - total // system, tools, framing
	head := 0
	for _, n := range msgTokens[:v.Head+1] {
		head += n
	}
	tail := total - head
	budget := int(t.TailAt*w) - fixed - head
	// Keep at least the last two messages (the current exchange) whole.
	for k := v.Head + 1; k+2 < len(v.Messages); k++ {
		tail -= msgTokens[k]
		if v.Messages[k+1].Role != "assistant" || v.Messages[k].Role == "assistant" {
			continue
		}
		p.From, p.To = v.Head+1, k
		if tail <= budget {
			break
		}
	}
	return p, nil
}
