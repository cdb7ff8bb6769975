package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the recall tool's name. Claude Code shows an MCP server's
// tools as mcp__<server>__<tool>, so with the server added as "ctxkit" the
// proxy's placeholders name mcp__ctxkit__recall.
const ToolName = "recall"

// RecallInput is the recall tool's argument.
type RecallInput struct {
	ID string `json:"id" jsonschema:"the recall id from a placeholder ([cleared: … with id \"…\"]), a cut note or a recall index line (recall <id>: …)"`
}

// New returns an MCP server with the recall tool over st.
func New(st store.Store, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "ctxkit", Version: version}, nil)
	sdk.AddTool(s, &sdk.Tool{
		Name: ToolName,
		Description: "Get back the full original of a tool result or text that ctxkit cleared, cut or summarized away to save context. " +
			"Pass the recall id shown in its placeholder ([cleared: … with id \"…\"]), cut note or recall index line (recall <id>: …).",
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in RecallInput) (*sdk.CallToolResult, any, error) {
		text, err := Recall(ctx, st, in.ID)
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
	})
	return s
}

// Recall returns the original stored under id, with a header line naming
// the tool and its argument.
func Recall(ctx context.Context, st store.Store, id string) (string, error) {
	id = strings.Trim(strings.TrimSpace(id), `"`)
	if id == "" {
		return "", errors.New("recall needs the id from the placeholder, e.g. {\"id\": \"3fa9c2d1e0b4a7f6\"}")
	}
	o, err := st.Original(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("no cleared block has recall id %q in this store (is ctxkit mcp reading the same --store as ctxkit serve?)", id)
	}
	if err != nil {
		return "", fmt.Errorf("reading the store: %w", err)
	}
	head := "[recalled " + o.Tool
	if o.Label != "" {
		head += fmt.Sprintf(" %q", o.Label)
	}
	return head + "]\n" + string(o.Content), nil
}
