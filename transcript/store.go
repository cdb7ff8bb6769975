package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/internal/jsonenc"
)

// Names inside a session folder.
const (
	FileName = "transcript.jsonl" // the append-only record file
	SpillDir = "spill"            // files written by Spill
)

var (
	// ErrLocked means another process, or another Store in this one, has
	// the session open.
	ErrLocked = errors.New("transcript: session is locked")
	// ErrNotDurable means an edit would change or remove a block whose
	// original the transcript does not hold.
	ErrNotDurable = errors.New("transcript: original not durable")
	// ErrUnknownID means no recorded block has the id.
	ErrUnknownID = errors.New("transcript: unknown recall id")
	// ErrCorrupt means a record before the last one is damaged; the error
	// is a *CorruptError naming the line.
	ErrCorrupt = errors.New("transcript: corrupt transcript")
	// ErrReadOnly is returned by the writing methods of a store opened
	// with OpenReadOnly.
	ErrReadOnly = errors.New("transcript: store is read-only")
	// ErrClosed is returned by every method of a closed store.
	ErrClosed = errors.New("transcript: store is closed")
)

// CorruptError locates a damaged or inconsistent record.
type CorruptError struct {
	Path   string
	Line   int   // 1-based
	Offset int64 // of the line's first byte
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("transcript: %s:%d (byte %d): %v", e.Path, e.Line, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Store is one session's transcript, open for appending (Create, Open) or
// for reading (OpenReadOnly). Its methods are safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	dir      string
	path     string
	id       string
	f        *os.File
	lock     *os.File // nil when read-only
	readOnly bool
	closed   bool
	err      error // a failed write or sync: the store takes no more records

	seq  int64 // sequence number of the last record
	size int64 // bytes of valid records; the file's size when writable

	conv     *conv.Conversation // the state the records rebuild
	state    json.RawMessage    // the last state record's data
	index    map[string]loc     // block id → the record that first held it
	warnings []string
}

// loc is a record's place in the file, newline included.
type loc struct {
	off int64
	n   int
}

// Create starts a new session in dir, creating the folder if needed. It
// fails if dir already holds a transcript, and with ErrLocked if another
// store holds the folder.
func Create(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	if err := syncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	lk, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s, err := create(dir, lk)
	if err != nil {
		lk.Close()
		return nil, err
	}
	return s, nil
}

func create(dir string, lk *os.File) (*Store, error) {
	path := filepath.Join(dir, FileName)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("transcript: create %s: %w (open it to resume)", dir, fs.ErrExist)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	id := filepath.Base(abs)
	data, err := jsonenc.Marshal(sessionPayload{Version: Version, ID: id, Created: time.Now().UTC()})
	if err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	line := encodeLine(1, typeSession, data)
	// The first record goes in by rename, so a crash leaves either no
	// transcript or one with its session record, never an empty file.
	if err := writeNew(dir, ".transcript-*.tmp", path, line); err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	return &Store{
		dir: dir, path: path, id: id, f: f, lock: lk,
		seq: 1, size: int64(len(line)),
		conv: &conv.Conversation{}, index: make(map[string]loc),
	}, nil
}

// Open resumes the session in dir for appending: it takes the lock, reads
// every record, rebuilds the conversation, and cuts away a torn last line
// left by a crash (the cut bytes are kept in a torn-*.jsonl file beside the
// transcript and the cut is reported by Warnings).
func Open(dir string) (*Store, error) { return open(dir, false) }

// OpenReadOnly reads the session in dir without taking the lock, so that a
// session an agent is still writing can be read (ctxkit recall). A torn or
// half-written last line is ignored and reported by Warnings, never cut.
func OpenReadOnly(dir string) (*Store, error) { return open(dir, true) }

func open(dir string, readOnly bool) (*Store, error) {
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("transcript: open %s: no %s in it: %w", dir, FileName, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("transcript: open %s: %w", dir, err)
	}
	s := &Store{dir: dir, path: path, readOnly: readOnly, conv: &conv.Conversation{}, index: make(map[string]loc)}
	flag := os.O_RDONLY
	if !readOnly {
		lk, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		s.lock = lk
		flag = os.O_RDWR | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("transcript: open %s: %w", dir, err)
	}
	s.f = f
	if err := s.load(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// load reads every record, replaying it into the state and the index.
func (s *Store) load() error {
	r := bufio.NewReaderSize(s.f, 1<<16)
	var (
		off     int64
		lineNo  int
		bad     *CorruptError // a complete line that failed: an error unless it is the last
		badLine []byte
		torn    []byte
		tornErr error
	)
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			lineNo++
			if bad != nil {
				return bad // more follows a damaged line: not a torn tail
			}
			switch env, derr := decodeLine(bytes.TrimSuffix(b, []byte("\n"))); {
			case b[len(b)-1] != '\n':
				torn, tornErr = b, errors.New("no end of line")
			case derr != nil:
				bad = &CorruptError{Path: s.path, Line: lineNo, Offset: off, Err: derr}
				badLine = b
			default:
				if rerr := s.replay(env, loc{off, len(b)}); rerr != nil {
					return &CorruptError{Path: s.path, Line: lineNo, Offset: off, Err: rerr}
				}
				off += int64(len(b))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("transcript: read %s: %w", s.path, err)
		}
	}
	if bad != nil {
		torn, tornErr = badLine, bad.Err
	}
	s.size = off
	if s.seq == 0 {
		return &CorruptError{Path: s.path, Line: 1, Offset: 0, Err: errors.New("no session record")}
	}
	if torn != nil {
		return s.dropTorn(lineNo, off, torn, tornErr)
	}
	return nil
}

// dropTorn reports a torn last line (in Warnings, for the caller to show or
// log) and, when writable, moves it out of the way so the next record
// starts on a line of its own.
func (s *Store) dropTorn(lineNo int, off int64, torn []byte, why error) error {
	msg := fmt.Sprintf("%s:%d (byte %d, %d bytes): torn last record ignored: %v", s.path, lineNo, off, len(torn), why)
	if !s.readOnly {
		kept, err := s.keepTorn(off, torn)
		if err != nil {
			return err
		}
		if err := s.f.Truncate(off); err != nil {
			return fmt.Errorf("transcript: cut torn record from %s: %w", s.path, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("transcript: cut torn record from %s: %w", s.path, err)
		}
		msg += "; cut from the file and kept in " + filepath.Base(kept)
	}
	s.warnings = append(s.warnings, msg)
	return nil
}

func (s *Store) keepTorn(off int64, torn []byte) (string, error) {
	f, err := os.CreateTemp(s.dir, "torn-"+strconv.FormatInt(off, 10)+"-*.jsonl")
	if err != nil {
		return "", fmt.Errorf("transcript: keep torn record: %w", err)
	}
	_, err = f.Write(torn)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return "", fmt.Errorf("transcript: keep torn record: %w", err)
	}
	return f.Name(), nil
}

// replay applies one verified record to the state.
func (s *Store) replay(env envelope, l loc) error {
	switch {
	case s.seq == 0 && env.Type != typeSession:
		return fmt.Errorf("first record is a %s record, not the session record", env.Type)
	case s.seq > 0 && env.Type == typeSession:
		return errors.New("a second session record")
	case env.Seq != s.seq+1:
		return fmt.Errorf("sequence number %d, want %d", env.Seq, s.seq+1)
	}
	switch env.Type {
	case typeSession:
		var p sessionPayload
		if err := unmarshal(env.Data, &p); err != nil {
			return err
		}
		if p.Version > Version || p.Version < 1 {
			return fmt.Errorf("format version %d; this ctxkit reads version %d", p.Version, Version)
		}
		s.id = p.ID
	case typeHeader:
		sys, tools, err := decodeHeader(env.Data)
		if err != nil {
			return err
		}
		s.setHeader(sys, tools, l)
	case typeMessage:
		m, err := decodeMessage(env.Data)
		if err != nil {
			return err
		}
		s.addMessage(m, l)
	case typeEdit:
		e, seq, err := decodeEdit(env.Data)
		if err != nil {
			return err
		}
		if err := s.applyEdit(e, seq, l); err != nil {
			return err
		}
	case typeSpill:
		var p spillPayload
		if err := unmarshal(env.Data, &p); err != nil {
			return err
		}
	case typeState:
		if !isObject(env.Data) {
			return errors.New("a state record whose data is not a JSON object")
		}
		s.state = bytes.Clone(env.Data) // the line's buffer is not the store's to keep
	default:
		return fmt.Errorf("unknown record type %q (written by a newer ctxkit?)", env.Type)
	}
	s.seq = env.Seq
	return nil
}

// The state changes below are shared by the writers and replay, so that a
// live store and a reopened one hold the same state by construction.

func (s *Store) setHeader(system []conv.Block, tools []conv.Tool, l loc) {
	s.indexBlocks("", system, l)
	s.conv.System = system
	s.conv.Tools = tools
	advance(s.conv, system)
}

func (s *Store) addMessage(m conv.Message, l loc) {
	s.indexBlocks("", m.Blocks, l)
	s.conv.Stamp(m.Blocks) // every block has an id: this only moves Seq past them
	s.conv.Messages = append(s.conv.Messages, m)
}

func (s *Store) applyEdit(e conv.Edit, seq int, l loc) error {
	s.indexBlocks("", e.Blocks, l)
	for _, m := range e.Messages {
		s.indexBlocks("", m.Blocks, l)
	}
	if seq > s.conv.Seq {
		s.conv.Seq = seq
	}
	return s.conv.Apply(e)
}

func (s *Store) indexBlocks(prefix string, bs []conv.Block, l loc) {
	walk(prefix, bs, func(_ string, b *conv.Block) {
		if _, ok := s.index[b.ID]; !ok && b.ID != "" {
			s.index[b.ID] = l
		}
	})
}

// advance moves c.Seq past every "bN" id in bs without handing out ids.
func advance(c *conv.Conversation, bs []conv.Block) {
	walk("", bs, func(_ string, b *conv.Block) {
		if n, err := strconv.Atoi(strings.TrimPrefix(b.ID, "b")); err == nil && strings.HasPrefix(b.ID, "b") && n > c.Seq {
			c.Seq = n
		}
	})
}

// SetHeader records the system blocks and tool schemas, replacing earlier
// ones.
func (s *Store) SetHeader(ctx context.Context, system []conv.Block, tools []conv.Tool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(ctx); err != nil {
		return err
	}
	data, err := encodeHeader(system, tools)
	if err != nil {
		return fmt.Errorf("transcript: header: %w", err)
	}
	l, err := s.write(typeHeader, data)
	if err != nil {
		return err
	}
	var ts []conv.Tool
	if tools != nil {
		ts = make([]conv.Tool, len(tools))
		for i, t := range tools {
			t.InputSchema = cloneRaw(t.InputSchema)
			t.CacheControl = cloneRaw(t.CacheControl)
			ts[i] = t
		}
	}
	s.setHeader(conv.CloneBlocks(system), ts, l)
	return nil
}

// Append records m as produced, before anything can change it, and returns
// once the record is on disk (fsync). Every block of m, nested ones
// included, must carry its id, as conv.Conversation.Append stamps them, and
// the ids must be new to the transcript.
func (s *Store) Append(ctx context.Context, m conv.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(ctx); err != nil {
		return err
	}
	seen := make(map[string]bool)
	var bad error
	walk("", m.Blocks, func(key string, b *conv.Block) {
		switch {
		case bad != nil:
		case b.ID == "":
			bad = fmt.Errorf("transcript: append: block %s (%s) has no id; add the message to the conversation (conv.Conversation.Append) first", key, b.Type)
		case !utf8.ValidString(b.ID) || strings.ContainsAny(b.ID, "\n"):
			bad = fmt.Errorf("transcript: append: block %s has an invalid id %q", key, b.ID)
		case seen[b.ID]:
			bad = fmt.Errorf("transcript: append: two blocks of the message have id %s", b.ID)
		default:
			if _, ok := s.index[b.ID]; ok {
				bad = fmt.Errorf("transcript: append: block id %s is already recorded", b.ID)
			}
		}
		seen[b.ID] = true
	})
	if bad != nil {
		return bad
	}
	data, err := encodeMessage(m)
	if err != nil {
		return fmt.Errorf("transcript: append: %w", err)
	}
	l, err := s.write(typeMessage, data)
	if err != nil {
		return err
	}
	m.Blocks = conv.CloneBlocks(m.Blocks)
	s.addMessage(m, l)
	return nil
}

// Keep records the edit e that the caller is about to apply to c, and
// returns once it is on disk. It does not apply e: the caller does, after
// Keep returns. Keep fails with ErrNotDurable when a block the edit changes
// or removes (e.Affected(c)) was never appended, or when c's messages in a
// replaced range are not the ones the transcript holds; and with
// conv.ErrEdit when the edit does not apply. Nothing is recorded then.
func (s *Store) Keep(ctx context.Context, e conv.Edit, c *conv.Conversation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(ctx); err != nil {
		return err
	}
	if c == nil {
		return errors.New("transcript: keep: nil conversation")
	}
	rec, err := s.check(e, c)
	if err != nil {
		return err
	}
	data, err := encodeEdit(rec, c.Seq)
	if err != nil {
		return fmt.Errorf("transcript: keep: %w", err)
	}
	l, err := s.write(typeEdit, data)
	if err != nil {
		return err
	}
	if err := s.applyEdit(rec, c.Seq, l); err != nil {
		// check rules out every way Apply fails; if it ever did, the
		// recorded state would no longer be the caller's.
		s.err = fmt.Errorf("transcript: kept edit does not apply to the recorded state: %w", err)
		return s.err
	}
	return nil
}

// check validates e against c and the recorded state and returns the edit
// as it is recorded: new blocks get the ids c.Apply will give them.
func (s *Store) check(e conv.Edit, c *conv.Conversation) (conv.Edit, error) {
	rec := e
	switch e.Kind {
	case conv.EditRung:
		for _, nb := range e.Blocks {
			if nb.ID == "" {
				return rec, fmt.Errorf("transcript: keep: %w: a rung edit names a block without id", conv.ErrEdit)
			}
			if _, ok := s.index[nb.ID]; !ok {
				return rec, fmt.Errorf("%w: block %s was never appended", ErrNotDurable, nb.ID)
			}
			if i, _ := s.conv.Find(nb.ID); i < 0 {
				return rec, fmt.Errorf("transcript: keep: %w: block %s is no longer in the recorded conversation", conv.ErrEdit, nb.ID)
			}
			if i, _ := c.Find(nb.ID); i < 0 {
				return rec, fmt.Errorf("transcript: keep: %w: no block %s in the conversation", conv.ErrEdit, nb.ID)
			}
		}
		rec.Blocks = conv.CloneBlocks(e.Blocks)
	case conv.EditReplace:
		if e.From < 0 || e.From > e.To || e.To > len(c.Messages) {
			return rec, fmt.Errorf("transcript: keep: %w: messages [%d,%d) of %d", conv.ErrEdit, e.From, e.To, len(c.Messages))
		}
		for _, id := range e.Affected(c) {
			if _, ok := s.index[id]; !ok {
				return rec, fmt.Errorf("%w: block %s was never appended", ErrNotDurable, id)
			}
		}
		if e.To > len(s.conv.Messages) {
			return rec, fmt.Errorf("%w: the transcript holds %d messages, the edit replaces up to %d", ErrNotDurable, len(s.conv.Messages), e.To)
		}
		for i := e.From; i < e.To; i++ {
			if !sameIDs(c.Messages[i].Blocks, s.conv.Messages[i].Blocks) {
				return rec, fmt.Errorf("%w: message %d of the conversation is not the transcript's message %d", ErrNotDurable, i, i)
			}
		}
		tmp := conv.Conversation{Seq: c.Seq}
		rec.Messages = make([]conv.Message, len(e.Messages))
		for k, m := range e.Messages {
			m.Blocks = conv.CloneBlocks(m.Blocks)
			tmp.Stamp(m.Blocks) // as c.Apply will
			rec.Messages[k] = m
		}
	default:
		return rec, fmt.Errorf("transcript: keep: %w: unknown kind %q", conv.ErrEdit, e.Kind)
	}
	return rec, nil
}

func sameIDs(a, b []conv.Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

// Spill writes data to a new file spill/<name> in the session folder,
// durably (file and folders fsync'd), records it, and returns its path. A
// name already spilled with the same bytes returns the same path; with
// other bytes it is an error, so that nothing is overwritten.
func (s *Store) Spill(ctx context.Context, name string, data []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(ctx); err != nil {
		return "", err
	}
	if name == "" || name != filepath.Base(name) || !filepath.IsLocal(name) || strings.HasPrefix(name, ".") || strings.ContainsAny(name, `\`+"\x00") {
		return "", fmt.Errorf("transcript: spill: invalid file name %q (a plain name, no path, not hidden)", name)
	}
	dir := filepath.Join(s.dir, SpillDir)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("transcript: spill: %w", err)
		}
		if err := syncDir(s.dir); err != nil {
			return "", fmt.Errorf("transcript: spill: %w", err)
		}
	}
	path := filepath.Join(dir, name)
	if old, err := os.ReadFile(path); err == nil {
		if bytes.Equal(old, data) {
			return path, nil
		}
		return "", fmt.Errorf("transcript: spill %s: %w with other content", name, fs.ErrExist)
	}
	if err := writeNew(dir, ".spill-*.tmp", path, data); err != nil {
		return "", fmt.Errorf("transcript: spill %s: %w", name, err)
	}
	rec, err := jsonenc.Marshal(spillPayload{Name: name, Path: filepath.ToSlash(filepath.Join(SpillDir, name)), Size: int64(len(data)), CRC: fmt.Sprintf("%08x", crc32c(data))})
	if err != nil {
		return "", fmt.Errorf("transcript: spill %s: %w", name, err)
	}
	if _, err := s.write(typeSpill, rec); err != nil {
		return "", err
	}
	return path, nil
}

// SetState records data, a JSON object, as the caller's state from here
// on (the engine's account: engine.Account), and returns once it is on
// disk. The last one recorded is State's when the session is opened
// again.
func (s *Store) SetState(ctx context.Context, data json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(ctx); err != nil {
		return err
	}
	if !isObject(data) {
		return errors.New("transcript: state: not a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return fmt.Errorf("transcript: state: %w", err)
	}
	if _, err := s.write(typeState, buf.Bytes()); err != nil {
		return err
	}
	s.state = buf.Bytes()
	return nil
}

// State returns the data of the last state record (SetState), or nil when
// there is none.
func (s *Store) State() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.state)
}

// isObject reports whether data is one JSON object.
func isObject(data []byte) bool {
	data = bytes.TrimSpace(data)
	return len(data) > 0 && data[0] == '{' && json.Valid(data)
}

// Recall returns the block with id as it was first recorded: the exact
// original of a block since compressed, cleared or summarized.
func (s *Store) Recall(id string) (conv.Block, error) {
	s.mu.Lock()
	l, ok := s.index[id]
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return conv.Block{}, ErrClosed
	}
	if !ok {
		return conv.Block{}, fmt.Errorf("%w %q", ErrUnknownID, id)
	}
	buf := make([]byte, l.n)
	if _, err := s.f.ReadAt(buf, l.off); err != nil {
		return conv.Block{}, fmt.Errorf("transcript: recall %s: %w", id, err)
	}
	env, err := decodeLine(bytes.TrimSuffix(buf, []byte("\n")))
	if err != nil {
		return conv.Block{}, fmt.Errorf("transcript: recall %s: %w", id, &CorruptError{Path: s.path, Offset: l.off, Err: err})
	}
	var lists [][]conv.Block
	switch env.Type {
	case typeMessage:
		m, err := decodeMessage(env.Data)
		if err != nil {
			return conv.Block{}, fmt.Errorf("transcript: recall %s: %w", id, err)
		}
		lists = append(lists, m.Blocks)
	case typeEdit:
		e, _, err := decodeEdit(env.Data)
		if err != nil {
			return conv.Block{}, fmt.Errorf("transcript: recall %s: %w", id, err)
		}
		lists = append(lists, e.Blocks)
		for _, m := range e.Messages {
			lists = append(lists, m.Blocks)
		}
	case typeHeader:
		sys, _, err := decodeHeader(env.Data)
		if err != nil {
			return conv.Block{}, fmt.Errorf("transcript: recall %s: %w", id, err)
		}
		lists = append(lists, sys)
	}
	for _, bs := range lists {
		var found *conv.Block
		walk("", bs, func(_ string, b *conv.Block) {
			if found == nil && b.ID == id {
				found = b
			}
		})
		if found != nil {
			return found.Clone(), nil
		}
	}
	return conv.Block{}, fmt.Errorf("transcript: recall %s: %w", id, &CorruptError{Path: s.path, Offset: l.off, Err: errors.New("indexed record does not hold the block")})
}

// Conversation returns a copy of the state the records rebuild: system
// blocks, tools, messages with every kept edit applied, and Seq. Pending
// injections are not recorded until they join a message.
func (s *Store) Conversation() *conv.Conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conv.Clone()
}

// Dir is the session folder.
func (s *Store) Dir() string { return s.dir }

// ID is the session id recorded when the session was created.
func (s *Store) ID() string { return s.id }

// Warnings lists what Open found and worked around, such as a torn last
// record.
func (s *Store) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.warnings...)
}

// Close releases the file and the lock. Every record Append, Keep,
// SetHeader, SetState and Spill acknowledged is already on disk.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.closeFiles()
}

func (s *Store) closeFiles() error {
	var err error
	if s.f != nil {
		err = s.f.Close()
	}
	if s.lock != nil {
		if lerr := s.lock.Close(); err == nil {
			err = lerr
		}
	}
	return err
}

func (s *Store) writable(ctx context.Context) error {
	switch {
	case s.closed:
		return ErrClosed
	case s.readOnly:
		return ErrReadOnly
	case s.err != nil:
		return s.err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	return nil
}

// write appends one record and syncs it. A failed write is cut back off
// the file; a failed sync stops the store, since the kernel may have
// dropped the data and a later success would prove nothing.
func (s *Store) write(typ string, data []byte) (loc, error) {
	line := encodeLine(s.seq+1, typ, data)
	n, err := s.f.Write(line)
	if err != nil || n != len(line) {
		if err == nil {
			err = io.ErrShortWrite
		}
		if terr := s.f.Truncate(s.size); terr != nil {
			s.err = fmt.Errorf("transcript: write %s: %w; cutting the partial record failed too: %v", s.path, err, terr)
			return loc{}, s.err
		}
		return loc{}, fmt.Errorf("transcript: write %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		s.err = fmt.Errorf("transcript: sync %s: %w (the store takes no more records)", s.path, err)
		return loc{}, s.err
	}
	l := loc{s.size, len(line)}
	s.seq++
	s.size += int64(len(line))
	return l, nil
}

// writeNew makes path hold data durably and atomically: a temporary file
// in dir, synced, linked into place (failing if path exists), then the
// folder synced.
func writeNew(dir, pattern, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
