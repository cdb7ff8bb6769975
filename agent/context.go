package agent

import (
	"slices"

	"github.com/ctxkit/ctxkit/compact"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/engine"
)

// Category keys of a ContextReport, in the order they fill the window.
const (
	CatSystem     = "system"
	CatTools      = "tools"
	CatRules      = "rules"
	CatSummaries  = "summaries"
	CatUser       = "user"
	CatReminders  = "reminders"
	CatAssistant  = "assistant"
	CatCalls      = "calls"
	CatResults    = "results"
	CatCompressed = "compressed"
	CatCleared    = "cleared"
)

var categoryNames = map[string]string{
	CatSystem:     "System prompt",
	CatTools:      "Tool definitions",
	CatRules:      "Project rules",
	CatSummaries:  "Summaries",
	CatUser:       "User messages",
	CatReminders:  "Reminders and injections",
	CatAssistant:  "Assistant text",
	CatCalls:      "Tool calls",
	CatResults:    "Tool results (full)",
	CatCompressed: "Tool results (compressed)",
	CatCleared:    "Tool results (cleared)",
}

var categoryOrder = []string{CatSystem, CatTools, CatRules, CatSummaries, CatUser, CatReminders,
	CatAssistant, CatCalls, CatResults, CatCompressed, CatCleared}

// Category is one part of the context and its size.
type Category struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
	Blocks int    `json:"blocks"`
}

// ContextReport is what /context shows: the context by category against
// the window, and where the compaction thresholds are.
type ContextReport struct {
	Model  string `json:"model"`
	Window int    `json:"window"`
	// Categories are every category, in order, empty ones included.
	Categories []Category `json:"categories"`
	// Total is the estimated size of the next request; Free what is left
	// of the window.
	Total int `json:"total"`
	Free  int `json:"free"`
	// Measured is the compactor's measure (the last reported prompt plus
	// an estimate of what was added since); LastPrompt the last size the
	// provider reported.
	Measured   int            `json:"measured"`
	LastPrompt int            `json:"last_prompt"`
	Budget     compact.Budget `json:"budget"`
	Level      string         `json:"level"`
	// Stopped says why automatic compaction is off, when it is.
	Stopped  string `json:"stopped,omitempty"`
	Messages int    `json:"messages"`
	Rounds   int    `json:"rounds"`
	// Saved is what the session has saved so far against sending
	// everything, in dollars at the configured prices, by the engine's
	// account (engine.Engine.Saved): what the requests did not read, less
	// what clearings, compactions and recall round trips cost.
	Saved float64 `json:"saved_usd"`
	// Decisions are the engine's latest decisions and why, oldest first,
	// a run of the same one on successive requests counted once.
	Decisions []engine.Decided `json:"decisions"`
}

// Context measures the conversation by category. Call it between runs.
func (a *Agent) Context() ContextReport {
	c := a.conv
	sizes := make(map[string]*Category, len(categoryOrder))
	for _, k := range categoryOrder {
		sizes[k] = &Category{Key: k, Name: categoryNames[k]}
	}
	add := func(k string, n int) {
		sizes[k].Tokens += n
		sizes[k].Blocks++
	}
	for i := range c.System {
		add(CatSystem, conv.BlockTokens(&c.System[i], a.counter))
	}
	for i := range c.Tools {
		add(CatTools, conv.ToolTokens(&c.Tools[i], a.counter))
	}
	if r := a.eng.Rules(); r.File != "" {
		add(CatRules, a.counter.Count(r.Text))
	}
	for i := range c.Messages {
		m := &c.Messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			add(category(m.Role, b), conv.BlockTokens(b, a.counter))
		}
	}
	st := a.eng.Status(c)
	// The window in force: the configured one, or a smaller one the
	// provider stated (engine.Engine.Retry).
	rep := ContextReport{Model: a.cfg.Model, Window: st.Budget.Window, Messages: len(c.Messages), Rounds: len(c.Rounds())}
	for _, k := range categoryOrder {
		rep.Categories = append(rep.Categories, *sizes[k])
		rep.Total += sizes[k].Tokens
	}
	rep.Free = max(rep.Window-rep.Total, 0)
	rep.Measured, rep.Budget, rep.Level = st.Usage, st.Budget, st.Level.String()
	if st.State.Stopped != nil {
		rep.Stopped = st.State.Stopped.Error()
	}
	rep.LastPrompt = a.Stats().LastPrompt
	rep.Saved = a.eng.Saved()
	a.mu.Lock()
	rep.Decisions = slices.Clone(a.decisions)
	a.mu.Unlock()
	return rep
}

func category(role conv.Role, b *conv.Block) string {
	switch b.Type {
	case conv.TypeSummary:
		return CatSummaries
	case conv.TypeToolUse:
		return CatCalls
	case conv.TypeToolResult:
		switch {
		case b.Meta.Rung >= conv.RungPlaceholder:
			return CatCleared
		case b.Meta.Rung == conv.RungCompressed:
			return CatCompressed
		}
		return CatResults
	}
	if role == conv.RoleAssistant {
		return CatAssistant
	}
	if b.Meta.Source == conv.SourceUser {
		return CatUser
	}
	return CatReminders
}
