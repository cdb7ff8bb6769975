package bench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
)

func TestHoldsBadImage(t *testing.T) {
	img := func(src string) conv.Block {
		return conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(src)}
	}
	result := func(parts ...conv.Block) conv.Block {
		b := conv.NewToolResult("t1", "Read", "", false)
		b.Content = parts
		return b
	}
	tests := []struct {
		name string
		b    conv.Block
		want bool
	}{
		{"valid base64", img(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`), false},
		{"redacted inside the data", img(`{"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ[REDACTED_AWS_KEY]3p3T"}`), true},
		{"a url is not checked", img(`{"type":"url","url":"https://example.com/a.png"}`), false},
		{"a source that is not json", img(`nope`), false},
		{"inside a tool result", result(conv.NewText(conv.SourceTool, "see"), img(`{"type":"base64","media_type":"image/png","data":"a_b"}`)), true},
		{"a tool result with a good image", result(img(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`)), false},
		{"text", conv.NewText(conv.SourceUser, "data: a_b"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holdsBadImage(&tt.b); got != tt.want {
				t.Errorf("holdsBadImage = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReplayRefusedImage: a recording whose image the provider would
// refuse makes every request that still holds it invalid, for every
// strategy alike, none included.
func TestReplayRefusedImage(t *testing.T) {
	rec := recording()
	res := &rec.Messages[2].Blocks[0]
	res.Content = []conv.Block{
		conv.NewText(conv.SourceTool, res.Text),
		{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"iVBO[REDACTED]Kgo="}`)},
	}
	opts := Options{
		Window: 1000, Pricing: pricing.Anthropic(), Counter: words{}, MinCacheTokens: 1, Strategies: Strategies()[:1],
		Summarize: func(_ context.Context, msgs []conv.Message) (string, error) { return "summary", nil },
	}
	runs, err := Replay(context.Background(), []Session{{Name: "tiny", Conv: rec}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Turns 2 and 3 carry the result with its image.
	if got := runs[0].Invalid; got != 2 {
		t.Errorf("none sent %d refused requests, want 2", got)
	}
}
