package mcp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/mcp"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRecallOverMCP(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutOriginals(ctx, []store.Original{{Hash: "3fa9c2d1e0b4a7f6", Tool: "Bash", Label: "go test ./...", Content: []byte("FAIL: TestX\nexit 1")}}); err != nil {
		t.Fatal(err)
	}
	ct, st2 := sdk.NewInMemoryTransports()
	srv := mcp.New(st, "test")
	ss, err := srv.Connect(ctx, st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "recall" {
		t.Fatalf("tools = %+v, %v", tools, err)
	}
	tests := []struct {
		id      string
		isErr   bool
		contain string
	}{
		{"3fa9c2d1e0b4a7f6", false, "FAIL: TestX"},
		{`"3fa9c2d1e0b4a7f6"`, false, `[recalled Bash "go test ./..."]`},
		{"0000000000000000", true, "no cleared block"},
		{"", true, "needs the id"},
	}
	for _, tt := range tests {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "recall", Arguments: map[string]any{"id": tt.id}})
		if err != nil {
			t.Fatalf("CallTool(%q): %v", tt.id, err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if res.IsError != tt.isErr || !strings.Contains(text, tt.contain) {
			t.Errorf("recall(%q) = %v %q; want error=%v containing %q", tt.id, res.IsError, text, tt.isErr, tt.contain)
		}
	}
}
