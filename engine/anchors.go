package engine

import (
	"fmt"

	"github.com/ctxkit/ctxkit/assemble"
	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/pricing"
)

// Anchors places prompt-cache anchors on a conversation the way the
// engine places them on its own requests (the system/tools anchor, the
// tail, and the held blocks first; at most the provider's breakpoints),
// for callers that build requests by other rules — the bench's peer
// strategies — so that every strategy gets the same anchor machinery.
// It is not safe for concurrent use.
type Anchors struct {
	b *assemble.Builder
}

// NewAnchors returns the anchor machinery for a provider priced by p:
// none where the provider caches by itself or not at all. minCache is the
// smallest prefix the provider caches (0: the model table's default).
func NewAnchors(p pricing.Table, counter conv.Counter, minCache int) (*Anchors, error) {
	anchors := 0
	if p.Automatic || !p.Caches() {
		anchors = -1 // the provider caches by itself, or not at all
	}
	b, err := assemble.New(assemble.Config{
		RuleFiles: []string{}, Counter: counter, MaxAnchors: anchors,
		MinCacheTokens: minCache,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Anchors{b: b}, nil
}

// Place returns c as a request with anchors placed, holding the blocks
// named in hold first. An invalid conversation is an error wrapping
// assemble.ErrInvalid.
func (a *Anchors) Place(c *conv.Conversation, hold []string) (*llm.Request, error) {
	out, err := a.b.BuildHeld(c, nil, hold)
	if err != nil {
		return nil, err
	}
	return out.Request, nil
}
