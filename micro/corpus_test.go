package micro

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/toolresult"
)

// TestCorpusInputsKeepTheirFiles: on every recorded session, every tool
// call whose input rung 1 compresses (the Clearer's input entries)
// still names every file it wrote, edited or created (summarize.CallOps
// sees the same paths), so the artifact trail survives what the agent
// wrote being compressed.
func TestCorpusInputsKeepTheirFiles(t *testing.T) {
	compressed, skipped := 0, 0
	for _, f := range corpus.Files(t) {
		s, err := importer.Load(context.Background(), f, importer.Options{})
		if errors.Is(err, importer.ErrUnknownFormat) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		for _, m := range s.Conv.Messages {
			for _, b := range m.Blocks {
				if b.Type != conv.TypeToolUse {
					continue
				}
				in, ok := toolresult.CompressInput(b.Input, b.ID, toolresult.InputLimits{})
				if !ok {
					continue
				}
				if !keepsFiles(&b, in) {
					skipped++
					continue
				}
				compressed++
				nb := b.Clone()
				nb.Input = in
				got := map[string]bool{}
				for _, op := range summarize.CallOps(&nb, nil) {
					got[op.Path] = true
				}
				for _, op := range summarize.CallOps(&b, nil) {
					if op.Writes() && !got[op.Path] {
						t.Errorf("%s: %s call %s: %s %s is gone from the compressed input", filepath.Base(f), b.Name, b.ToolUseID, op.Op, op.Path)
					}
				}
			}
		}
	}
	t.Logf("%d inputs compressed, %d kept whole to keep their files in the trail", compressed, skipped)
	if compressed == 0 {
		t.Error("no input was compressed: the test proves nothing")
	}
}
