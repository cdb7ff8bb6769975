package importer

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/wire"

	_ "modernc.org/sqlite" // pure-Go SQLite driver, no cgo
)

// opencode's session store (packages/opencode/src/session/session.sql.ts,
// message-v2.ts): newer versions keep sessions, messages and parts in the
// SQLite database ~/.local/share/opencode/opencode.db (tables session,
// message, part; message and part rows hold their JSON in data); older
// ones keep one JSON file per record under ~/.local/share/opencode/storage:
// session/<project>/<session>.json, message/<session>/<message>.json and
// part/<message>/<part>.json.

// ocMessage is a message's info (MessageV2.Info).
type ocMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	ModelID    string          `json:"modelID"`
	ProviderID string          `json:"providerID"`
	Summary    json.RawMessage `json:"summary"` // true on a compaction summary (assistant)
	Error      *struct {
		Name string `json:"name"`
	} `json:"error"`
	Time struct {
		Created int64 `json:"created"`
	} `json:"time"`
	Tokens *ocTokens `json:"tokens"`
	Path   struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
}

// ocTokens is opencode's usage: input excludes the cache reads and writes.
type ocTokens struct {
	Input     int `json:"input"`
	Output    int `json:"output"`
	Reasoning int `json:"reasoning"`
	Cache     struct {
		Read  int `json:"read"`
		Write int `json:"write"`
	} `json:"cache"`
}

func (t *ocTokens) usage() *conv.Usage {
	if t == nil || t.Input+t.Output+t.Reasoning+t.Cache.Read+t.Cache.Write == 0 {
		return nil
	}
	return &conv.Usage{Input: t.Input, CacheRead: t.Cache.Read, CacheWrite: t.Cache.Write, Output: t.Output + t.Reasoning}
}

// ocPart is a message part (MessageV2.Part).
type ocPart struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic"`
	Ignored   bool            `json:"ignored"`
	Metadata  json.RawMessage `json:"metadata"`
	// file
	Mime     string `json:"mime"`
	Filename string `json:"filename"`
	URL      string `json:"url"`
	// tool
	CallID string `json:"callID"`
	Tool   string `json:"tool"`
	State  struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   string          `json:"output"`
		Error    string          `json:"error"`
		Metadata struct {
			Interrupted bool    `json:"interrupted"`
			Output      *string `json:"output"`
		} `json:"metadata"`
		Time struct {
			Compacted int64 `json:"compacted"`
		} `json:"time"`
	} `json:"state"`
	// step-finish
	Tokens *ocTokens `json:"tokens"`
	// subtask
	Prompt string `json:"prompt"`
}

type ocWithParts struct {
	info  ocMessage
	parts []ocPart
}

