package importer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// TestImportedImages: the Gemini CLI's inline data and opencode's image
// files become image blocks through wire's one reading of an image; what
// it refuses is skipped (Gemini) or named as a file (opencode).
func TestImportedImages(t *testing.T) {
	const png = `{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`
	gemini := func(t *testing.T) string {
		return write(t, "session-2026-03-01T09-00-5f2a9c1d.jsonl", []byte(`{"sessionId":"5f2a9c1d-0000-4000-8000-000000000001","projectHash":"9b2c6f7e","startTime":"2026-03-01T09:00:00.000Z","lastUpdated":"2026-03-01T09:00:00.000Z","kind":"main"}
{"id":"m1","timestamp":"2026-03-01T09:00:05.000Z","type":"user","content":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},{"inlineData":{"mimeType":"image/png"}}]}
{"id":"m2","timestamp":"2026-03-01T09:00:08.000Z","type":"gemini","content":"A PNG.","model":"gemini-2.5-pro"}
`))
	}
	opencode := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "opencode-storage"))); err != nil {
			t.Fatal(err)
		}
		for name, part := range map[string]string{
			"prt_j1a.json": `{"id":"prt_j1a","sessionID":"ses_json","messageID":"msg_j1","type":"file","mime":"image/png","filename":"a.png","url":"data:image/png;base64,iVBORw0KGgo="}`,
			"prt_j1b.json": `{"id":"prt_j1b","sessionID":"ses_json","messageID":"msg_j1","type":"file","mime":"image/png","filename":"b.png","url":"data:image/png,not-base64"}`,
		} {
			if err := os.WriteFile(filepath.Join(dir, "part", "msg_j1", name), []byte(part), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "session", "prj_1", "ses_json.json")
	}
	tests := []struct {
		name    string
		path    func(*testing.T) string
		want    []string // the first message's blocks: text, or an image's source
		skipped string   // what Conv.Skipped counts once
	}{
		{"gemini", gemini, []string{"What is this?", png}, "inline data without a media type or data"},
		{"opencode", opencode, []string{"List the files.", png, "[file b.png (image/png)]"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustLoad(t, tt.path(t), Options{})
			var got []string
			for _, b := range s.Conv.Messages[0].Blocks {
				switch b.Type {
				case conv.TypeImage:
					got = append(got, string(b.ImageSource))
				default:
					got = append(got, b.Text)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("first message = %q, want %q", got, tt.want)
			}
			if tt.skipped != "" && s.Conv.Skipped[tt.skipped] != 1 {
				t.Errorf("skipped %v, want %q once", s.Conv.Skipped, tt.skipped)
			}
		})
	}
}
