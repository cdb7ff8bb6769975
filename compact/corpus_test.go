package compact

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/ctxkit/ctxkit/internal/corpus"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/importer"
)

// corpusFiles lists the recorded sessions, or skips when the corpus is not
// beside the module.
func corpusFiles(t *testing.T) []string { return corpus.Files(t) }

// Written-file detection for the test, deliberately separate from
// summarize.Artifacts: plain patterns over the recorded tool calls.
var (
	tHeredoc  = regexp.MustCompile(`cat\s+(?:<<-?\s*['"]?\w+['"]?\s*)?>\s*([\w./-]+)`)
	tRedirect = regexp.MustCompile(`(?:^|[;&|]\s*|\s)(?:echo|printf)\b[^\n>]*>>?\s*([\w-]*[./][\w./-]+)`)
	tSed      = regexp.MustCompile(`sed\s+-i\S*\s+(?:-e\s+)?(?:'[^']*'|"[^"]*")\s+([\w./-]+)`)
	tCreate   = regexp.MustCompile(`^create\s+(\S+)`)
	tOpen     = regexp.MustCompile(`^open\s+"?([^\s"]+)`)
	tEditCmd  = regexp.MustCompile(`^edit\s+\d+:\d+`)
	tSkill    = regexp.MustCompile(`(?:create_file|edit_file_by_replace|insert_content_at_line|append_file)\(\s*['"]([^'"]+)['"]`)
)

// writes maps the id of every tool call that wrote a file to the file.
func writes(c *conv.Conversation) map[string]string {
	out := make(map[string]string)
	open := ""
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type != conv.TypeToolUse {
				continue
			}
			var in map[string]any
			_ = json.Unmarshal(b.Input, &in)
			s := func(k string) string { v, _ := in[k].(string); return v }
			switch b.Name {
			case "Write", "Edit", "MultiEdit", "NotebookEdit":
				out[b.ToolUseID] = s("file_path")
			case "str_replace_editor":
				if cmd := s("command"); cmd == "create" || cmd == "str_replace" || cmd == "insert" {
					out[b.ToolUseID] = s("path")
				}
			case "create":
				open = s("filename")
				out[b.ToolUseID] = open
			case "open":
				open = s("path")
			case "edit", "insert":
				if open != "" {
					out[b.ToolUseID] = open
				}
			case "ipython":
				if mm := tSkill.FindStringSubmatch(s("code")); mm != nil {
					out[b.ToolUseID] = mm[1]
				}
			default:
				cmd := strings.TrimSpace(s("command"))
				if mm := tCreate.FindStringSubmatch(cmd); mm != nil {
					open = mm[1]
					out[b.ToolUseID] = open
				} else if mm := tOpen.FindStringSubmatch(cmd); mm != nil {
					open = mm[1]
				} else if tEditCmd.MatchString(cmd) && open != "" {
					out[b.ToolUseID] = open
				} else {
					for _, re := range []*regexp.Regexp{tHeredoc, tSed, tRedirect} {
						if mm := re.FindStringSubmatch(cmd); mm != nil && !strings.HasPrefix(mm[1], "/dev/") {
							out[b.ToolUseID] = mm[1]
							break
						}
					}
				}
			}
		}
	}
	return out
}

// artifactTrails is the text of the artifact-trail sections of every
// summary in c.
func artifactTrails(c *conv.Conversation) string {
	var sb strings.Builder
	for _, s := range summaries(c) {
		in := false
		for _, l := range strings.Split(s.Text, "\n") {
			if strings.HasPrefix(l, "## ") {
				in = strings.TrimPrefix(l, "## ") == "Artifact trail"
				continue
			}
			if in {
				sb.WriteString(l + "\n")
			}
		}
	}
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeText && strings.HasPrefix(b.Text, DropMarker) {
				sb.WriteString(b.Text + "\n")
			}
		}
	}
	return sb.String()
}