// OpencodeSession is one session of an opencode store.
type OpencodeSession struct {
	ID, Title, Directory, ParentID string
	Created, Updated               time.Time
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// openOpencodeDB opens an opencode database read-only. The URI needs an
// absolute path: a relative one would be read as the URI's authority.
func openOpencodeDB(path string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&_pragma=busy_timeout(2000)"}
	return sql.Open("sqlite", u.String())
}

// OpencodeSessions lists the sessions of an opencode database, newest
// first.
func OpencodeSessions(ctx context.Context, dbPath string) ([]OpencodeSession, error) {
	db, err := openOpencodeDB(dbPath)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, title, directory, COALESCE(parent_id, ''), time_created, time_updated FROM session ORDER BY time_updated DESC`)
	if err != nil {
		return nil, fmt.Errorf("%s is not an opencode database: %w", dbPath, err)
	}
	defer rows.Close()
	var out []OpencodeSession
	for rows.Next() {
		var s OpencodeSession
		var created, updated int64
		if err := rows.Scan(&s.ID, &s.Title, &s.Directory, &s.ParentID, &created, &updated); err != nil {
			return nil, err
		}
		s.Created, s.Updated = time.UnixMilli(created), time.UnixMilli(updated)
		out = append(out, s)
	}
	return out, rows.Err()
}

// DatabaseSessions returns, for an opencode database, "PATH#ID" for each
// of its sessions that holds messages, the longest first, so that every one
// can be imported; nil for any other file.
func DatabaseSessions(ctx context.Context, path string) []string {
	if !isSQLite(path) {
		return nil
	}
	db, err := openOpencodeDB(path)
	if err != nil {
		return nil
	}
	defer db.Close()
	ids, _ := ocByLength(ctx, db)
	out := make([]string, len(ids))
	for i, s := range ids {
		out[i] = path + "#" + s.id
	}
	return out
}

type ocCount struct {
	id       string
	messages int
}

// ocByLength lists a database's sessions that hold messages, with their
// message counts, the longest first.
func ocByLength(ctx context.Context, db *sql.DB) ([]ocCount, error) {
	rows, err := db.QueryContext(ctx, `SELECT session_id, COUNT(*) FROM message GROUP BY session_id ORDER BY COUNT(*) DESC, session_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ocCount
	for rows.Next() {
		var c ocCount
		if err := rows.Scan(&c.id, &c.messages); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// opencode imports one opencode session: from the database (the session
// Options.Session or a "#<id>" after the path names, else the most
// recently updated one), or from the JSON storage (a session info file,
// or a file in a session's message folder).
func (r *run) opencode() error {
	var msgs []ocWithParts
	var err error
	if isSQLite(r.path) {
		msgs, err = r.opencodeDB()
	} else {
		msgs, err = r.opencodeFiles()
	}
	if err != nil {
		return err
	}
	return r.opencodeConvert(msgs)
}

func isSQLite(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], sqliteMagic)
}

func (r *run) opencodeDB() ([]ocWithParts, error) {
	db, err := openOpencodeDB(r.path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	id := r.session
	if id == "" {
		err = db.QueryRowContext(r.ctx, `SELECT s.id FROM session s WHERE EXISTS (SELECT 1 FROM message m WHERE m.session_id = s.id) ORDER BY s.time_updated DESC LIMIT 1`).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNoMessages
		}
		if err != nil {
			return nil, fmt.Errorf("%w: not an opencode database: %v", ErrUnknownFormat, err)
		}
		if all, err := ocByLength(r.ctx, db); err == nil && len(all) > 1 {
			var others []string
			for _, c := range all {
				if c.id != id {
					others = append(others, fmt.Sprintf("%s (%d messages)", c.id, c.messages))
				}
			}
			r.w.add("the database holds %d sessions; imported the most recently updated, %s; the others: %s (name one with FILE#SESSION_ID; ctxkit bench FILE replays them all)",
				len(all), id, strings.Join(others, ", "))
		}
	}
	r.s.Session = id
	rows, err := db.QueryContext(r.ctx, `SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id`, id)
	if err != nil {
		return nil, fmt.Errorf("%w: not an opencode database: %v", ErrUnknownFormat, err)
	}
	var msgs []ocWithParts
	index := map[string]int{}
	for rows.Next() {
		var mid string
		var data []byte
		if err := rows.Scan(&mid, &data); err != nil {
			rows.Close()
			return nil, err
		}
		var m ocMessage
		if err := json.Unmarshal(data, &m); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%w: message %s: %v", ErrMalformed, mid, err)
		}
		m.ID = mid
		index[mid] = len(msgs)
		msgs = append(msgs, ocWithParts{info: m})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: no session %q in the database", ErrNoMessages, id)
	}
	prows, err := db.QueryContext(r.ctx, `SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id`, id)
	if err != nil {
		return nil, err
	}
	defer prows.Close()
	for prows.Next() {
		var pid, mid string
		var data []byte
		if err := prows.Scan(&pid, &mid, &data); err != nil {
			return nil, err
		}
		i, ok := index[mid]
		if !ok {
			r.skip("part of a missing message")
			continue
		}
		var p ocPart
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("%w: part %s: %v", ErrMalformed, pid, err)
		}
		p.ID = pid
		msgs[i].parts = append(msgs[i].parts, p)
	}
	return msgs, prows.Err()
}

