package compact

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/conv"
)

// ToolName is the name of the compact tool.
const ToolName = "compact"

// Tool is the schema of the compact tool the model may call (seed 003
// layer 3), with an optional focus.
func Tool() conv.Tool {
	return conv.Tool{
		Name:        ToolName,
		Description: "Compact the conversation: earlier turns are replaced by a structured summary (task, user requirements, progress and next action, decisions, files changed, errors) and the originals stay retrievable with recall. Use it when the context is long or cluttered with output you no longer need, ideally between steps of a task. The work continues after it; it does not end the task.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"focus":{"type":"string","description":"What the summary should preserve in most detail, e.g. \"the failing migration test and the schema decisions\"."}},"additionalProperties":false}`),
	}
}

// ToolResult is the result the agent records for a compact call, before
// the compaction runs: the compaction happens after the turn's other tool
// results are appended.
const ToolResult = "Compaction scheduled: it runs once this turn's tool results are recorded. The earlier turns will be replaced by a summary; continue the task from it."

// RunTool carries out a compact tool call. The agent runs the turn's
// other tools, appends the user message with every result (the compact
// call's result being ToolResult), then calls RunTool with the call's
// input, and then sends the next request as usual: the loop goes on from
// the summary, it does not stop or wait for the user.
func (c *Ladder) RunTool(ctx context.Context, cv *conv.Conversation, k Keeper, input json.RawMessage) (Result, error) {
	var in struct {
		Focus string `json:"focus"`
	}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return Result{Trigger: TriggerTool}, fmt.Errorf("compact: tool input: %w", err)
		}
	}
	return c.manual(ctx, cv, k, TriggerTool, in.Focus)
}
