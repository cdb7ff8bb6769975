package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
)

// memKeeper stands in for the transcript: it knows which blocks were
// appended, refuses an edit whose originals it never saw, and checks that
// it is called before the edit is applied.
type memKeeper struct {
	seen  map[string]bool
	edits []conv.Edit
	fail  error
}

func newKeeper() *memKeeper { return &memKeeper{seen: make(map[string]bool)} }

var errNotDurable = errors.New("memKeeper: original never appended")

// record marks every block of c as appended.
func (k *memKeeper) record(c *conv.Conversation) {
	for i := range c.Messages {
		for _, b := range c.Messages[i].Blocks {
			k.seen[b.ID] = true
		}
	}
}

func (k *memKeeper) Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error {
	if k.fail != nil {
		return k.fail
	}
	for _, id := range e.Affected(c) {
		if !k.seen[id] {
			return fmt.Errorf("%w: %s", errNotDurable, id)
		}
	}
	for _, m := range e.Messages {
		for _, b := range m.Blocks {
			if b.ID == "" {
				return errors.New("memKeeper: new block without an id")
			}
			if i, _ := c.Find(b.ID); i >= 0 && !k.seen[b.ID] {
				return errors.New("memKeeper: edit applied before it was kept")
			}
			k.seen[b.ID] = true
		}
	}
	k.edits = append(k.edits, e)
	return nil
}

// builder writes conversations: rounds of user text, assistant steps with
// tool calls, and results.
type builder struct {
	c       *conv.Conversation
	pending []conv.Block
	n       int
}

func newBuilder() *builder { return &builder{c: &conv.Conversation{}} }

func (b *builder) user(text string, extra ...conv.Block) *builder {
	blocks := append(extra, conv.NewText(conv.SourceUser, text))
	b.c.Append(conv.Message{Role: conv.RoleUser, Blocks: blocks})
	return b
}

func (b *builder) call(name, input string) conv.Block {
	b.n++
	return conv.NewToolUse("tu"+strconv.Itoa(b.n), name, json.RawMessage(input))
}

func (b *builder) say(text string, calls ...conv.Block) *builder {
	var blocks []conv.Block
	if text != "" {
		blocks = append(blocks, conv.NewText(conv.SourceAssistant, text))
	}
	blocks = append(blocks, calls...)
	b.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: blocks})
	b.pending = calls
	return b
}

func (b *builder) results(texts ...string) *builder {
	var blocks []conv.Block
	for i, call := range b.pending {
		t := texts[i%len(texts)]
		blocks = append(blocks, conv.NewToolResult(call.ToolUseID, call.Name, strings.TrimPrefix(t, "ERR:"), strings.HasPrefix(t, "ERR:")))
	}
	b.pending = nil
	b.c.Append(conv.Message{Role: conv.RoleUser, Blocks: blocks})
	return b
}

// big returns about n tokens of varied text.
func big(tag string, n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n*4; i++ {
		fmt.Fprintf(&sb, "%s line %d: value=%d status ok\n", tag, i, i*7)
	}
	return sb.String()
}

// steps adds k assistant steps, each editing a file and reading a large
// output.
func (b *builder) steps(round, k, size int) *builder {
	for i := range k {
		path := fmt.Sprintf("src/r%d_s%d.go", round, i)
		b.say(fmt.Sprintf("I'll edit %s next because the test needs it.", path), b.call("Edit", `{"file_path":"`+path+`","old_string":"a","new_string":"b"}`), b.call("Bash", fmt.Sprintf(`{"command":"go test ./... -run R%dS%d"}`, round, i)))
		b.results("ok", big(fmt.Sprintf("r%ds%d", round, i), size))
	}
	return b
}

// session is several rounds of tool work with a final reply each.
func session(rounds, stepsPer, size int) *conv.Conversation {
	b := newBuilder()
	for r := 1; r <= rounds; r++ {
		b.user(fmt.Sprintf("Round %d: please continue the refactor of module %d.", r, r))
		b.steps(r, stepsPer, size)
		b.say(fmt.Sprintf("Round %d done.", r))
	}
	return b.c
}

// testConfig is a small window: effective 10,000, soft 7,000, hard 9,000,
// target 5,000.
func testConfig() Config {
	return Config{Window: 20_000, MaxOutput: 2_000}
}

// mustCheck fails on any invariant violation.
func mustCheck(t *testing.T, c *conv.Conversation) {
	t.Helper()
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatalf("invariants broken: %v", vs)
	}
}

// funcSummarizer adapts a function.
type funcSummarizer func(ctx context.Context, in summarize.Input) (summarize.Output, error)

func (f funcSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Output, error) {
	return f(ctx, in)
}

func summaries(c *conv.Conversation) []conv.Block {
	var out []conv.Block
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeSummary {
				out = append(out, b)
			}
		}
	}
	return out
}

func allText(c *conv.Conversation) string {
	var sb strings.Builder
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			sb.WriteString(b.PlainText())
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// withRequest appends a closing user message so the conversation is a
// request.
func withRequest(c *conv.Conversation, text string) {
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, text)}})
}
