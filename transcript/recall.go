package transcript

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/toolresult"
)

// Recaller gives back a recorded block by id; *Store is one.
type Recaller interface {
	Recall(id string) (conv.Block, error)
}

// RecallText returns the original text of the block with id: a tool
// result's text, a tool call's name and input, the text of any other text
// block. With from or to set (1-based, inclusive; 0 means the first or the
// last line) it returns just those lines, each with its line ending, so the
// full range gives back the original bytes exactly.
func RecallText(r Recaller, id string, from, to int) (string, error) {
	b, err := r.Recall(id)
	if err != nil {
		return "", err
	}
	var text string
	switch b.Type {
	case conv.TypeImage:
		return "", fmt.Errorf("transcript: recall %s: an image has no text to give back", id)
	case conv.TypeRedactedThinking:
		return "", fmt.Errorf("transcript: recall %s: redacted thinking has no readable text", id)
	default:
		text = b.PlainText()
	}
	if from == 0 && to == 0 {
		return text, nil
	}
	return Lines(text, from, to)
}

// Lines returns lines from..to (1-based, inclusive; 0 means the first or
// the last line) of text, each with its line ending. A range past the end
// is cut at the end; a range that starts past the end is an error that says
// how many lines there are.
func Lines(text string, from, to int) (string, error) {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	n := len(lines)
	if from < 0 || to < 0 {
		return "", fmt.Errorf("transcript: line range %d:%d: lines count from 1", from, to)
	}
	if from == 0 {
		from = 1
	}
	if to == 0 || to > n {
		to = n
	}
	if from > n {
		return "", fmt.Errorf("transcript: line range starts at %d but the text has %d lines", from, n)
	}
	if from > to {
		return "", fmt.Errorf("transcript: line range %d:%d is empty", from, to)
	}
	return strings.Join(lines[from-1:to], ""), nil
}

// RecallInput is the input of the recall tool.
type RecallInput struct {
	ID   string `json:"id"`
	From int    `json:"from,omitempty"`
	To   int    `json:"to,omitempty"`
}

// RecallTool is the schema of the recall tool an agent offers the model,
// so it can read back a block that was compressed, cleared or summarized.
func RecallTool() conv.Tool {
	return conv.Tool{
		Name: toolresult.DefaultRecallTool,
		Description: "Read back the original content of an earlier tool result or message that was " +
			"compressed, cleared or summarized. Pass the recall id shown where the content was " +
			"cleared (for example b17) and optionally a line range. Prefer this over re-running a " +
			"tool: files may have changed since, and commands may not be safe to repeat. To read back " +
			"several, call it once for each id in the same reply: one round trip brings them all.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"recall id, for example b17"},` +
			`"from":{"type":"integer","minimum":1,"description":"first line to return (default 1)"},` +
			`"to":{"type":"integer","minimum":1,"description":"last line to return (default: the last line)"}},` +
			`"required":["id"],"additionalProperties":false}`),
	}
}

// RunRecall runs the recall tool: it decodes input and returns the
// recalled text, or an error the model can act on.
func RunRecall(r Recaller, input json.RawMessage) (string, error) {
	var in RecallInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "", fmt.Errorf("transcript: recall: bad input (want {\"id\": \"b17\", \"from\": 1, \"to\": 40}): %w", err)
	}
	if in.ID == "" {
		return "", fmt.Errorf("transcript: recall: no id given (want {\"id\": \"b17\"})")
	}
	return RecallText(r, strings.TrimSpace(in.ID), in.From, in.To)
}
