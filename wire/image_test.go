package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/llm"
)

func TestImageFromURL(t *testing.T) {
	tests := []struct {
		name, url string
		source    string // the block's ImageSource; "" when refused
		says      string // what the error says
	}{
		{"png data URL", "data:image/png;base64,iVBORw0KGgo=", pngSource, ""},
		{"jpeg data URL", "data:image/jpeg;base64,/9j/", `{"type":"base64","media_type":"image/jpeg","data":"/9j/"}`, ""},
		{"http URL", "https://example.com/a.png?x=1&y=2", `{"type":"url","url":"https://example.com/a.png?x=1&y=2"}`, ""},
		{"a media type's parameters stay in it", "data:image/png;name=a.png;base64,AA==", `{"type":"base64","media_type":"image/png;name=a.png","data":"AA=="}`, ""},
		// As the Anthropic decoder does, the data is not decoded nor the
		// media type matched against a list: the provider refuses those,
		// and a recording that holds such an image is replayed as it is.
		{"bad base64", "data:image/png;base64,not base64!", `{"type":"base64","media_type":"image/png","data":"not base64!"}`, ""},
		{"a media type no provider takes", "data:image/x-icon;base64,AA==", `{"type":"base64","media_type":"image/x-icon","data":"AA=="}`, ""},
		{"data URL without ;base64", "data:image/svg+xml,<svg/>", "", `an image data URL that is not base64 ("data:image/svg+xml")`},
		{"data URL without a comma", "data:image/png", "", `an image data URL that is not base64 ("data:image/png")`},
		{"empty data", "data:image/png;base64,", "", "a base64 image (image/png) without data"},
		{"no media type", "data:;base64,AA==", "", "a base64 image without a media type"},
		{"empty URL", "", "", "an image without a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ImageFromURL(tt.url, conv.SourceTool)
			if tt.says != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("err = %v, want ErrInvalid saying %q", err, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := img(conv.SourceTool, tt.source); b.Type != want.Type || string(b.ImageSource) != tt.source || b.Meta != want.Meta {
				t.Errorf("block = %+v (source %s), want source %s said by the tool", b, b.ImageSource, tt.source)
			}
		})
	}
}

func TestImageFromBase64(t *testing.T) {
	tests := []struct {
		name, mediaType, data string
		source, says          string
	}{
		{"png", "image/png", "iVBORw0KGgo=", pngSource, ""},
		{"no media type", "", "AA==", "", "a base64 image without a media type"},
		{"no data", "image/png", "", "", "a base64 image (image/png) without data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ImageFromBase64(tt.mediaType, tt.data, conv.SourceUser)
			if tt.says != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("err = %v, want ErrInvalid saying %q", err, tt.says)
				}
				return
			}
			if err != nil || string(b.ImageSource) != tt.source || b.Meta != img(conv.SourceUser, tt.source).Meta {
				t.Errorf("ImageFromBase64 = %+v (source %s), %v; want source %s", b, b.ImageSource, err, tt.source)
			}
		})
	}
}

// TestImageAsURL: the URL each OpenAI API carries an image source as, read
// back by ImageFromURL; a source no URL can say is a note in both
// encoders, never an empty data URL.
func TestImageAsURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  ImageSource
		url  string
		ok   bool
	}{
		{"base64", ImageSource{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}, "data:image/png;base64,iVBORw0KGgo=", true},
		{"url", ImageSource{Type: "url", URL: "https://example.com/a.png"}, "https://example.com/a.png", true},
		{"file", ImageSource{Type: "file"}, "", false},
		{"none", ImageSource{}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, ok := tc.src.AsURL()
			if url != tc.url || ok != tc.ok {
				t.Fatalf("AsURL() = %q, %v; want %q, %v", url, ok, tc.url, tc.ok)
			}
			if !ok {
				return
			}
			b, err := ImageFromURL(url, conv.SourceUser)
			if err != nil {
				t.Fatal(err)
			}
			if back := ImageSourceOf(&b); back != tc.src {
				t.Errorf("read back as %+v", back)
			}
		})
	}
	file := conv.Block{Type: conv.TypeImage, ImageSource: []byte(`{"type":"file","file_id":"file_01"}`), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceUser)}
	req := &llm.Request{Model: "m", Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "look"), file}}}}
	for name, encode := range map[string]func(*llm.Request) ([]byte, error){
		"chat":      EncodeOpenAI,
		"responses": func(r *llm.Request) ([]byte, error) { return EncodeResponses(r, ResponsesOptions{}) },
	} {
		body, err := encode(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(string(body), "data:;base64,") || !strings.Contains(string(body), `[image with a \"file\" source`) {
			t.Errorf("%s: a file image went as %s", name, body)
		}
	}
}