// TestCorpus replays every recorded session turn by turn, compacting before
// each request as a live engine would, into a 32,000- and a 16,000-token
// window with the extractive summarizer. Every request must fit the limit
// (conv.CheckWindow), the invariants must hold after every step, and every
// file written by a call that left the context must be in a summary's
// artifact trail or a truncation marker.
func TestCorpus(t *testing.T) {
	files := corpusFiles(t)
	sessions := make(map[string]*importer.Session)
	for _, f := range files {
		s, err := importer.Load(context.Background(), f, importer.Options{})
		if errors.Is(err, importer.ErrUnknownFormat) {
			// A format whose importer has not landed yet (Codex rollouts
			// until issue 13's importer is merged).
			t.Logf("%s: skipped: %v", filepath.Base(f), err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		sessions[f] = s
	}
	for _, mode := range []Mode{ModeRegion, ModeRound} {
		for _, window := range []int{32_000, 16_000} {
			compactions, verified := 0, 0
			for _, f := range files {
				name := filepath.Base(f)
				s := sessions[f]
				if s == nil {
					continue
				}
				written := writes(s.Conv)
				cv := &conv.Conversation{Tools: s.Conv.Tools}
				for _, b := range s.Conv.System {
					b = b.Clone()
					clearIDs(&b)
					cv.System = append(cv.System, b)
				}
				cv.Stamp(cv.System)
				cp := New(nil, Config{Window: window, MaxOutput: 8_192, Mode: mode})
				k := newKeeper()
				msgs := s.Conv.Messages
				failed := false
				appended := make(map[string]bool)
				for i, m := range msgs {
					// A live engine stamps ids as messages arrive.
					m.Blocks = append([]conv.Block(nil), m.Blocks...)
					for j := range m.Blocks {
						m.Blocks[j] = m.Blocks[j].Clone()
						clearIDs(&m.Blocks[j])
					}
					cv.Append(m)
					for _, b := range m.Blocks {
						if b.Type == conv.TypeToolUse {
							appended[b.ToolUseID] = true
						}
					}
					k.record(cv)
					if m.Role != conv.RoleUser || i+1 < len(msgs) && msgs[i+1].Role != conv.RoleAssistant {
						continue
					}
					res, err := cp.Before(context.Background(), cv, k)
					compactions += res.Compactions
					var stopped *StoppedError
					if err != nil && !errors.As(err, &stopped) {
						// A stopped compactor has turned model calls
						// off and still keeps the window; anything else
						// is a failure, the 16k stress run included.
						t.Errorf("%s (%s, %d): message %d: %v", name, mode, window, i, err)
						failed = true
						break
					}
					if vs := conv.Check(cv); len(vs) > 0 {
						t.Errorf("%s (%s, %d): message %d: %v", name, mode, window, i, vs)
						failed = true
						break
					}
					if err := cp.Fits(cv); err != nil {
						t.Errorf("%s (%s, %d): message %d: %v", name, mode, window, i, err)
						failed = true
						break
					}
					for _, fb := range res.Fallbacks {
						t.Errorf("%s (%s, %d): fallback %s→%s: %s", name, mode, window, fb.From, fb.To, fb.Reason)
					}
				}
				if failed {
					continue
				}
				present := cv.ToolUses()
				trail := artifactTrails(cv)
				for id, path := range written {
					if _, ok := present[id]; ok || path == "" || !appended[id] {
						continue
					}
					verified++
					if !strings.Contains(trail, path) {
						t.Errorf("%s (%s, %d): %s was written by a compacted call but is not in any artifact trail", name, mode, window, path)
					}
				}
			}
			t.Logf("mode %s, window %d: %d compactions over %d sessions; %d compacted file writes found in artifact trails", mode, window, compactions, len(files), verified)
			if verified == 0 {
				t.Errorf("mode %s, window %d: no compacted file write was checked", mode, window)
			}
			if window == 16_000 && compactions == 0 {
				t.Errorf("mode %s, window %d: no session was compacted; the test proves nothing", mode, window)
			}
		}
	}
}

func clearIDs(b *conv.Block) {
	b.ID = ""
	for i := range b.Content {
		clearIDs(&b.Content[i])
	}
}
