package bench

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Gemini CLI's tool-output masking (packages/core/src/context/
// toolOutputMaskingService.ts, run before every request since 2026-02, on
// by default): scanning back from the entry before the newest, the newest
// maskProtect tokens of tool output stay whole; once the older outputs
// come to maskMinPrunable tokens, every one of them is written to a file
// and replaced by a preview (a shell output's first and last 10 lines,
// another's first and last 250 characters) and the file's path. The model
// can read the file back, so the bench counts a masked output as
// recallable by that path, with the round trip billed, as it does
// ctxkit's recall ids.
const (
	maskProtect     = 50_000
	maskMinPrunable = 30_000
	maskPreviewLine = 10
	maskPreviewChar = 250
	maskedDir       = "tool-outputs/"
)

// masker is the masking state of one Gemini CLI session: the recall ids its
// masked outputs name, each mapped to the recorded result it stood for.
type masker struct {
	ids map[string]string
}

// mask masks what Gemini CLI would before a request whose own new
// messages are the last pending of c's messages, and returns how many
// outputs it masked.
func (m *masker) mask(c *conv.Conversation, counter conv.Counter, pending int) int {
	type part struct {
		b      *conv.Block
		tokens int
	}
	var prunable []part
	seen, total := 0, 0
	// The request's own messages are not history yet, and the newest
	// history entry is protected.
	for i := len(c.Messages) - pending - 2; i >= 0; i-- {
		msg := &c.Messages[i]
		for j := len(msg.Blocks) - 1; j >= 0; j-- {
			b := &msg.Blocks[j]
			if b.Type != conv.TypeToolResult || b.Meta.Rung != conv.RungFull {
				continue
			}
			n := conv.BlockTokens(b, counter) // counted once, cached on the block
			if seen <= maskProtect {
				seen += n
				if seen <= maskProtect {
					continue
				}
			}
			total += n
			prunable = append(prunable, part{b, n})
		}
	}
	if total < maskMinPrunable {
		return 0
	}
	calls := make(map[string]toolresult.Call) // a shell output's preview is its lines
	for i := range c.Messages {
		for j := range c.Messages[i].Blocks {
			if b := &c.Messages[i].Blocks[j]; b.Type == conv.TypeToolUse {
				calls[b.ToolUseID] = toolresult.Classify(b.Name, b.Input)
			}
		}
	}
	masked := 0
	for _, p := range prunable {
		text := p.b.ResultText()
		var preview string
		if calls[p.b.ToolUseID].Kind == toolresult.KindBash {
			preview = previewLines(text)
		} else {
			preview = previewChars(text)
		}
		id := fmt.Sprintf("%s_%s", strings.ToLower(p.b.Name), p.b.ID)
		snippet := "[tool output masked; preview:]\n" + preview + "\n[whole output: " + maskedDir + id + ".txt]"
		if counter.Count(snippet) >= p.tokens {
			continue
		}
		if m.ids == nil {
			m.ids = make(map[string]string)
		}
		m.ids[id] = p.b.ID
		placeholder(p.b, snippet)
		masked++
	}
	return masked
}

func previewLines(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= 2*maskPreviewLine {
		return s
	}
	return strings.Join(lines[:maskPreviewLine], "\n") + fmt.Sprintf("\n… %d lines …\n", len(lines)-2*maskPreviewLine) + strings.Join(lines[len(lines)-maskPreviewLine:], "\n")
}

func previewChars(s string) string {
	return cutMiddle(s, maskPreviewChar, "\n…\n")
}

// cutMiddle keeps the first and the last keep bytes of s (at rune
// boundaries) with sep between them; s itself when it is no longer.
func cutMiddle(s string, keep int, sep string) string {
	if len(s) <= 2*keep {
		return s
	}
	head, tail := keep, len(s)-keep
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + sep + s[tail:]
}
