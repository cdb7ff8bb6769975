package conv

// Counter counts the tokens of a text. The tokens package provides
// estimators and exact counters; conv only needs this one method.
type Counter interface {
	Count(text string) int
}

// Per-item framing the provider adds around content, so that many small
// blocks are not counted as free. MessageOverhead is a message's own
// (its role and boundaries), which MessageTokens adds to its blocks'.
const (
	blockOverhead   = 3
	MessageOverhead = 4
	toolOverhead    = 8
)

// BlockTokens returns the block's token count, counting it on first use and
// caching the result in its Meta: a conversation that grew by one message
// costs only that message to count again.
func BlockTokens(b *Block, c Counter) int {
	if b.Meta.Tokens > 0 {
		return b.Meta.Tokens
	}
	n := blockOverhead
	switch {
	case b.Type == TypeImage:
		n += ImageTokens
	case len(b.Raw) > 0: // opaque, a server tool call: its bytes as sent
		n += c.Count(string(b.Raw))
	case len(b.Content) > 0:
		for i := range b.Content {
			n += BlockTokens(&b.Content[i], c)
		}
	default:
		n += c.Count(b.PlainText())
	}
	b.Meta.Tokens = n
	return n
}

// MessageTokens is the sum of a message's blocks plus its framing.
func MessageTokens(m *Message, c Counter) int {
	n := MessageOverhead
	for i := range m.Blocks {
		n += BlockTokens(&m.Blocks[i], c)
	}
	return n
}

// ToolTokens counts one tool schema, caching the count in t.Tokens.
func ToolTokens(t *Tool, c Counter) int {
	if t.Tokens == 0 {
		t.Tokens = toolOverhead + c.Count(t.Name+" "+t.Description+" "+string(t.InputSchema))
	}
	return t.Tokens
}

// Breakdown is a conversation's token count by part.
type Breakdown struct {
	System   int
	Tools    int
	Messages int
	Pending  int
}

// Total is the sum of all parts.
func (b Breakdown) Total() int { return b.System + b.Tools + b.Messages + b.Pending }

// Tokens counts the whole conversation, using and filling the per-block
// caches.
func (c *Conversation) Tokens(counter Counter) Breakdown {
	var b Breakdown
	for i := range c.System {
		b.System += BlockTokens(&c.System[i], counter)
	}
	for i := range c.Tools {
		b.Tools += ToolTokens(&c.Tools[i], counter)
	}
	for i := range c.Messages {
		b.Messages += MessageTokens(&c.Messages[i], counter)
	}
	for i := range c.Pending {
		b.Pending += BlockTokens(&c.Pending[i], counter)
	}
	return b
}
