package importer

import (
	"encoding/json"
	"fmt"
	"github.com/ctxkit/ctxkit/jsonerr"
	"hash/fnv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"
)

// ccRecord is one line of a Claude Code session log, with only the fields
// the import needs: toolUseResult (a tool-specific copy the model never
// saw) and the rest are not even kept.
type ccRecord struct {
	Type             string    `json:"type"`
	Subtype          string    `json:"subtype"`
	SessionID        string    `json:"sessionId"`
	Cwd              string    `json:"cwd"`
	UUID             string    `json:"uuid"`
	IsSidechain      bool      `json:"isSidechain"`
	IsMeta           bool      `json:"isMeta"`
	IsCompactSummary bool      `json:"isCompactSummary"`
	IsAPIError       bool      `json:"isApiErrorMessage"`
	Timestamp        string    `json:"timestamp"`
	Message          ccMessage `json:"message"`
}

type ccMessage struct {
	Role    string          `json:"role"`
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *ccUsage        `json:"usage"`
}

// ccUsage is the Anthropic usage of the response a record belongs to,
// repeated on every record split from it.
type ccUsage struct {
	Input      int `json:"input_tokens"`
	CacheWrite int `json:"cache_creation_input_tokens"`
	CacheRead  int `json:"cache_read_input_tokens"`
	Output     int `json:"output_tokens"`
}

// ccKnown are the record types of Claude Code logs that are not
// conversation: session titles, hook and turn bookkeeping, sub-agent
// progress, undo snapshots, queued prompts, tool and skill listings,
// permission mode changes, the last prompt typed.
var ccKnown = map[string]bool{
	"summary": true, "system": true, "progress": true, "file-history-snapshot": true,
	"queue-operation": true, "attachment": true, "permission-mode": true, "last-prompt": true,
	"custom-title": true, "tag": true, "agent-name": true, "pr-link": true,
}

// claudeCode imports a Claude Code session log (~/.claude/projects/…/*.jsonl)
// line by line. It keeps the main thread (isSidechain false); a file that
// is all sidechain — a sub-agent's own log — imports as that thread.
func (r *run) claudeCode() error {
	cc := ccImport{run: r, seen: map[uint64]bool{}}
	if err := r.eachLine(cc.record); err != nil {
		return err
	}
	r.total = cc.total
	r.s.Subagents = ccSubagents(r.path)
	return nil
}

// damaged handles a line that is not a whole record: an error with
// Strict, else a warning with the line number.
func (r *run) damaged(line int, cause error) error {
	if r.strict {
		return r.lineErr(line, fmt.Errorf("%w: %s", ErrDamaged, jsonerr.What(cause)))
	}
	r.w.add("line %d: damaged line skipped: %s", line, jsonerr.What(cause))
	return nil
}

type ccImport struct {
	*run
	total     int             // records read
	sessionID string          // the session's id, naming its folder of saved tool outputs
	seen      map[uint64]bool // hashes of record uuids, to drop repeated records
	mode      int             // 0 before the first message, 1 main thread, 2 sidechain-only file
	lastID    string          // message.id of the last assistant message
	lastModel string
}

