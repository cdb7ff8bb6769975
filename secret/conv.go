package secret

import (
	"encoding/json"

	"github.com/ctxkit/ctxkit/conv"
)

// Message returns m with every known value redacted in its blocks' text,
// tool inputs, results and structured data. m is not changed; when nothing
// matched, m is returned as it is.
func (r *Redactor) Message(m conv.Message) conv.Message {
	if r.Empty() {
		return m
	}
	bs, changed := r.blocks(m.Blocks)
	if changed {
		m.Blocks = bs
	}
	return m
}

// Blocks returns bs redacted, sharing bs when nothing matched.
func (r *Redactor) Blocks(bs []conv.Block) []conv.Block {
	out, _ := r.blocks(bs)
	return out
}

func (r *Redactor) blocks(bs []conv.Block) ([]conv.Block, bool) {
	if r.Empty() {
		return bs, false
	}
	var out []conv.Block
	for i := range bs {
		b, changed := r.block(&bs[i])
		if changed && out == nil {
			out = make([]conv.Block, len(bs))
			copy(out, bs)
		}
		if changed {
			out[i] = b
		}
	}
	if out == nil {
		return bs, false
	}
	return out, true
}

func (r *Redactor) block(b *conv.Block) (conv.Block, bool) {
	c := *b
	changed := false
	if s := r.String(c.Text); s != c.Text {
		c.Text, changed = s, true
	}
	for _, raw := range []*json.RawMessage{&c.Input, &c.Structured} {
		if len(*raw) == 0 {
			continue
		}
		if nb := r.Bytes(*raw); string(nb) != string(*raw) {
			*raw, changed = nb, true
		}
	}
	if inner, ch := r.blocks(c.Content); ch {
		c.Content, changed = inner, true
	}
	return c, changed
}
