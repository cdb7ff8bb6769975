package proxy

import (
	"regexp"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

// blockKey is what makes a block the same block on the wire: its type,
// the tool call it belongs to, its text and its error flag (not its
// cache_control, which clients move).
type blockKey struct {
	typ       conv.Type
	toolUseID string
	text      string
	isError   bool
}

func keyOf(b *conv.Block) blockKey {
	return blockKey{b.Type, b.ToolUseID, b.PlainText(), b.IsError}
}

// recallRef finds a recall id a proxy's placeholder names: ctxkit's
// "recall b17" and ctxkit serve's "(recall id 3fa8…)".
var recallRef = regexp.MustCompile(`\brecall (?:id )?([A-Za-z0-9_-]+)`)

// attribute gives the blocks of out (what went upstream, decoded) the
// recorded ids and metadata of the client's blocks in sent: a block the
// proxy left as it was gets its original's id, rung and token count, so
// evidence recall sees it whole exactly as it sees any strategy's
// untouched block; a tool call or result the proxy changed keeps its
// original's id at a lower rung, and a recall id it names for it (a
// proxy's own) is returned mapped to that original. Added blocks
// (summaries, markers) have no id.
func attribute(ids map[string]*conv.Block, sent, out *llm.Request) map[string]string {
	byKey := make(map[blockKey][]string)
	byTool := make(map[string]string) // tool_use_id+type → id
	for i := range sent.Messages {
		for j := range sent.Messages[i].Blocks {
			b := &sent.Messages[i].Blocks[j]
			k := keyOf(b)
			byKey[k] = append(byKey[k], b.ID)
			if b.ToolUseID != "" {
				byTool[string(b.Type)+"\x00"+b.ToolUseID] = b.ID
			}
		}
	}
	alias := make(map[string]string)
	for i := range out.Messages {
		for j := range out.Messages[i].Blocks {
			b := &out.Messages[i].Blocks[j]
			k := keyOf(b)
			if q := byKey[k]; len(q) > 0 {
				orig := ids[q[0]]
				byKey[k] = q[1:]
				b.ID = q[0]
				if orig != nil {
					b.Meta = orig.Meta
				}
				continue
			}
			if b.ToolUseID == "" {
				continue
			}
			id, ok := byTool[string(b.Type)+"\x00"+b.ToolUseID]
			if !ok {
				continue
			}
			b.ID = id
			b.Meta.Rung = conv.RungPlaceholder
			for _, m := range recallRef.FindAllStringSubmatch(b.PlainText(), -1) {
				if _, own := ids[m[1]]; !own {
					alias[m[1]] = id
				}
			}
		}
	}
	return alias
}
