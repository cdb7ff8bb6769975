package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Claude Code (2.1 and later) saves a tool output too large to send under
// <session>/tool-results/<tool_use_id>.txt and sends the model a preview
// inside <persisted-output> naming the saved file.
var persistedRE = regexp.MustCompile(`(?s)\A\s*<persisted-output>.*?Full output saved to: ([^\n]+?)\s*\n`)

// PersistedOutputs counts the large tool outputs Claude Code saved beside
// the session instead of sending them.
type PersistedOutputs struct {
	// Found are the saved outputs present beside the session file; Missing
	// those that are not (the folder was not copied with the session).
	Found, Missing int
	// ReadBack are those put back in place of the preview
	// (Options.FullOutputs).
	ReadBack int
}

// persisted handles a tool result that is Claude Code's preview of a saved
// output. The preview is what the model saw, so it stays unless
// Options.FullOutputs asks for the saved output: then the file is read back
// when it is beside the session, and a marker says so when it is not.
func (cc *ccImport) persisted(b *conv.Block) {
	m := persistedRE.FindStringSubmatch(b.ResultText())
	if m == nil {
		return
	}
	name := filepath.Base(strings.ReplaceAll(m[1], `\`, "/"))
	var data []byte
	var err error
	for _, dir := range ccSessionDirs(cc.path, cc.sessionID) {
		if data, err = os.ReadFile(filepath.Join(dir, "tool-results", name)); err == nil {
			break
		}
	}
	p := &cc.s.Persisted
	switch {
	case err == nil:
		p.Found++
		if cc.fullOutputs {
			b.SetText(string(data), conv.RungFull)
			p.ReadBack++
		}
	default:
		p.Missing++
		if cc.fullOutputs {
			b.SetText(b.ResultText()+fmt.Sprintf("\n[ctxkit: the full output, tool-results/%s, is not beside the session file; the model saw the preview above]", name), conv.RungFull)
		}
	}
}

// ccSessionDirs are the folders where a session's companions (tool-results,
// subagents) can be: <dir>/<session id>/ beside the log, <dir>/<name>/ or
// <dir>/<name>.subagents/ for a copied session, and for a sub-agent log
// (<session>/subagents/agent-*.jsonl) its session's folder.
func ccSessionDirs(path, sessionID string) []string {
	dir := filepath.Dir(path)
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var dirs []string
	if sessionID != "" {
		dirs = append(dirs, filepath.Join(dir, sessionID))
	}
	dirs = append(dirs, filepath.Join(dir, stem), filepath.Join(dir, stem+".subagents"))
	if base := filepath.Base(dir); base == "subagents" || strings.HasSuffix(base, ".subagents") {
		dirs = append(dirs, filepath.Dir(dir))
	}
	return slices.Compact(dirs)
}

// ccSubagents lists the sub-agent logs stored beside a session:
// <session>/subagents/agent-*.jsonl (Claude Code 2.x), or a copy's
// <name>.subagents/agent-*.jsonl.
func ccSubagents(path string) []string {
	dir := filepath.Dir(path)
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var out []string
	for _, d := range []string{filepath.Join(dir, stem, "subagents"), filepath.Join(dir, stem+".subagents")} {
		ms, _ := filepath.Glob(filepath.Join(d, "agent-*.jsonl"))
		out = append(out, ms...)
	}
	slices.Sort(out)
	return out
}