func (cc *ccImport) record(n int, line []byte) error {
	var rec ccRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return cc.damaged(n, err)
	}
	cc.total++
	if cc.sessionID == "" {
		cc.sessionID = rec.SessionID
	}
	if cc.s.Cwd == "" {
		cc.s.Cwd = rec.Cwd
	}
	if rec.Type != "user" && rec.Type != "assistant" {
		switch {
		case rec.Type == "system" && rec.Subtype != "":
			cc.skip("system " + rec.Subtype)
		case ccKnown[rec.Type]:
			cc.skip(rec.Type)
		default:
			cc.unknown(rec.Type)
		}
		return nil
	}
	switch {
	case !rec.IsSidechain && cc.mode != 1:
		if cc.mode == 2 { // the sidechain records came first: start over with the main thread
			cc.b, cc.lastID = newBuilder(), ""
		}
		cc.mode = 1
	case rec.IsSidechain && cc.mode == 0:
		cc.mode = 2
	case rec.IsSidechain && cc.mode == 1:
		cc.skip("sidechain " + rec.Type) // a sub-agent thread interleaved with the main one
		return nil
	}
	if rec.IsAPIError {
		cc.skip("assistant API error") // written by Claude Code, not the model, and never sent back
		return nil
	}
	if rec.Message.Model == "<synthetic>" {
		cc.skip("assistant <synthetic>") // a reply Claude Code made up itself, never from the API
		return nil
	}
	if rec.UUID != "" { // a record logged twice (resumed sessions repeat some)
		h := fnv.New64a()
		h.Write([]byte(rec.UUID))
		if cc.seen[h.Sum64()] {
			cc.skip("repeated " + rec.Type)
			return nil
		}
		cc.seen[h.Sum64()] = true
	}
	role := conv.Role(rec.Message.Role)
	if role != conv.RoleUser && role != conv.RoleAssistant {
		role = conv.Role(rec.Type)
	}
	blocks, err := wire.DecodeAnthropicContent(role, rec.Message.Content)
	if err != nil {
		return cc.damaged(n, err)
	}
	// A block type added after this importer (tool search's
	// tool_reference) is kept whole, as an opaque block.
	cc.countOpaque(blocks)
	cc.b.at, _ = time.Parse(time.RFC3339Nano, rec.Timestamp)
	if role == conv.RoleAssistant {
		cc.assistant(rec.Message, blocks)
		return nil
	}
	for i := range blocks {
		b := &blocks[i]
		switch {
		case b.Type == conv.TypeToolResult:
			cc.persisted(b)
		case b.Type != conv.TypeText:
		case rec.IsCompactSummary || isContinuation(b.Text):
			// Claude Code's own compaction summary of everything before it
			// (flagged since 2.0; recognised by its opening before).
			*b = conv.NewSummary(b.Text, conv.Span{First: 1, Last: max(1, cc.b.rounds())})
		case rec.IsMeta && b.Meta.Source == conv.SourceUser:
			// Injected by Claude Code (slash-command expansions, caveats),
			// not typed: it must not open a round.
			b.Meta = conv.DefaultMeta(conv.TypeText, conv.SourceHook)
		}
	}
	cc.b.named(blocks)
	if rec.IsCompactSummary || len(blocks) > 0 && blocks[0].Type == conv.TypeSummary {
		// From here on the model saw the summary and what follows only.
		cc.b.epoch(blocks...)
		cc.lastID = ""
		return nil
	}
	cc.b.user(blocks...)
	return nil
}

// assistant adds the blocks of one assistant record. Claude Code writes
// one record per content block; records sharing message.id are one
// response and become one message again, even when the results of its
// first tool calls were logged between them.
func (cc *ccImport) assistant(m ccMessage, blocks []conv.Block) {
	if cc.s.Model == "" && m.Model != "" && m.Model != "<synthetic>" {
		cc.s.Model = m.Model
	}
	if len(blocks) == 0 {
		return
	}
	cc.b.named(blocks)
	cc.b.stamp(blocks)
	var u *conv.Usage
	if m.Usage != nil {
		u = &conv.Usage{Input: m.Usage.Input, CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite, Output: m.Usage.Output}
	}
	if msgs := cc.b.msgs; m.ID != "" && m.ID == cc.lastID && len(msgs) > 0 {
		target := len(msgs) - 1
		if msgs[target].Role == conv.RoleUser && onlyResults(msgs[target]) && target > 0 {
			target--
		}
		if msgs[target].Role == conv.RoleAssistant {
			msgs[target].Blocks = appendNew(msgs[target].Blocks, blocks)
			if u != nil { // the same response's usage, repeated: the last record's is final
				msgs[target].Usage = u
			}
			return
		}
	}
	cc.lastID = m.ID
	cc.b.assistant(blocks...)
	if last := cc.b.last(); last != nil && last.Role == conv.RoleAssistant {
		last.Usage = u
	}
}

func onlyResults(m conv.Message) bool {
	for _, b := range m.Blocks {
		if b.Type != conv.TypeToolResult {
			return false
		}
	}
	return true
}

// appendNew appends blocks, skipping tool calls already present (a block
// logged twice).
func appendNew(dst, blocks []conv.Block) []conv.Block {
	for _, b := range blocks {
		dup := false
		if b.Type == conv.TypeToolUse {
			for _, d := range dst {
				if d.Type == conv.TypeToolUse && d.ToolUseID == b.ToolUseID {
					dup = true
				}
			}
		}
		if !dup {
			dst = append(dst, b)
		}
	}
	return dst
}

// continuationPrefix opens every summary Claude Code writes when it compacts
// a conversation or continues one that ran out of context.
const continuationPrefix = "This session is being continued from a previous conversation that ran out of context."

func isContinuation(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), continuationPrefix)
}
