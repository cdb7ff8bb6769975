package assemble

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
)

// Input is what the user message of one turn is built from.
type Input struct {
	// Results answer the tool calls of the last assistant message, all of
	// them, in any order.
	Results []conv.Block
	// Text is the user's words; empty when the agent goes on by itself
	// after running tools.
	Text string
}

// Message builds the user message of a turn (seed 001 §2.2): the tool
// results first, then the conversation's pending injections and the
// reminders preprocessing produced (@file mentions), each wrapped in the
// tag of its source, then the user's words — saved to a file and replaced
// by a reference when too large. It returns notes for the user saying what
// preprocessing did. c is not changed; see Turn.
func (b *Builder) Message(ctx context.Context, c *conv.Conversation, in Input) (conv.Message, []string, error) {
	if err := checkResults(c, in.Results); err != nil {
		return conv.Message{}, nil, err
	}
	var notes []string
	text := in.Text
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
		notes = append(notes, "the input was not valid UTF-8; invalid bytes were replaced with U+FFFD")
	}
	if strings.TrimSpace(text) == "" {
		text = ""
	}

	var injections []conv.Block
	for _, p := range c.Pending {
		if !p.Empty() {
			injections = append(injections, p.Clone())
		}
	}
	if text != "" {
		ms, err := resolveMentions(b.cfg.Workspace, b.cfg.Dir, Mentions(text), b.cfg.MaxMentions)
		if err != nil {
			return conv.Message{}, nil, err
		}
		inline(b.cfg.Workspace, ms, b.cfg.MentionBytes)
		if r, n := mentionReminder(ms, b.cfg.MaxMentions); r != "" {
			injections = append(injections, conv.NewText(conv.SourceReminder, r))
			notes = append(notes, n...)
		}
		if len(text) > b.cfg.MaxInputBytes {
			ref, err := b.spill(ctx, text)
			if err != nil {
				return conv.Message{}, nil, err
			}
			notes = append(notes, fmt.Sprintf("the input (%d bytes) was saved to a file and replaced by a reference", len(text)))
			text = ref
		}
	}

	m := conv.Message{Role: conv.RoleUser}
	for _, r := range in.Results {
		m.Blocks = append(m.Blocks, r.Clone())
	}
	for _, inj := range injections {
		m.Blocks = append(m.Blocks, wrapBlock(inj, b.cfg.Tags))
	}
	if text != "" {
		m.Blocks = append(m.Blocks, conv.NewText(conv.SourceUser, text))
	}
	if len(m.Blocks) == 0 {
		return conv.Message{}, nil, ErrEmpty
	}
	return m, notes, nil
}

// Turn builds the user message of a turn with Message, appends it to c and
// clears c.Pending, whose injections it now holds. On error c is
// unchanged.
func (b *Builder) Turn(ctx context.Context, c *conv.Conversation, in Input) ([]string, error) {
	m, notes, err := b.Message(ctx, c, in)
	if err != nil {
		return notes, err
	}
	c.Append(m)
	c.Pending = nil
	return notes, nil
}

// checkResults makes sure results answer exactly the open calls of c's
// last message, so a turn can never make a conversation the provider
// rejects.
func checkResults(c *conv.Conversation, results []conv.Block) error {
	open := make(map[string]bool)
	var order []string
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == conv.RoleAssistant {
		for _, bl := range c.Messages[n-1].Blocks {
			if bl.Type == conv.TypeToolUse {
				open[bl.ToolUseID] = true
				order = append(order, bl.ToolUseID)
			}
		}
	} else if n > 0 {
		return fmt.Errorf("%w: the conversation already ends with a user message", ErrInvalid)
	}
	got := make(map[string]bool)
	for _, r := range results {
		switch {
		case r.Type != conv.TypeToolResult:
			return fmt.Errorf("%w: a %s block among the results", ErrResults, r.Type)
		case !open[r.ToolUseID]:
			return fmt.Errorf("%w: result for %q answers no open call", ErrResults, r.ToolUseID)
		case got[r.ToolUseID]:
			return fmt.Errorf("%w: two results for %q", ErrResults, r.ToolUseID)
		}
		got[r.ToolUseID] = true
	}
	for _, id := range order {
		if !got[id] {
			return fmt.Errorf("%w: call %q has no result", ErrResults, id)
		}
	}
	return nil
}

// previewLines and previewBytes bound the head of a spilled input shown in
// its reference, so the model knows what the file holds before reading it.
const (
	previewLines = 20
	previewBytes = 2000
)

// spill saves an oversize input and returns the text that replaces it
// (seed 001 §7.1). The file is named for its content, so the same paste
// gives the same name and the same request bytes.
func (b *Builder) spill(ctx context.Context, text string) (string, error) {
	if b.cfg.Spiller == nil {
		return "", fmt.Errorf("%w: %d bytes (the limit is %d) and no session folder to save it in", ErrOversize, len(text), b.cfg.MaxInputBytes)
	}
	sum := sha256.Sum256([]byte(text))
	name := "input-" + hex.EncodeToString(sum[:6]) + ".txt"
	path, err := b.cfg.Spiller.Spill(ctx, name, []byte(text))
	if err != nil {
		return "", fmt.Errorf("assemble: saving an oversize input: %w", err)
	}
	lines := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		lines++
	}
	head := text
	if i := nthIndex(head, '\n', previewLines); i >= 0 {
		head = head[:i]
	}
	head = cut(head, previewBytes)
	return fmt.Sprintf("[The user's message was too large to include (%d bytes, %d lines). It was saved to %s; read it with the Read tool, in parts (offset and limit). It begins:\n%s\n…]",
		len(text), lines, showPath(path), head), nil
}

// nthIndex returns the index of the n-th c in s, or -1.
func nthIndex(s string, c byte, n int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n--
			if n == 0 {
				return i
			}
		}
	}
	return -1
}
