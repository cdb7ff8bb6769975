package serve

import (
	"bytes"

	"github.com/ctxkit/ctxkit/conv"
)

// Images are sent as base64, which a bytes-per-token estimate counts at
// hundreds of thousands of tokens; providers charge a fixed amount per
// image. The proxy counts each image at conv.ImageTokens (as the rest of
// ctxkit does), so one screenshot does not set off compaction, and never
// cuts one.

var (
	kBase64Type = []byte(`"type":"base64"`) // Anthropic: {"type":"base64","media_type":…,"data":"…"}
	kData       = []byte(`"data":"`)
	kDataURI    = []byte(`;base64,`) // OpenAI: "url":"data:image/png;base64,…"
)

// images is the base64 payload of the images in b[sp]: its bytes and how
// many images there are.
func images(b []byte, sp span) (n, size int) {
	v := b[sp.s:sp.e]
	if !bytes.Contains(v, []byte("base64")) {
		return 0, 0
	}
	payload := func(i int) int { // bytes of the JSON string content from i to its closing quote
		j := bytes.IndexByte(v[i:], '"')
		if j < 0 {
			return 0
		}
		return j
	}
	// each adds up the payloads that follow every key in v.
	each := func(key []byte) {
		for i := 0; ; {
			k := bytes.Index(v[i:], key)
			if k < 0 {
				return
			}
			i += k + len(key)
			if m := payload(i); m > 0 {
				n, size = n+1, size+m
				i += m
			}
		}
	}
	if bytes.Contains(v, kBase64Type) {
		each(kData)
	}
	each(kDataURI)
	return n, size
}

// imageAdjust is what to add to a bytes-per-token estimate of b[sp] for
// its images: their fixed cost less their base64 bytes, in tokens.
func imageAdjust(b []byte, sp span) int {
	n, size := images(b, sp)
	return n*conv.ImageTokens - size/4
}
