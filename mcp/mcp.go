package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/toolresult"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the recall tool's name. Claude Code shows an MCP server's
// tools as mcp__<server>__<tool>, so with the server added as "ctxkit" the
// proxy's placeholders name mcp__ctxkit__recall.
const ToolName = toolresult.DefaultRecallTool

// PageBytes is the most text one recall answer carries: a page well under
// the MCP output limits of clients (Claude Code keeps a large tool output
// out of the context and shows the model a short preview instead), so a
// large original reaches the model whole, a page per call.
const PageBytes = 16 << 10

// RecallInput is the recall tool's argument.
type RecallInput struct {
	ID     string `json:"id" jsonschema:"the recall id from a placeholder ([cleared: … with id \"…\"]), a cut note or a recall index line (recall <id>: …)"`
	Offset int    `json:"offset,omitempty" jsonschema:"the line to start from (1 is the first; default 1); a long original comes back in pages, each saying where the next starts"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the most lines to return (default: as many as fit one page)"`
}

// Scope is what a server recalls from: a tenant's view of the store
// (store.Scope) and, if not empty, one session of it (the proxy's session
// key, such as cc:<Claude Code session id>).
type Scope struct {
	Store   store.Store
	Session string
}

// New returns an MCP server with the recall tool over sc.
func New(sc Scope, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "ctxkit", Version: version}, nil)
	sdk.AddTool(s, &sdk.Tool{
		Name: ToolName,
		Description: "Get back the full original of a tool result or text that ctxkit cleared, cut or summarized away to save context. " +
			"Pass the recall id shown in its placeholder ([cleared: … with id \"…\"]), cut note or recall index line (recall <id>: …). " +
			"A long original comes back in pages: each answer says its lines and the total, and the offset to pass for the next page. " +
			"To get several back, call it once for each id in the same reply: one round trip brings them all.",
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in RecallInput) (*sdk.CallToolResult, any, error) {
		text, err := Recall(ctx, sc, in)
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
	})
	return s
}

// ErrForeign: the id names an original of another tenant or session, or
// none at all (the two are not told apart).
var ErrForeign = errors.New("no cleared block has this recall id here")

// Recall returns one page of the original stored under in.ID: a header
// line naming the tool, its argument and the page's lines of the total,
// the lines, and, when more follow, where the next page starts.
func Recall(ctx context.Context, sc Scope, in RecallInput) (string, error) {
	id := strings.Trim(strings.TrimSpace(in.ID), `"`)
	if id == "" {
		return "", errors.New("recall needs the id from the placeholder, e.g. {\"id\": \"3fa9c2\"}")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "", fmt.Errorf("offset %d, limit %d: both must be positive (offset 1 is the first line)", in.Offset, in.Limit)
	}
	o, err := Original(ctx, sc, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: %q (ctxkit mcp recalls only what ctxkit serve cleared for the same API key, from the same --store)", ErrForeign, id)
	}
	if err != nil {
		return "", fmt.Errorf("reading the store: %w", err)
	}
	lines := strings.SplitAfter(string(o.Content), "\n")
	if n := len(lines); n > 1 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	total := len(lines)
	first := max(in.Offset, 1)
	if first > total && total > 0 {
		return "", fmt.Errorf("offset %d is past the end: the original has %d lines", first, total)
	}
	var page strings.Builder
	last := first - 1
	for i := first - 1; i < total; i++ {
		if in.Limit > 0 && i-(first-1) >= in.Limit {
			break
		}
		if page.Len() > 0 && page.Len()+len(lines[i]) > PageBytes {
			break
		}
		page.WriteString(lines[i])
		last = i + 1
	}
	head := "[recalled " + o.Tool
	if o.Label != "" {
		head += fmt.Sprintf(" %q", o.Label)
	}
	if first == 1 && last == total {
		return head + "]\n" + page.String(), nil
	}
	out := fmt.Sprintf("%s: lines %d-%d of %d]\n%s", head, first, last, total, page.String())
	if last < total {
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += fmt.Sprintf("[%d more lines: call recall with {\"id\": %q, \"offset\": %d}]", total-last, id, last+1)
	}
	return out, nil
}

// recentSessions is how many of the tenant's most recently updated
// sessions Original looks in for an id when the server is not limited to
// one session.
const recentSessions = 50

// Original returns the original recall id names in sc, or an error
// wrapping store.ErrNotFound. ctxkit serve stores an original under its
// session and its id (store.OriginalKey: ids are short, unique within a
// session), so the id is looked for in sc's session, or, when sc names
// none, in the tenant's sessions, most recently updated first (the agent
// asking is in one of them); an id ctxkit serve handed out before ids
// were short (16 hex digits) is stored under the id alone. An id two
// conversations of one session both handed out names every original
// stored for it (store.CollisionKey): they come back as one, each under
// a line naming it.
func Original(ctx context.Context, sc Scope, id string) (store.Original, error) {
	o, err := sc.Store.Original(ctx, id)
	if err == nil && (sc.Session == "" || sameSession(o.Session, sc.Session)) {
		return o, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return o, err
	}
	if sc.Session != "" {
		if o, err := originalsAt(ctx, sc.Store, store.OriginalKey(sc.Session, id)); !errors.Is(err, store.ErrNotFound) {
			return o, err
		}
	}
	ss, err := sc.Store.Sessions(ctx, recentSessions)
	if err != nil {
		return store.Original{}, err
	}
	for _, x := range ss {
		if sc.Session != "" && !sameSession(x.ID, sc.Session) {
			continue
		}
		if o, err := originalsAt(ctx, sc.Store, store.OriginalKey(x.ID, id)); !errors.Is(err, store.ErrNotFound) {
			return o, err
		}
	}
	return store.Original{}, fmt.Errorf("original %q: %w", id, store.ErrNotFound)
}

// sameSession reports whether an original's session is want, given as
// the proxy's key (cc:…) or the client's own id.
func sameSession(got, want string) bool {
	if got == want {
		return true
	}
	_, id, ok := strings.Cut(got, ":")
	return ok && id == want
}

// originalsAt returns the original stored under key and, when the same id
// was handed out for other contents in the session (store.CollisionKey),
// those too, as one original whose content holds each under a line naming
// it.
func originalsAt(ctx context.Context, st store.Store, key string) (store.Original, error) {
	o, err := st.Original(ctx, key)
	if err != nil {
		return o, err
	}
	all := []store.Original{o}
	for n := 2; ; n++ {
		x, err := st.Original(ctx, store.CollisionKey(key, n))
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return o, err
		}
		all = append(all, x)
	}
	if len(all) == 1 {
		return o, nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "[this id names %d results: conversations of this session gave it out for different contents; each follows]\n", len(all))
	for i, x := range all {
		fmt.Fprintf(&b, "[%d of %d: %s %q]\n", i+1, len(all), x.Tool, x.Label)
		b.Write(x.Content)
		if !bytes.HasSuffix(x.Content, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	o.Content = b.Bytes()
	return o, nil
}
