package importer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// Format names, as Session.Format reports them and Options.Format takes
// them.
const (
	FormatClaudeCode        = "claude-code"
	FormatCodex             = "codex"
	FormatGeminiCLI         = "gemini-cli"
	FormatCline             = "cline"
	FormatOpencode          = "opencode"
	FormatMiniSWEAgent      = "mini-swe-agent"
	FormatSWEAgent          = "swe-agent"
	FormatOpenHands         = "openhands"
	FormatOpenHandsResolver = "openhands-resolver"
	FormatAnthropic         = "anthropic"
	FormatOpenAI            = "openai"
	FormatGemini            = "gemini" // a Gemini API generateContent request body
)

// Formats lists the formats Load reads.
func Formats() []string {
	return []string{FormatClaudeCode, FormatCodex, FormatGeminiCLI, FormatCline, FormatOpencode, FormatMiniSWEAgent, FormatSWEAgent, FormatOpenHands, FormatOpenHandsResolver, FormatAnthropic, FormatOpenAI, FormatGemini}
}

// Sentinel errors. Load wraps them in an *Error naming the file and, where
// it is known, the line.
var (
	ErrEmpty         = errors.New("empty file")
	ErrUnknownFormat = errors.New("unknown session format")
	ErrMalformed     = errors.New("malformed JSON")
	// ErrDamaged: a JSONL line that is not a whole record (Strict only;
	// otherwise the line is skipped and reported in Session.Warnings).
	ErrDamaged = errors.New("damaged line")
	// ErrInvalidUTF8: bytes that are not UTF-8 (Strict only; otherwise
	// they are replaced with U+FFFD and reported).
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrNoMessages: the file is well formed but holds no conversation.
	ErrNoMessages = errors.New("no conversation messages")
	// ErrInvariant: the imported conversation breaks the invariants even
	// after conv.Repair; an importer bug or a recording Repair cannot fix.
	ErrInvariant = errors.New("conversation breaks the invariants after repair")
)