// opencodeFiles reads a session from the JSON storage: path is the
// session's info file (storage/session/<project>/<id>.json) or any file in
// its message folder (storage/message/<id>/).
func (r *run) opencodeFiles() ([]ocWithParts, error) {
	storage, id := "", ""
	dir := filepath.Dir(r.path)
	if filepath.Base(filepath.Dir(dir)) == "message" {
		storage, id = filepath.Dir(filepath.Dir(dir)), filepath.Base(dir)
	} else {
		var info struct {
			ID string `json:"id"`
		}
		data, err := os.ReadFile(r.path)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(bytes.TrimPrefix(data, bom), &info); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		id = info.ID
		for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
			if filepath.Base(d) == "session" {
				storage = filepath.Dir(d)
				break
			}
		}
	}
	if storage == "" || id == "" {
		return nil, fmt.Errorf("%w: an opencode session file outside its storage folder (expected storage/session/<project>/<id>.json)", ErrUnknownFormat)
	}
	r.s.Session = id
	var msgs []ocWithParts
	files, _ := filepath.Glob(filepath.Join(storage, "message", id, "*.json"))
	slices.Sort(files)
	for _, f := range files {
		var m ocMessage
		if err := readJSON(f, &m); err != nil {
			return nil, err
		}
		parts, _ := filepath.Glob(filepath.Join(storage, "part", m.ID, "*.json"))
		slices.Sort(parts)
		w := ocWithParts{info: m}
		for _, pf := range parts {
			var p ocPart
			if err := readJSON(pf, &p); err != nil {
				return nil, err
			}
			w.parts = append(w.parts, p)
		}
		msgs = append(msgs, w)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: no messages under %s", ErrNoMessages, filepath.Join(storage, "message", id))
	}
	slices.SortStableFunc(msgs, func(a, b ocWithParts) int {
		return cmpInt64(a.info.Time.Created, b.info.Time.Created)
	})
	return msgs, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &Error{Path: path, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
	}
	return nil
}

// opencodeConvert turns messages with parts into the conversation the model
// saw (MessageV2.toModelMessages): an assistant message is one step per
// step-start part, each a response with its tool results after it; a
// compaction request and the summary answering it start a new epoch.
func (r *run) opencodeConvert(msgs []ocWithParts) error {
	for i := 0; i < len(msgs); i++ {
		if err := r.tick(i); err != nil {
			return err
		}
		m := msgs[i]
		r.total += 1 + len(m.parts)
		r.b.at = time.Time{}
		if m.info.Time.Created > 0 {
			r.b.at = time.UnixMilli(m.info.Time.Created).UTC()
		}
		if len(m.parts) == 0 {
			r.skip("message without parts")
			continue
		}
		switch m.info.Role {
		case "user":
			if ocHas(m.parts, "compaction") && i+1 < len(msgs) && ocSummary(msgs[i+1].info) {
				// "What did we do so far?" and its answer: from here on the
				// model saw the summary and what follows.
				r.skip("compaction request")
				i++
				r.total += 1 + len(msgs[i].parts)
				var text []string
				for _, p := range msgs[i].parts {
					if p.Type == "text" && strings.TrimSpace(p.Text) != "" {
						text = append(text, p.Text)
					}
				}
				r.b.epoch(conv.NewSummary(strings.Join(text, "\n"), conv.Span{First: 1, Last: max(1, r.b.rounds())}))
				continue
			}
			r.b.user(r.ocUserBlocks(m.parts)...)
		case "assistant":
			if e := m.info.Error; e != nil && !(e.Name == "MessageAbortedError" && ocActed(m.parts)) {
				r.skip("assistant message that failed")
				continue
			}
			if m.info.ModelID != "" {
				r.s.Model = m.info.ModelID
			}
			if m.info.Path.Cwd != "" {
				r.s.Cwd = m.info.Path.Cwd
			}
			r.ocAssistant(m)
		default:
			r.unknown("message role " + m.info.Role)
		}
	}
	return nil
}

func ocHas(parts []ocPart, typ string) bool {
	return slices.ContainsFunc(parts, func(p ocPart) bool { return p.Type == typ })
}

func ocSummary(m ocMessage) bool {
	return m.Role == "assistant" && string(m.Summary) == "true"
}

// ocActed reports whether an aborted response produced something besides
// step starts and reasoning (then opencode still sends it).
func ocActed(parts []ocPart) bool {
	return slices.ContainsFunc(parts, func(p ocPart) bool { return p.Type != "step-start" && p.Type != "reasoning" })
}

