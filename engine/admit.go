package engine

import (
	"context"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/micro"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Admit applies the oversize rule to the text of the newest user message,
// as the guard (micro) applies it to a new tool result: a text block
// larger than the guard's limit (micro.Config.GuardTokens) never reaches
// the model whole; it becomes its head and tail (GuardPreview tokens)
// with a note naming its size and its recall id, its original kept
// through Config.Keeper first (seed 001 §7.1). The user's other blocks
// stay as they are. An agent builds its messages with Message, which
// spills an oversize input before it enters the conversation; a caller
// that receives messages already built — the proxy, whose client sends
// them — calls Admit before Prepare. Ready has no request.
func (e *Engine) Admit(ctx context.Context, c *conv.Conversation) (Ready, error) {
	r := e.ready()
	e.arrive(c)
	n := len(c.Messages)
	if e.cfg.NoMicro || n == 0 || c.Messages[n-1].Role != conv.RoleUser {
		return r, nil
	}
	limit, preview := e.cfg.Micro.GuardTokens, e.cfg.Micro.GuardPreview // limit: Config.Defaults sets it (micro.Guard)
	if preview <= 0 {
		preview = micro.DefaultGuardPreview
	}
	if limit < 0 {
		return r, nil
	}
	preview = min(preview, limit/2)
	var blocks []conv.Block
	freed := 0
	for j := range c.Messages[n-1].Blocks {
		b := &c.Messages[n-1].Blocks[j]
		if b.Type != conv.TypeText || b.Meta.Rung != conv.RungFull || b.Meta.Pinned {
			continue
		}
		tok := conv.BlockTokens(b, e.cfg.Counter)
		if tok <= limit {
			continue
		}
		keep := len(b.Text) * preview / tok
		note := fmt.Sprintf("[… text too large for the context (%s tokens, %s lines); only its start and end are shown; the whole text: %s]",
			textfmt.Thousands(tok), textfmt.Thousands(lineCount(b.Text)), toolresult.Recall(b.ID, e.cfg.RecallTool))
		nb := b.Clone()
		nb.SetText(toolresult.ClipText(b.Text, keep, note), conv.RungCompressed)
		freed += tok - conv.BlockTokens(&nb, e.cfg.Counter)
		blocks = append(blocks, nb)
	}
	if len(blocks) == 0 {
		return r, nil
	}
	ed := conv.Edit{Kind: conv.EditRung, Reason: "engine:admit", Blocks: blocks}
	e.keeper.r = &r
	defer func() { e.keeper.r = nil }()
	if err := e.keeper.Keep(ctx, ed, c); err != nil {
		return r, fmt.Errorf("engine: keeping an oversize input before cutting it: %w", err)
	}
	if err := c.Apply(ed); err != nil {
		return r, fmt.Errorf("engine: cutting an oversize input: %w", err)
	}
	r.decide(Decision{Kind: KindSpill, Blocks: len(blocks), Tokens: freed,
		Reason: "a text block of the newest message is over the oversize limit: its start and end stay, with its recall id"})
	e.freed(freed)
	return r, nil
}

// lineCount is the number of lines of s.
func lineCount(s string) int {
	n := 1
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && i < len(s)-1 {
			n++
		}
	}
	return n
}
