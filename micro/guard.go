package micro

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/textfmt"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Guard is the oversize guard: when b, a rung-0 tool result, is larger
// than the configured limit, it writes the whole text to a file through s
// (which may be nil: then the recall id alone leads back to it) and
// returns the block the model sees instead — head and tail, the path and
// the recall id — with true. Otherwise it returns b unchanged and false.
// The caller keeps the original durable before using the new block, as
// Step does for every new result; Guard itself changes nothing but the
// file. The tool is told by b.Name.
func (m *Clearer) Guard(ctx context.Context, b *conv.Block, s Spiller) (conv.Block, bool, error) {
	return m.guard(ctx, b, nil, s)
}

func (m *Clearer) guard(ctx context.Context, b *conv.Block, call *conv.Block, s Spiller) (conv.Block, bool, error) {
	if m.cfg.GuardTokens < 0 || b.Type != conv.TypeToolResult || b.Meta.Rung != conv.RungFull || b.Meta.Pinned {
		return *b, false, nil
	}
	n := conv.BlockTokens(b, m.cfg.Counter)
	if n <= m.cfg.GuardTokens {
		return *b, false, nil
	}
	text := b.ResultText()
	var c toolresult.Call
	if call != nil {
		c = toolresult.Classify(call.Name, call.Input)
	} else {
		c = toolresult.Classify(b.Name, nil)
	}
	// Keep about GuardPreview tokens (at most half the limit), measured in
	// this text's own bytes per token; files and listings are read from
	// the top, command output from the bottom.
	preview := min(m.cfg.GuardPreview, m.cfg.GuardTokens/2)
	budget := len(text) * preview / max(n, 1)
	headShare := 0.2
	switch c.Kind {
	case toolresult.KindRead, toolresult.KindLS, toolresult.KindGrep:
		headShare = 0.8
	}
	hb := int(float64(budget) * headShare)
	head, tail, lines := headTail(text, hb, budget-hb)
	if len(head)+len(tail)+300 >= len(text) {
		return *b, false, nil // too small to be worth a file
	}
	where := ""
	if s != nil {
		name := spillName(b.ID, c.Tool)
		path, err := s.Spill(ctx, name, []byte(text))
		if err != nil {
			return *b, false, fmt.Errorf("micro: guard %s: %w", b.ID, err)
		}
		where = "the whole output is in " + path + "; "
	}
	shown := lineCount(head) + lineCount(tail)
	var sb strings.Builder
	sb.WriteString(head)
	fmt.Fprintf(&sb, "\n[… output too large for the context (%s tokens, %s lines); %s%s lines not shown; %s]\n",
		textfmt.Thousands(n), textfmt.Thousands(lines), where, textfmt.Thousands(max(lines-shown, 0)), toolresult.Recall(b.ID, m.cfg.RecallTool))
	sb.WriteString(tail)
	nb := b.Clone()
	nb.SetText(sb.String(), conv.RungCompressed)
	nb.Structured = nil
	return nb, true, nil
}

// headTail returns up to hb bytes from the start and tb bytes from the end
// of text, cut at line ends where lines allow and at rune boundaries where
// one line is longer than the budget, and the text's line count.
func headTail(text string, hb, tb int) (head, tail string, lines int) {
	lines = lineCount(text)
	if hb+tb >= len(text) {
		return text, "", lines
	}
	head = text[:hb]
	if i := strings.LastIndexByte(head, '\n'); i > hb/2 {
		head = head[:i]
	}
	for len(head) > 0 {
		if r, size := utf8.DecodeLastRuneInString(head); r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
	}
	tail = text[len(text)-tb:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < tb/2 {
		tail = tail[i+1:]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return head, tail, lines
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// spillName is the file name of a spilled result: its block id and tool.
func spillName(id, tool string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(tool) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			sb.WriteRune(r)
		}
	}
	if sb.Len() == 0 {
		return id + ".txt"
	}
	return id + "-" + sb.String() + ".txt"
}