func (r *run) ocUserBlocks(parts []ocPart) []conv.Block {
	var bs []conv.Block
	for _, p := range parts {
		switch p.Type {
		case "text":
			switch {
			case p.Ignored:
				r.skip("ignored text part")
			case p.Synthetic:
				bs = append(bs, conv.NewText(conv.SourceHook, p.Text))
			default:
				bs = append(bs, conv.NewText(conv.SourceUser, p.Text))
			}
		case "file":
			if p.Mime == "text/plain" || p.Mime == "application/x-directory" {
				continue // sent as the synthetic text part beside it
			}
			if strings.HasPrefix(p.Mime, "image/") && strings.HasPrefix(p.URL, "data:") {
				if img, err := wire.ImageFromURL(p.URL, conv.SourceUser); err == nil {
					bs = append(bs, img)
					continue
				}
			}
			bs = append(bs, conv.NewText(conv.SourceUser, fmt.Sprintf("[file %s (%s)]", cmpOr(p.Filename, p.URL), p.Mime)))
		case "compaction":
			bs = append(bs, conv.NewText(conv.SourceHook, "What did we do so far?"))
		case "subtask":
			bs = append(bs, conv.NewText(conv.SourceHook, "The following tool was executed by the user"))
		case "agent", "snapshot", "patch", "step-start", "step-finish", "retry":
			r.skip("part " + p.Type)
		default:
			r.unknown("part " + p.Type)
		}
	}
	return bs
}

// ocAssistant adds an assistant message: one response per step.
func (r *run) ocAssistant(m ocWithParts) {
	type step struct {
		blocks  []conv.Block
		results []conv.Block
		usage   *conv.Usage
	}
	var steps []*step
	cur := func() *step {
		if len(steps) == 0 {
			steps = append(steps, &step{})
		}
		return steps[len(steps)-1]
	}
	for _, p := range m.parts {
		switch p.Type {
		case "step-start":
			if len(steps) == 0 || len(cur().blocks) > 0 {
				steps = append(steps, &step{})
			}
		case "step-finish":
			cur().usage = p.Tokens.usage()
		case "text":
			if strings.TrimSpace(p.Text) != "" {
				cur().blocks = append(cur().blocks, conv.NewText(conv.SourceAssistant, p.Text))
			}
		case "reasoning":
			var meta struct {
				Anthropic struct {
					Signature string `json:"signature"`
				} `json:"anthropic"`
			}
			_ = json.Unmarshal(p.Metadata, &meta)
			if strings.TrimSpace(p.Text) != "" || meta.Anthropic.Signature != "" {
				cur().blocks = append(cur().blocks, conv.NewThinking(p.Text, meta.Anthropic.Signature))
			}
		case "tool":
			s := cur()
			call := r.b.call(p.CallID, p.Tool, geminiArgs(p.State.Input))
			s.blocks = append(s.blocks, call)
			var text string
			isErr := false
			switch p.State.Status {
			case "completed":
				text = p.State.Output
				if p.State.Time.Compacted > 0 {
					text = "[Old tool result content cleared]"
				}
			case "error":
				text, isErr = p.State.Error, true
				if p.State.Metadata.Interrupted && p.State.Metadata.Output != nil {
					text, isErr = *p.State.Metadata.Output, false
				}
			default: // pending, running
				text, isErr = "[Tool execution was interrupted]", true
			}
			s.results = append(s.results, r.b.result(call.ToolUseID, text, isErr))
		case "snapshot", "patch", "agent", "retry", "file", "compaction", "subtask":
			r.skip("part " + p.Type)
		default:
			r.unknown("part " + p.Type)
		}
	}
	steps = slices.DeleteFunc(steps, func(s *step) bool { return len(s.blocks) == 0 })
	for i, s := range steps {
		r.b.assistant(s.blocks...)
		u := s.usage
		if u == nil && i == len(steps)-1 && len(steps) == 1 {
			u = m.info.Tokens.usage()
		}
		r.b.last().Usage = u
		r.b.user(s.results...)
	}
}
