package bench

import (
	"encoding/base64"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// refusedImages returns the ids of rec's blocks that hold an image whose
// base64 data the provider refuses ("Invalid base64 data"): an archive
// that redacted a secret-shaped run of characters inside an image leaves
// one. A request that still holds such a block as recorded is refused
// whatever strategy sent it, so the replay counts it invalid for every
// strategy alike, not only for those it sends over the wire.
func refusedImages(rec *conv.Conversation) map[string]bool {
	var bad map[string]bool
	for i := range rec.Messages {
		for j := range rec.Messages[i].Blocks {
			b := &rec.Messages[i].Blocks[j]
			if b.ID != "" && holdsBadImage(b) {
				if bad == nil {
					bad = make(map[string]bool)
				}
				bad[b.ID] = true
			}
		}
	}
	return bad
}

// holdsBadImage reports whether b is, or carries in its content, an image
// with base64 data that does not decode.
func holdsBadImage(b *conv.Block) bool {
	if b.Type == conv.TypeImage {
		src := wire.ImageSourceOf(b)
		if src.Type != "base64" {
			return false
		}
		_, err := base64.StdEncoding.DecodeString(src.Data)
		return err != nil
	}
	for k := range b.Content {
		if holdsBadImage(&b.Content[k]) {
			return true
		}
	}
	return false
}

// sendsRefused reports whether req still holds one of the blocks bad names
// with its image.
func sendsRefused(req *llm.Request, bad map[string]bool) bool {
	if len(bad) == 0 {
		return false
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Blocks {
			if b := &req.Messages[i].Blocks[j]; bad[b.ID] && holdsBadImage(b) {
				return true
			}
		}
	}
	return false
}
