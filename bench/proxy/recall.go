package proxy

import (
	"context"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// Recaller returns what the proxy's recall tool gives back for id: the
// original it stored, as the model would get it (ctxkit serve's is the
// store behind ctxkit mcp, in the replayed client's tenant). ok is false
// when the id names nothing.
type Recaller func(ctx context.Context, id string) (original string, ok bool)

// originals finds recorded blocks by their content, for recall ids a
// proxy names: the text its recall tool returns for one is the recorded
// block's text.
type originals map[string]string // content → recorded id

// add indexes the recorded blocks of m by the text a recall gives back
// for each: a tool result's text, a text block's, a tool call's input.
func (o originals) add(m *conv.Message) {
	for j := range m.Blocks {
		b := &m.Blocks[j]
		if b.ID == "" {
			continue
		}
		var k string
		switch b.Type {
		case conv.TypeToolResult:
			k = b.ResultText()
		case conv.TypeText:
			k = b.Text
		case conv.TypeToolUse:
			k = string(b.Input)
		default:
			continue
		}
		if _, dup := o[k]; !dup && k != "" {
			o[k] = b.ID
		}
	}
}

// resolve ties every recall id that out names and that neither the
// recording nor alias knows to the recorded block its recall returns —
// a summary's recall index line, a cut note, a drop marker — and adds it
// to alias. It is the rule the bench applies to ctxkit's own recall ids
// (an id named in a block not shown whole is recallable, and the terms of
// the block it returns count when recalled, the round trip billed): only
// the id's resolution differs, through the proxy's own recall tool.
// Ids resolved (or not) once are remembered in known, since a proxy's ids
// name content and stay valid.
func resolve(ctx context.Context, recall Recaller, idx originals, ids map[string]*conv.Block, out *llm.Request, alias, known map[string]string) {
	if recall == nil {
		return
	}
	for i := range out.Messages {
		for j := range out.Messages[i].Blocks {
			b := &out.Messages[i].Blocks[j]
			if b.ID != "" && b.Meta.Rung == conv.RungFull {
				continue // the client's block, forwarded whole
			}
			for _, m := range recallRef.FindAllStringSubmatch(b.PlainText(), -1) {
				id := m[1]
				if _, own := ids[id]; own {
					continue
				}
				if _, done := alias[id]; done {
					continue
				}
				rec, seen := known[id]
				if !seen {
					if text, ok := recall(ctx, id); ok {
						rec = idx[text]
					}
					known[id] = rec
				}
				if rec != "" {
					alias[id] = rec
				}
			}
		}
	}
}
