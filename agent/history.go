package agent

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// settle moves the results of finished steps to history (seed 000 §3.1):
// every full tool result the model has already answered (an assistant
// message follows it) and whose round has ended gets its per-tool
// compressed form (rung 1). It runs when a round ends and before a new one
// begins, so within a round the model sees its results whole. The change
// is one edit, kept in the transcript before it is applied.
func (a *Agent) settle(ctx context.Context) error {
	c := a.conv
	last := -1
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == conv.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	// When the conversation ends with the model's answer the round is
	// over; otherwise the round of the last step is still open and keeps
	// its results whole.
	end := last
	if last == len(c.Messages)-1 {
		end = len(c.Messages)
	} else {
		rounds := c.Rounds()
		end = min(end, rounds[len(rounds)-1].Start)
	}
	var uses map[string]*conv.Block
	var blocks []conv.Block
	freed := 0
	for i := 0; i < end; i++ {
		m := &c.Messages[i]
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Type != conv.TypeToolResult || b.Meta.Rung != conv.RungFull || b.Meta.Pinned || !b.Meta.Compactable {
				continue
			}
			if a.incompressible[b.ID] {
				continue
			}
			if uses == nil {
				uses = c.ToolUses()
			}
			nb, ok := toolresult.Compress(b, uses[b.ToolUseID])
			if !ok {
				if a.incompressible == nil {
					a.incompressible = make(map[string]bool)
				}
				a.incompressible[b.ID] = true
				continue
			}
			freed += conv.BlockTokens(b, a.counter) - conv.BlockTokens(&nb, a.counter)
			blocks = append(blocks, nb)
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	e := conv.Edit{Kind: conv.EditRung, Reason: "agent:history", Blocks: blocks}
	if err := a.store.Keep(ctx, e, c); err != nil {
		return fmt.Errorf("agent: keeping the round's results before compressing them: %w", err)
	}
	if err := c.Apply(e); err != nil {
		return fmt.Errorf("agent: compressing the round's results: %w", err)
	}
	a.mu.Lock()
	a.stats.Compressed += len(blocks)
	a.mu.Unlock()
	a.freed(freed)
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
	m, notes, err := a.builder.Message(ctx, view, assemble.Input{Results: results, Text: prompt})
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
	a.micro.Reset()
	return nil
}
