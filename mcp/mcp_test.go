package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/mcp"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// tenants opens a store and returns the views of two tenants.
func tenants(t *testing.T) (a, b store.Store) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	secret, err := st.Secret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, _ = store.Scope(st, store.Tenant(secret, "credential", "sk-a"))
	b, _ = store.Scope(st, store.Tenant(secret, "credential", "sk-b"))
	return a, b
}

func TestRecallOverMCP(t *testing.T) {
	ctx := context.Background()
	st, _ := tenants(t)
	if err := st.PutOriginals(ctx, []store.Original{{Hash: "3fa9c2d1e0b4a7f6", Session: "cc:s1", Tool: "Bash", Label: "go test ./...", Content: []byte("FAIL: TestX\nexit 1")}}); err != nil {
		t.Fatal(err)
	}
	ct, st2 := sdk.NewInMemoryTransports()
	srv := mcp.New(mcp.Scope{Store: st}, "test")
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

// Row 8 of issue 21: another tenant's id, or another session's when the
// server is scoped to one, is refused like an id that does not exist.
func TestRecallRefusesForeignIDs(t *testing.T) {
	ctx := context.Background()
	a, b := tenants(t)
	if err := a.PutOriginals(ctx, []store.Original{{Hash: "aaaa", Session: "cc:s1", Tool: "Read", Content: []byte("A's file")}}); err != nil {
		t.Fatal(err)
	}
	if err := b.PutOriginals(ctx, []store.Original{{Hash: "bbbb", Session: "cc:s9", Tool: "Read", Content: []byte("B's file")}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		sc   mcp.Scope
		id   string
		ok   bool
	}{
		{"own id", mcp.Scope{Store: a}, "aaaa", true},
		{"own id, own session", mcp.Scope{Store: a, Session: "s1"}, "aaaa", true},
		{"own id, own session key", mcp.Scope{Store: a, Session: "cc:s1"}, "aaaa", true},
		{"other tenant's id", mcp.Scope{Store: a}, "bbbb", false},
		{"other tenant's id, its session", mcp.Scope{Store: a, Session: "s9"}, "bbbb", false},
		{"own id, other session", mcp.Scope{Store: a, Session: "s2"}, "aaaa", false},
	} {
		text, err := mcp.Recall(ctx, tt.sc, mcp.RecallInput{ID: tt.id})
		if tt.ok != (err == nil) || !tt.ok && !errors.Is(err, mcp.ErrForeign) {
			t.Errorf("%s: %q, %v", tt.name, text, err)
		}
		if !tt.ok && strings.Contains(text+fmt.Sprint(err), "file") {
			t.Errorf("%s: the refusal shows content: %v", tt.name, err)
		}
	}
}

// A large original comes back whole over several pages, each under
// PageBytes, each naming its lines, the total and the next offset.
func TestRecallPages(t *testing.T) {
	ctx := context.Background()
	a, _ := tenants(t)
	var sb strings.Builder
	for i := 1; i <= 1200; i++ {
		fmt.Fprintf(&sb, "line %04d: func helper%d(x int) int { return x*%d }\n", i, i, i)
	}
	orig := sb.String() // ~72 kB
	if err := a.PutOriginals(ctx, []store.Original{{Hash: "big", Tool: "Read", Label: "/repo/big.go", Content: []byte(orig)}}); err != nil {
		t.Fatal(err)
	}
	sc := mcp.Scope{Store: a}
	var got strings.Builder
	offset, pages := 0, 0
	for {
		text, err := mcp.Recall(ctx, sc, mcp.RecallInput{ID: "big", Offset: offset})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(text) > mcp.PageBytes+200 {
			t.Fatalf("page %d: %d bytes, over a page", pages, len(text))
		}
		head, rest, _ := strings.Cut(text, "\n")
		if !strings.HasPrefix(head, `[recalled Read "/repo/big.go": lines `) || !strings.HasSuffix(head, " of 1200]") {
			t.Fatalf("page %d header %q", pages, head)
		}
		body, next, more := strings.Cut(rest, "[")
		got.WriteString(body)
		if !more {
			break
		}
		if _, err := fmt.Sscanf(next[strings.Index(next, `"offset": `):], `"offset": %d}]`, &offset); err != nil {
			t.Fatalf("page %d: no next offset in %q", pages, next)
		}
	}
	if got.String() != orig {
		t.Fatalf("the pages put together are %d bytes, not the %d-byte original", got.Len(), len(orig))
	}
	if pages < 4 {
		t.Fatalf("%d pages for %d bytes", pages, len(orig))
	}
	text, err := mcp.Recall(ctx, sc, mcp.RecallInput{ID: "big", Offset: 10, Limit: 2})
	if err != nil || !strings.Contains(text, "lines 10-11 of 1200]\nline 0010") || !strings.Contains(text, `"offset": 12}`) {
		t.Fatalf("offset 10 limit 2: %q %v", text, err)
	}
	if _, err := mcp.Recall(ctx, sc, mcp.RecallInput{ID: "big", Offset: 5000}); err == nil {
		t.Fatal("an offset past the end was accepted")
	}
}

// TestRecallShortIDs: ctxkit serve stores an original under its session
// and its short recall id (store.OriginalKey), unique within the session
// only: the id is found in the server's session, or in the tenant's
// sessions when the server names none; two sessions' same id each find
// their own with a session; an id handed out before ids were short
// (stored under the id alone) still resolves.
func TestRecallShortIDs(t *testing.T) {
	ctx := context.Background()
	a, _ := tenants(t)
	for _, s := range []string{"cc:s1", "cc:s2"} {
		if _, err := a.Commit(ctx, store.Session{ID: s}, 0, []store.Decision{{Kind: store.KindClear, Hashes: []string{"3fa9c2"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PutOriginals(ctx, []store.Original{
		{Hash: store.OriginalKey("cc:s1", "3fa9c2"), Session: "cc:s1", Tool: "Bash", Content: []byte("s1's log")},
		{Hash: store.OriginalKey("cc:s2", "3fa9c2"), Session: "cc:s2", Tool: "Bash", Content: []byte("s2's log")},
		{Hash: store.OriginalKey("cc:s2", "77e0b1"), Session: "cc:s2", Tool: "Read", Content: []byte("s2's file")},
		{Hash: "0123456789abcdef", Session: "cc:s1", Tool: "Read", Content: []byte("before")},
		// s1's sub-agent handed out 3fa9c2 too, for another result.
		{Hash: store.CollisionKey(store.OriginalKey("cc:s1", "3fa9c2"), 2), Session: "cc:s1", Tool: "Grep", Label: "TODO", Content: []byte("the sub-agent's matches\n")},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		session, id, want string
	}{
		{"s1", "3fa9c2", "[this id names 2 results: conversations of this session gave it out for different contents; each follows]\n[1 of 2: Bash \"\"]\ns1's log\n[2 of 2: Grep \"TODO\"]\nthe sub-agent's matches\n"},
		{"cc:s2", "3fa9c2", "s2's log"},
		{"", "77e0b1", "s2's file"},
		{"", "0123456789abcdef", "before"},
		{"s1", "0123456789abcdef", "before"},
		{"s1", "77e0b1", ""},
		{"s2", "0123456789abcdef", ""},
		{"", "77e0b2", ""},
	} {
		o, err := mcp.Original(ctx, mcp.Scope{Store: a, Session: tt.session}, tt.id)
		if tt.want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("session %q, id %s: %q, %v; want not found", tt.session, tt.id, o.Content, err)
			}
			continue
		}
		if err != nil || string(o.Content) != tt.want {
			t.Errorf("session %q, id %s: %q, %v; want %q", tt.session, tt.id, o.Content, err, tt.want)
		}
	}
}
