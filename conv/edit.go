package conv

import (
	"errors"
	"fmt"
)

// EditKind says what an Edit does.
type EditKind string

const (
	// EditRung replaces blocks in place (same ids) with lower-fidelity
	// versions: compressed, cleared to a placeholder, spilled to a file.
	EditRung EditKind = "rung"
	// EditReplace replaces the messages [From, To) with Messages: a summary
	// taking the place of turns, or a truncation marker.
	EditReplace EditKind = "replace"
)

// ErrEdit is returned (wrapped) when an edit does not fit the conversation
// it is applied to.
var ErrEdit = errors.New("conv: edit does not apply")

// Edit is one lossy change to a conversation, as a value: the engine
// decides edits, the caller makes the originals durable (the transcript
// records the edit), then applies it. Replaying a transcript's messages and
// edits in order rebuilds the state exactly.
type Edit struct {
	Kind EditKind `json:"kind"`
	// Reason says why, for the transcript and the user
	// ("micro:cache-aware", "compact:auto", "compact:fallback-truncate").
	Reason string `json:"reason,omitempty"`

	// Blocks are the new versions of the changed blocks (EditRung).
	Blocks []Block `json:"blocks,omitempty"`

	// From and To are message indexes at the time of the edit and Messages
	// their replacement (EditReplace).
	From     int       `json:"from,omitempty"`
	To       int       `json:"to,omitempty"`
	Messages []Message `json:"messages,omitempty"`
}

// Affected returns the ids of every block of c the edit changes or removes:
// the originals that must be durable before the edit takes effect.
func (e *Edit) Affected(c *Conversation) []string {
	var ids []string
	switch e.Kind {
	case EditRung:
		for i := range e.Blocks {
			ids = append(ids, e.Blocks[i].ID)
		}
	case EditReplace:
		if e.From < 0 || e.To > len(c.Messages) {
			return nil
		}
		for i := e.From; i < e.To; i++ {
			for j := range c.Messages[i].Blocks {
				ids = append(ids, c.Messages[i].Blocks[j].ID)
			}
		}
	}
	return ids
}

// Apply carries out the edit on c.
func (c *Conversation) Apply(e Edit) error {
	switch e.Kind {
	case EditRung:
		for _, nb := range e.Blocks {
			i, j := c.Find(nb.ID)
			if i < 0 {
				return fmt.Errorf("%w: no block %s", ErrEdit, nb.ID)
			}
			c.Messages[i].Blocks[j] = nb.Clone()
		}
		return nil
	case EditReplace:
		if e.From < 0 || e.To > len(c.Messages) || e.From > e.To {
			return fmt.Errorf("%w: messages [%d,%d) of %d", ErrEdit, e.From, e.To, len(c.Messages))
		}
		repl := make([]Message, len(e.Messages))
		for i, m := range e.Messages {
			m.Blocks = CloneBlocks(m.Blocks)
			c.Stamp(m.Blocks)
			repl[i] = m
		}
		rest := append(repl, c.Messages[e.To:]...)
		c.Messages = append(c.Messages[:e.From], rest...)
		return nil
	}
	return fmt.Errorf("%w: unknown kind %q", ErrEdit, e.Kind)
}
