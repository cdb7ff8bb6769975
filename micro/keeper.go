package micro

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/ctxkit/ctxkit/conv"
)

// Keeper makes an edit's originals durable before the edit takes effect:
// Step calls Keep and applies the edit only if Keep succeeded.
// transcript.Store implements it.
type Keeper interface {
	Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error
}

// Spiller writes a file into the session folder and returns its path.
// transcript.Store implements it; a Keeper that is also a Spiller lets
// Step's oversize guard put the whole output in a file.
type Spiller interface {
	Spill(ctx context.Context, name string, data []byte) (string, error)
}

// ErrUnknownID is returned by MemoryKeeper.Recall for an id it never kept.
var ErrUnknownID = errors.New("micro: unknown recall id")

// MemoryKeeper is a Keeper and Spiller that holds originals in memory, for
// tests, the replay benchmark and a compact run without a session folder.
// It keeps the version of each block current when the block is first
// named by an edit: the original, since every change goes through Keep.
// It is safe for concurrent use.
type MemoryKeeper struct {
	mu    sync.Mutex
	orig  map[string]conv.Block
	edits []conv.Edit
	files map[string][]byte
	// where indexes block ids of the conversation last seen, so that Keep
	// costs what the edit touches, not the whole history.
	where   map[string][2]int
	scanned int
}

// NewMemoryKeeper returns an empty MemoryKeeper.
func NewMemoryKeeper() *MemoryKeeper {
	return &MemoryKeeper{orig: map[string]conv.Block{}, files: map[string][]byte{}, where: map[string][2]int{}}
}

// Keep records the originals of the blocks e changes and the edit itself.
func (k *MemoryKeeper) Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := e.Affected(c)
	if e.Kind == conv.EditReplace && (e.From < 0 || e.To > len(c.Messages) || e.From > e.To) {
		return fmt.Errorf("micro: keep: %w: messages [%d,%d) of %d", conv.ErrEdit, e.From, e.To, len(c.Messages))
	}
	found := make(map[string]conv.Block, len(ids))
	for _, id := range ids {
		if _, ok := k.orig[id]; ok {
			continue
		}
		b, ok := k.find(c, id)
		if !ok {
			return fmt.Errorf("micro: keep: %w: no block %s in the conversation", conv.ErrEdit, id)
		}
		found[id] = b.Clone()
	}
	maps.Copy(k.orig, found)
	k.edits = append(k.edits, e)
	if e.Kind == conv.EditReplace {
		k.where, k.scanned = map[string][2]int{}, 0 // message indexes move
	}
	return nil
}

// find locates id in c through the index, extending it over messages not
// seen yet and rebuilding it when it has gone stale.
func (k *MemoryKeeper) find(c *conv.Conversation, id string) (*conv.Block, bool) {
	if k.scanned > len(c.Messages) {
		k.where, k.scanned = map[string][2]int{}, 0
	}
	for ; k.scanned < len(c.Messages); k.scanned++ {
		for j, b := range c.Messages[k.scanned].Blocks {
			k.where[b.ID] = [2]int{k.scanned, j}
		}
	}
	if p, ok := k.where[id]; ok && p[0] < len(c.Messages) && p[1] < len(c.Messages[p[0]].Blocks) &&
		c.Messages[p[0]].Blocks[p[1]].ID == id {
		return &c.Messages[p[0]].Blocks[p[1]], true
	}
	if i, j := c.Find(id); i >= 0 {
		k.where[id] = [2]int{i, j}
		return &c.Messages[i].Blocks[j], true
	}
	return nil, false
}

// Spill keeps data under name and returns "memory:" + name.
func (k *MemoryKeeper) Spill(ctx context.Context, name string, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.files[name] = slices.Clone(data)
	return "memory:" + name, nil
}

// Recall returns the original of the block with id.
func (k *MemoryKeeper) Recall(id string) (conv.Block, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, ok := k.orig[id]
	if !ok {
		return conv.Block{}, fmt.Errorf("%w %q", ErrUnknownID, id)
	}
	return b.Clone(), nil
}

// Edits returns the edits kept so far, in order.
func (k *MemoryKeeper) Edits() []conv.Edit {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.edits)
}

// File returns the data spilled under name.
func (k *MemoryKeeper) File(name string) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	d, ok := k.files[name]
	return slices.Clone(d), ok
}