// Error is a failure to import a file: the path, the line when the format
// is line-based or a JSON error could be located (0 otherwise), and the
// cause, which wraps one of the sentinels or a file system error.
type Error struct {
	Path string
	Line int
	Err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("importer: %s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("importer: %s: %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Options tune Load.
type Options struct {
	// Format skips detection and reads the file as this format (one of
	// Formats()).
	Format string
	// Strict fails on any damaged line or invalid UTF-8 instead of
	// skipping or replacing it with a warning.
	Strict bool
	// FullOutputs puts the large tool outputs Claude Code saved beside a
	// session (<session>/tool-results/) back in place of the preview the
	// model saw; a missing one gets a marker saying so.
	FullOutputs bool
	// Session names the session to import from a store that holds several
	// (opencode's database); "FILE#SESSION" names it too.
	Session string
}

// Session is an imported recording.
type Session struct {
	Format string
	// Model is the model the session was recorded with, when the format
	// says.
	Model string
	Conv  *conv.Conversation
	// Fixes are what conv.Repair changed because the recording itself
	// broke an invariant.
	Fixes []conv.Fix
	// Warnings report what was skipped or replaced (damaged lines with
	// their numbers, invalid UTF-8, extra records, record types the
	// importer does not know).
	Warnings []string
	// Records is how many records (lines, messages, events) the file held,
	// where the format has them; Conv.Skipped counts those left out.
	Records int
	// Subagents are the sub-agent logs stored beside a Claude Code session.
	Subagents []string
	// Persisted counts the large outputs Claude Code saved beside the
	// session instead of sending them.
	Persisted PersistedOutputs
	// Session is the id of the session imported from a store of several.
	Session string
	// Cwd is the directory the agent worked in, when the recording says.
	Cwd string
}

// Load imports the session recorded in the file at path. The format is
// detected from the content unless opts.Format names it. The conversation
// is repaired (Session.Fixes) and must then pass conv.Check, or Load fails:
// it never returns a partial result without saying what was left out.
func Load(ctx context.Context, path string, opts Options) (*Session, error) {
	if file, session, ok := strings.Cut(path, "#"); ok && opts.Session == "" {
		if _, err := os.Stat(path); err != nil {
			path, opts.Session = file, session
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{Path: path, Err: err}
	}
	if fi.IsDir() {
		return nil, &Error{Path: path, Err: errors.New("is a directory, not a session file")}
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or a device would block the reader, or never end.
		return nil, &Error{Path: path, Err: errors.New("is not a regular file (a FIFO, a device or a socket); give a session file")}
	}
	format := opts.Format
	if format == "" {
		if format, err = detect(path); err != nil {
			return nil, wrap(path, err)
		}
	} else if !slices.Contains(Formats(), format) {
		return nil, &Error{Path: path, Err: fmt.Errorf("%w %q (supported: %s)", ErrUnknownFormat, format, strings.Join(Formats(), ", "))}
	}
	im := &run{ctx: ctx, path: path, strict: opts.Strict, fullOutputs: opts.FullOutputs, session: opts.Session, b: newBuilder(), s: &Session{Format: format}}
	switch format {
	case FormatClaudeCode:
		err = im.claudeCode()
	case FormatCodex:
		err = im.codex()
	case FormatGeminiCLI:
		err = im.gemini()
	case FormatCline:
		err = im.cline()
	case FormatOpencode:
		err = im.opencode()
	case FormatMiniSWEAgent:
		err = im.miniSWEAgent()
	case FormatSWEAgent:
		err = im.sweAgent()
	case FormatOpenHands:
		err = im.openHands()
	case FormatOpenHandsResolver:
		err = im.openHandsResolver()
	case FormatAnthropic, FormatOpenAI, FormatGemini:
		err = im.request(format)
	}
	if err != nil {
		return nil, wrap(path, err)
	}
	im.skipWarnings()
	c, fixes, err := im.b.finish()
	if err != nil {
		if errors.Is(err, ErrNoMessages) && im.unknownNote != "" {
			err = fmt.Errorf("%w; %s", err, im.unknownNote)
		}
		return nil, wrap(path, err)
	}
	if len(im.skipped) > 0 {
		c.Skipped = im.skipped
	}
	im.s.Conv, im.s.Fixes = c, fixes
	im.s.Records = im.total
	im.s.Warnings = im.w.list()
	return im.s, nil
}

// wrap returns err as an *Error for path unless it already is one.
func wrap(path string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Path: path, Err: err}
}

// run is the state of one Load.
type run struct {
	ctx         context.Context
	path        string
	strict      bool
	fullOutputs bool
	session     string
	b           *builder
	s           *Session
	w           warnings
	total       int            // records read, where the format counts them
	skipped     map[string]int // records left out, by type
	// unknownKinds are the skipped record types the importer does not know
	// (a newer or other version of the format).
	unknownKinds map[string]int
	unknownNote  string // the warning about them
	// opaque counts, by type, content blocks of types ctxkit does not
	// know, kept whole as opaque blocks.
	opaque map[string]int
}

// countOpaque counts the opaque blocks of bs, tool results' content
// included, by their provider's type.
func (r *run) countOpaque(bs []conv.Block) {
	for i := range bs {
		if bs[i].Type == conv.TypeOpaque {
			if r.opaque == nil {
				r.opaque = map[string]int{}
			}
			r.opaque[bs[i].RawType()]++
		}
		r.countOpaque(bs[i].Content)
	}
}

// skip counts a record the importer recognised and left out on purpose.
func (r *run) skip(kind string) {
	if r.skipped == nil {
		r.skipped = map[string]int{}
	}
	r.skipped[kind]++
}

// unknown counts a record of a type the importer does not know: it is
// skipped and reported in a warning.
func (r *run) unknown(kind string) {
	r.skip(kind)
	if r.unknownKinds == nil {
		r.unknownKinds = map[string]int{}
	}
	r.unknownKinds[kind]++
}

// skipWarnings warns about record types the importer does not know: the
// file may be from a version of the format it was not written against, and
// what it left out may have mattered.
func (r *run) skipWarnings() {
	if len(r.opaque) > 0 {
		n, parts := 0, []string{}
		for _, k := range slices.Sorted(maps.Keys(r.opaque)) {
			n += r.opaque[k]
			parts = append(parts, fmt.Sprintf("%s: %d", k, r.opaque[k]))
		}
		r.w.add("kept %d content block(s) of types ctxkit does not know (%s) whole, as opaque blocks: counted, sent back unchanged to their provider, never compacted", n, strings.Join(parts, ", "))
	}
	if len(r.unknownKinds) == 0 {
		return
	}
	n := 0
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.unknownKinds)) {
		n += r.unknownKinds[k]
		parts = append(parts, fmt.Sprintf("%s: %d", k, r.unknownKinds[k]))
	}
	share := ""
	if r.total > 0 {
		share = fmt.Sprintf(" of %d", r.total)
	}
	r.unknownNote = fmt.Sprintf("skipped %d record(s)%s of types this importer does not know (%s); the file may be from another version of the format", n, share, strings.Join(parts, ", "))
	r.w.add("%s", r.unknownNote)
}

// lineErr returns an error located at line.
func (r *run) lineErr(line int, err error) error {
	return &Error{Path: r.path, Line: line, Err: err}
}

// maxWarnings bounds Session.Warnings; the rest are counted.
const maxWarnings = 50

type warnings struct {
	msgs    []string
	dropped int
}

func (w *warnings) add(format string, args ...any) {
	if len(w.msgs) >= maxWarnings {
		w.dropped++
		return
	}
	w.msgs = append(w.msgs, fmt.Sprintf(format, args...))
}

func (w *warnings) list() []string {
	if w.dropped > 0 {
		return append(w.msgs, fmt.Sprintf("… and %d more warnings", w.dropped))
	}
	return w.msgs
}
