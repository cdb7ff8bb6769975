package agent

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
)

// settle moves the results of finished steps to history (rung 1): the
// engine's RoundEnded. It runs when a round ends and before a new one
// begins, so within a round the model sees its results whole.
func (a *Agent) settle(ctx context.Context) error {
	r, err := a.eng.RoundEnded(ctx, a.conv)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.decided(r.Decisions)
	if err := a.keepAccount(ctx); err != nil {
		return err
	}
	if r.Round.Compressed > 0 {
		a.mu.Lock()
		a.stats.Compressed += r.Round.Compressed
		a.mu.Unlock()
	}
	return nil
}

// mergeInput adds the user's prompt to the unanswered user message that
// ends the conversation (a turn interrupted after its tool results, or
// one whose request never got an answer): the message is replaced by one
// holding its blocks, then the pending injections and the new words. The
// replacement is an edit, so the transcript keeps both.
func (a *Agent) mergeInput(ctx context.Context, prompt string) error {
	c := a.conv
	n := len(c.Messages)
	last := c.Messages[n-1]
	var results []conv.Block
	for _, b := range last.Blocks {
		if b.Type == conv.TypeToolResult {
			results = append(results, b)
		}
	}
	view := &conv.Conversation{System: c.System, Tools: c.Tools, Messages: c.Messages[:n-1], Pending: c.Pending, Seq: c.Seq}
	m, notes, err := a.eng.Message(ctx, view, assemble.Input{Results: results, Text: prompt})
	for _, note := range notes {
		a.emit(Event{Kind: EventNote, Text: note})
	}
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	merged := conv.Message{Role: conv.RoleUser, Turn: last.Turn}
	if !conv.OpensRound(last) {
		merged.Turn = c.LastTurn() + 1
	}
	merged.Blocks = conv.CloneBlocks(last.Blocks)
	now := a.cfg.Clock().UTC()
	for _, b := range m.Blocks[len(results):] {
		b.ID = "" // stamped when the edit is applied
		if b.Meta.CreatedAt.IsZero() {
			b.Meta.CreatedAt = now
		}
		merged.Blocks = append(merged.Blocks, b)
	}
	e := conv.Edit{Kind: conv.EditReplace, Reason: "agent:input", From: n - 1, To: n, Messages: []conv.Message{merged}}
	if err := a.store.Keep(ctx, e, c); err != nil {
		return fmt.Errorf("agent: recording the input: %w", err)
	}
	if err := c.Apply(e); err != nil {
		return fmt.Errorf("agent: adding the input: %w", err)
	}
	c.Pending = nil
	a.eng.Reset()
	return nil
}
