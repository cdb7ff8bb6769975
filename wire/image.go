package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
	"github.com/ctxkit/ctxkit/jsonerr"
	"github.com/ctxkit/ctxkit/textfmt"
)

// ImageSource is an image block's source (conv.Block.ImageSource): the
// Anthropic image source shape, written canonically.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// ImageSourceOf reads image block b's source; the zero ImageSource when it
// does not parse.
func ImageSourceOf(b *conv.Block) ImageSource {
	var s ImageSource
	if json.Unmarshal(b.ImageSource, &s) != nil {
		return ImageSource{}
	}
	return s
}

// AsURL is the URL an OpenAI API carries the image as (chat completions'
// image_url, the Responses API's input_image): a data URL for base64
// data, the URL itself for a URL source; false for a source no URL can
// say (Anthropic's file). ImageFromURL reads it back.
func (s ImageSource) AsURL() (string, bool) {
	switch s.Type {
	case "base64":
		return "data:" + s.MediaType + ";base64," + s.Data, true
	case "url":
		return s.URL, true
	}
	return "", false
}

// note is the text an API that carries images by URL (api) gets in place
// of an image whose source no URL can say.
func (s ImageSource) note(api string) string {
	return fmt.Sprintf("[image with a %q source, which %s cannot carry]", s.Type, api)
}

// ImageFromURL returns the image block said by src that url names, as
// OpenAI's APIs carry an image (chat completions' image_url, the
// Responses API's input_image): a data URL, data:<media type>;base64,<data>,
// becomes a base64 source, any other URL a URL source. An empty URL, a
// data URL that is not base64 and one without a media type or data are
// ErrInvalid; the data is not decoded (see "Images" in the package doc).
func ImageFromURL(url string, src conv.Source) (conv.Block, error) {
	s := ImageSource{Type: "url", URL: url}
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		mt, data, ok := strings.Cut(rest, ";base64,")
		if !ok {
			head, _, _ := strings.Cut(url, ",")
			return conv.Block{}, fmt.Errorf("%w: an image data URL that is not base64 (%q)", ErrInvalid, textfmt.Clip(head, 60))
		}
		s = ImageSource{Type: "base64", MediaType: mt, Data: data}
	}
	return newImage(s, src)
}

// ImageFromBase64 returns the image block said by src that holds data,
// base64 bytes of mediaType (Gemini's inline data). No media type or no
// data is ErrInvalid.
func ImageFromBase64(mediaType, data string, src conv.Source) (conv.Block, error) {
	return newImage(ImageSource{Type: "base64", MediaType: mediaType, Data: data}, src)
}

// newImage returns the image block said by src with source s, written
// canonically, once s passes its check.
func newImage(s ImageSource, src conv.Source) (conv.Block, error) {
	if err := s.check(); err != nil {
		return conv.Block{}, err
	}
	b, _ := jsonenc.Marshal(s) // strings always encode
	return conv.Block{Type: conv.TypeImage, ImageSource: b, Meta: conv.DefaultMeta(conv.TypeImage, src)}, nil
}

// checkImageSource applies ImageSource.check to source, an image block's
// source as a request holds it (the Anthropic decoder keeps it verbatim).
func checkImageSource(source json.RawMessage) error {
	if len(source) == 0 {
		return fmt.Errorf("%w: an image without a source", ErrInvalid)
	}
	var s ImageSource
	if err := json.Unmarshal(source, &s); err != nil {
		return fmt.Errorf("%w: image source: %s", ErrInvalid, jsonerr.What(err))
	}
	return s.check()
}

// check reports what makes s a source no provider takes: no type, base64
// data without a media type or without data, a URL source without a URL.
// It is the one check every decoder applies to an image. The data is not
// decoded, nor the media type matched against a provider's list: the
// provider refuses those itself, and a recording that holds such an image
// is replayed as it is (bench's refusedImages). A source of another type
// (Anthropic's file) passes as it is.
func (s ImageSource) check() error {
	switch s.Type {
	case "":
		return fmt.Errorf("%w: an image source without a type", ErrInvalid)
	case "base64":
		if s.MediaType == "" {
			return fmt.Errorf("%w: a base64 image without a media type", ErrInvalid)
		}
		if s.Data == "" {
			return fmt.Errorf("%w: a base64 image (%s) without data", ErrInvalid, s.MediaType)
		}
	case "url":
		if s.URL == "" {
			return fmt.Errorf("%w: an image without a URL", ErrInvalid)
		}
	}
	return nil
}
