package sdkcheck

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/llm"
	"github.com/ctxkit/ctxkit/wire"
)

// check parses body with the SDK's request type and marshals it back:
// every field wire writes must be one the SDK knows, in the shape it
// expects, or it would be lost or rejected on the way.
func check(t *testing.T, provider string, body []byte) {
	t.Helper()
	var p any = new(anthropic.MessageNewParams)
	if provider == "openai" {
		p = new(openai.ChatCompletionNewParams)
	}
	if err := json.Unmarshal(body, p); err != nil {
		t.Fatalf("%s SDK rejects the body: %v\n%s", provider, err, body)
	}
	again, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("%s SDK cannot marshal it: %v", provider, err)
	}
	var want, got map[string]any
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	sdkForms(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s SDK changed the body (-ours +sdk):\n%s", provider, d)
	}
}

// sdkForms rewrites body into the equivalent forms the SDK types marshal:
// a tool result's string content as one text block, no empty model.
func sdkForms(body map[string]any) {
	if body["model"] == "" {
		delete(body, "model")
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			b, _ := b.(map[string]any)
			if s, ok := b["content"].(string); ok && b["type"] == "tool_result" {
				b["content"] = []any{map[string]any{"type": "text", "text": s}}
			}
		}
	}
}

var encoders = map[string]func(*llm.Request) ([]byte, error){
	"anthropic": wire.EncodeAnthropic,
	"openai":    wire.EncodeOpenAI,
}

// TestGoldenBodies checks wire's golden files, which cover every block
// kind.
func TestGoldenBodies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		provider := "anthropic"
		if filepath.Ext(f[:len(f)-len(".json")]) == ".openai" {
			provider = "openai"
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			check(t, provider, data)
		})
	}
}

// TestImportedSessions converts every importer fixture and, when it is
// there, every file of the shared corpus, both ways.
func TestImportedSessions(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "importer", "testdata", "*.*"))
	raw := filepath.Join("..", "..", "..", "shared", "corpus", "raw")
	if _, err := os.Stat(raw); err == nil {
		_ = filepath.WalkDir(raw, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		})
	} else {
		t.Logf("corpus not found at %s; converting the importer fixtures only", raw)
	}
	for _, f := range files {
		s, err := importer.Load(context.Background(), f, importer.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		req := &llm.Request{Model: "m", MaxTokens: 1024, System: s.Conv.System, Tools: s.Conv.Tools, Messages: s.Conv.Messages}
		for provider, encode := range encoders {
			t.Run(filepath.Base(f)+"/"+provider, func(t *testing.T) {
				body, err := encode(req)
				if err != nil {
					t.Fatal(err)
				}
				check(t, provider, body)
			})
		}
	}
}
