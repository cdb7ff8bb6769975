package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/transcript"
)

// fixture drives a conversation and its store side by side, as the agent
// does: append to the conversation, record, and for an edit record first,
// then apply.
type fixture struct {
	t    testing.TB
	dir  string
	s    *transcript.Store
	c    *conv.Conversation
	orig map[string]conv.Block // every block as first appended
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sess")
	s, err := transcript.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{t: t, dir: dir, s: s, c: &conv.Conversation{}, orig: map[string]conv.Block{}}
}

func (f *fixture) header(system []conv.Block, tools []conv.Tool) {
	f.t.Helper()
	if err := f.s.SetHeader(context.Background(), system, tools); err != nil {
		f.t.Fatal(err)
	}
	f.c.System, f.c.Tools = system, tools
	for _, b := range system {
		if b.ID != "" {
			f.orig[b.ID] = b.Clone()
		}
	}
}

func (f *fixture) add(role conv.Role, bs ...conv.Block) *conv.Message {
	f.t.Helper()
	f.c.Append(conv.Message{Role: role, Blocks: bs})
	m := &f.c.Messages[len(f.c.Messages)-1]
	if err := f.s.Append(context.Background(), *m); err != nil {
		f.t.Fatal(err)
	}
	for _, b := range m.Blocks {
		f.orig[b.ID] = b.Clone()
		for _, n := range b.Content {
			f.orig[n.ID] = n.Clone()
		}
	}
	f.check()
	return m
}

func (f *fixture) keep(e conv.Edit) {
	f.t.Helper()
	if err := f.s.Keep(context.Background(), e, f.c); err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.Apply(e); err != nil {
		f.t.Fatal(err)
	}
	f.check()
}

func (f *fixture) check() {
	f.t.Helper()
	if vs := conv.Check(f.c); len(vs) > 0 {
		f.t.Fatal(vs.Err())
	}
}

// rung moves the block with id down to rung r with text.
func (f *fixture) rung(id string, r conv.Rung, text string) conv.Edit {
	i, j := f.c.Find(id)
	if i < 0 {
		f.t.Fatalf("no block %s", id)
	}
	b := f.c.Messages[i].Blocks[j].Clone()
	b.SetText(text, r)
	return conv.Edit{Kind: conv.EditRung, Reason: "test", Blocks: []conv.Block{b}}
}

// convOpts compares conversations as replay must rebuild them: times by
// instant, nil and empty alike.
var convOpts = cmp.Options{cmpopts.EquateEmpty()}

func (f *fixture) verify(s *transcript.Store) {
	f.t.Helper()
	if diff := cmp.Diff(f.c, s.Conversation(), convOpts); diff != "" {
		f.t.Fatalf("rebuilt conversation differs (-want +got):\n%s", diff)
	}
	for id, want := range f.orig {
		got, err := s.Recall(id)
		if err != nil {
			f.t.Fatalf("Recall(%s): %v", id, err)
		}
		if diff := cmp.Diff(want, got, convOpts); diff != "" {
			f.t.Fatalf("Recall(%s) differs (-want +got):\n%s", id, diff)
		}
	}
	if vs := conv.Check(s.Conversation()); len(vs) > 0 {
		f.t.Fatal(vs.Err())
	}
}

// reopen closes the fixture's store and opens the session again.
func (f *fixture) reopen() *transcript.Store {
	f.t.Helper()
	if err := f.s.Close(); err != nil {
		f.t.Fatal(err)
	}
	s, err := transcript.Open(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	if w := s.Warnings(); len(w) > 0 {
		f.t.Fatalf("warnings on a clean transcript: %q", w)
	}
	f.s = s
	return s
}

var created = time.Date(2026, 1, 5, 15, 4, 5, 123456789, time.FixedZone("CET", 3600))

func userText(s string) conv.Block {
	b := conv.NewText(conv.SourceUser, s)
	b.Meta.CreatedAt = created
	return b
}

func bashResult(id, out string) conv.Block {
	b := conv.NewToolResult(id, "Bash", out, false)
	b.Structured = json.RawMessage(`{"status":"ok","data":{"exit_code":1}}`)
	return b
}

// session writes a conversation with every block type, invalid UTF-8,
// raw JSON with spaces, and a second round.
func session(f *fixture) {
	f.header([]conv.Block{{ID: "", Type: conv.TypeText, Text: "You are a coding agent.", Meta: conv.DefaultMeta(conv.TypeText, conv.SourceSystem)}},
		[]conv.Tool{{Name: "Bash", Description: "run a command", InputSchema: json.RawMessage(`{"type": "object", "properties": {"command": {"type":"string"}}}`)}})
	img := conv.Block{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceUser)}
	f.add(conv.RoleUser, userText("fix the failing tests <please> & thanks"), img)
	f.add(conv.RoleAssistant,
		conv.NewThinking("Let me run the tests first.", "sig-abc"),
		conv.Block{Type: conv.TypeRedactedThinking, Data: "EmwKAhgBEgy3va3pzix", Meta: conv.DefaultMeta(conv.TypeRedactedThinking, conv.SourceAssistant)},
		conv.NewText(conv.SourceAssistant, "Running the tests."),
		conv.NewToolUse("toolu_1", "Bash", json.RawMessage(`{"command": "go test ./...",  "timeout": 120}`)))
	f.add(conv.RoleUser, bashResult("toolu_1", "--- FAIL: TestX (0.00s)\n    x_test.go:12: got \xff\xfe, want 1\nFAIL\nexit status 1\n"+strings.Repeat("log line\n", 50)))
	f.add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "Reading the test."),
		conv.NewToolUse("toolu_2", "Read", json.RawMessage(`{"path":"x_test.go"}`)))
	f.add(conv.RoleUser, conv.Block{Type: conv.TypeToolResult, ToolUseID: "toolu_2", Name: "Read",
		Content: []conv.Block{
			{Type: conv.TypeText, Text: "package x\n\nfunc TestX(t *testing.T) {}\n", Meta: conv.DefaultMeta(conv.TypeText, conv.SourceTool)},
			{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"url","url":"https://example.com/a.png"}`), Meta: conv.DefaultMeta(conv.TypeImage, conv.SourceTool)},
		}, Meta: conv.DefaultMeta(conv.TypeToolResult, conv.SourceTool)})
	f.add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "Fixed."))
	f.add(conv.RoleUser, userText("now list the files"))
	f.add(conv.RoleAssistant, conv.NewToolUse("toolu_3", "LS", json.RawMessage(`{"path":"."}`)))
	f.add(conv.RoleUser, conv.NewToolResult("toolu_3", "LS", strings.Repeat("file.go\n", 30), false))
	f.add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "30 files."))
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		steps func(f *fixture)
	}{
		{"empty", func(f *fixture) {}},
		{"header only", func(f *fixture) {
			f.header([]conv.Block{conv.NewText(conv.SourceSystem, "sys")}, nil)
		}},
		{"messages", session},
		{"rung edits", func(f *fixture) {
			session(f)
			f.keep(f.rung("b7", conv.RungCompressed, "--- FAIL: TestX\n… 52 more lines; recall b7"))
			f.keep(f.rung("b7", conv.RungPlaceholder, `[cleared: Bash "go test ./..." exit 1 — recall b7]`))
			f.keep(f.rung("b10", conv.RungPlaceholder, "[cleared: Read x_test.go — recall b10]"))
		}},
		{"replace with summary", func(f *fixture) {
			session(f)
			f.keep(f.rung("b7", conv.RungPlaceholder, `[cleared: Bash "go test ./..." exit 1 — recall b7]`))
			// Turns 1 become a summary; the user text of turn 2 joins it.
			next := f.c.Messages[6].Blocks[0].Clone()
			f.keep(conv.Edit{Kind: conv.EditReplace, Reason: "compact:auto", From: 0, To: 7, Messages: []conv.Message{
				{Role: conv.RoleUser, Turn: 1, Blocks: []conv.Block{conv.NewSummary("Fixed TestX in x_test.go.", conv.Span{First: 1, Last: 1}), next}},
			}})
			f.keep(f.rung("b16", conv.RungPlaceholder, "[cleared: LS . — recall b16]"))
			// The summary got the next id; it is recallable as first recorded.
			if f.c.Messages[0].Blocks[0].ID != "b18" || f.c.Seq != 18 {
				t.Fatalf("summary id %s, Seq %d", f.c.Messages[0].Blocks[0].ID, f.c.Seq)
			}
			f.orig["b18"] = f.c.Messages[0].Blocks[0].Clone()
		}},
		{"ids handed out but never recorded", func(f *fixture) {
			session(f)
			f.c.NewID() // say, a pending reminder that was dropped
			f.c.NewID()
			f.keep(f.rung("b7", conv.RungPlaceholder, "[cleared — recall b7]"))
			if f.c.Seq != 19 {
				t.Fatalf("Seq %d", f.c.Seq)
			}
		}},
		{"new header later", func(f *fixture) {
			session(f)
			f.header([]conv.Block{conv.NewText(conv.SourceSystem, "new system prompt")}, nil)
			f.add(conv.RoleUser, userText("go on"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.steps(f)
			f.verify(f.s) // the live store holds the same state
			f.verify(f.reopen())
			ro, err := transcript.OpenReadOnly(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			f.verify(ro)
			// Appending after a reopen continues the same file.
			if n := len(f.c.Messages); n > 0 && f.c.Messages[n-1].Role == conv.RoleUser {
				f.add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "after reopen"))
			} else {
				f.add(conv.RoleUser, userText("after reopen"))
			}
			f.verify(f.reopen())
			data, err := os.ReadFile(filepath.Join(f.dir, transcript.FileName))
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.Valid(data) {
				t.Error("transcript is not valid UTF-8")
			}
		})
	}
}

func TestInvalidUTF8RoundTrips(t *testing.T) {
	f := newFixture(t)
	bad := "binary \xff\xfe\x00 output\xc3"
	f.add(conv.RoleUser, userText("run it"))
	f.add(conv.RoleAssistant, conv.NewToolUse("t1", "Bash", json.RawMessage(`{"command":"cat bin"}`)))
	m := f.add(conv.RoleUser, conv.NewToolResult("t1", "Bash", bad, false))
	id := m.Blocks[0].ID
	got, err := transcript.RecallText(f.reopen(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got != bad {
		t.Fatalf("recalled %q, want %q", got, bad)
	}
	if got := f.s.Conversation().Messages[2].Blocks[0].Text; got != bad {
		t.Fatalf("rebuilt %q, want %q", got, bad)
	}
}

func TestTornTail(t *testing.T) {
	// The session before its last record, and the file with that record.
	f := newFixture(t)
	session(f)
	before := f.c.Clone()
	f.add(conv.RoleUser, userText("the last record, torn by a crash"))
	f.s.Close()
	path := filepath.Join(f.dir, transcript.FileName)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	flipped := bytes.Clone(full)
	flipped[len(flipped)-10] ^= 0x01

	tests := []struct {
		name string
		data []byte
	}{
		{"cut after one byte", full[:lastStart+1]},
		{"cut mid-record", full[:lastStart+(len(full)-lastStart)/2]},
		{"cut before the newline", full[:len(full)-1]},
		{"zeros after a crash", append(bytes.Clone(full[:lastStart]), make([]byte, 4096)...)},
		{"garbled last line", flipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sess")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, transcript.FileName)
			if err := os.WriteFile(p, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			// A reader ignores the torn line and leaves the file alone.
			ro, err := transcript.OpenReadOnly(dir)
			if err != nil {
				t.Fatal(err)
			}
			if w := ro.Warnings(); len(w) != 1 || !strings.Contains(w[0], "torn") {
				t.Fatalf("warnings %q, want one about the torn record", w)
			}
			if diff := cmp.Diff(before, ro.Conversation(), convOpts); diff != "" {
				t.Fatalf("state before the torn record lost (-want +got):\n%s", diff)
			}
			ro.Close()
			if got, _ := os.ReadFile(p); !bytes.Equal(got, tt.data) {
				t.Fatal("OpenReadOnly changed the file")
			}
			// A writer cuts it off, keeps it aside, and appends cleanly.
			s, err := transcript.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if w := s.Warnings(); len(w) != 1 {
				t.Fatalf("warnings %q, want one", w)
			}
			kept, _ := filepath.Glob(filepath.Join(dir, "torn-*.jsonl"))
			if len(kept) != 1 {
				t.Fatalf("torn records kept: %v", kept)
			}
			if got, _ := os.ReadFile(kept[0]); !bytes.Equal(got, tt.data[lastStart:]) {
				t.Fatalf("kept %q, want the torn bytes", got)
			}
			c := s.Conversation()
			c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{userText("resumed")}})
			if err := s.Append(context.Background(), c.Messages[len(c.Messages)-1]); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s, err = transcript.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if w := s.Warnings(); len(w) != 0 {
				t.Fatalf("warnings after recovery: %q", w)
			}
			if diff := cmp.Diff(c, s.Conversation(), convOpts); diff != "" {
				t.Fatalf("resumed state (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTornEveryOffset cuts the last record at every byte.
func TestTornEveryOffset(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("first"))
	before := f.c.Clone()
	f.add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "a reply with \xff bytes and <html> & \"quotes\"\nand lines"))
	f.s.Close()
	full, err := os.ReadFile(filepath.Join(f.dir, transcript.FileName))
	if err != nil {
		t.Fatal(err)
	}
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	dir := filepath.Join(t.TempDir(), "sess")
	os.MkdirAll(dir, 0o700)
	for cut := lastStart + 1; cut < len(full); cut++ {
		if err := os.WriteFile(filepath.Join(dir, transcript.FileName), full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := transcript.OpenReadOnly(dir)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(s.Warnings()) != 1 {
			t.Fatalf("cut at %d: warnings %q", cut, s.Warnings())
		}
		if diff := cmp.Diff(before, s.Conversation(), convOpts); diff != "" {
			t.Fatalf("cut at %d (-want +got):\n%s", cut, diff)
		}
		s.Close()
	}
}

func TestCorruptMiddle(t *testing.T) {
	f := newFixture(t)
	session(f) // 12 lines: session, header, 10 messages
	f.s.Close()
	full, err := os.ReadFile(filepath.Join(f.dir, transcript.FileName))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(full, []byte("\n"))
	lines = lines[:len(lines)-1]
	join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
	edit := func(i int, fn func([]byte) []byte) []byte {
		ls := slices.Clone(lines)
		ls[i] = fn(bytes.Clone(ls[i]))
		return join(ls)
	}
	tests := []struct {
		name string
		data []byte
		line int
		want string
	}{
		{"flipped byte", edit(4, func(b []byte) []byte { b[len(b)/2] ^= 0x20; return b }), 5, ""},
		{"line cut short", edit(4, func(b []byte) []byte { return append(b[:len(b)/2], '\n') }), 5, ""},
		{"line dropped", join(slices.Delete(slices.Clone(lines), 6, 7)), 7, "sequence number"},
		{"line doubled", join(slices.Insert(slices.Clone(lines), 6, lines[6])), 8, "sequence number"},
		{"empty line", join(slices.Insert(slices.Clone(lines), 3, []byte("\n"))), 4, ""},
		{"session record missing", join(lines[1:]), 1, "session record"},
		{"invalid UTF-8", edit(2, func(b []byte) []byte { return bytes.Replace(b, []byte("e"), []byte("\xff"), 1) }), 3, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sess")
			os.MkdirAll(dir, 0o700)
			if err := os.WriteFile(filepath.Join(dir, transcript.FileName), tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, open := range []func(string) (*transcript.Store, error){transcript.Open, transcript.OpenReadOnly} {
				s, err := open(dir)
				if err == nil {
					s.Close()
					t.Fatal("opened a transcript corrupt in the middle")
				}
				var ce *transcript.CorruptError
				if !errors.Is(err, transcript.ErrCorrupt) || !errors.As(err, &ce) {
					t.Fatalf("error %v is not a CorruptError", err)
				}
				if ce.Line != tt.line || !strings.Contains(err.Error(), fmt.Sprintf(":%d ", tt.line)) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %q, want line %d and %q", err, tt.line, tt.want)
				}
			}
			// Nothing was cut from a file that is corrupt in the middle.
			if got, _ := os.ReadFile(filepath.Join(dir, transcript.FileName)); !bytes.Equal(got, tt.data) {
				t.Fatal("the file was changed")
			}
		})
	}
}

func TestLock(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("hi"))
	if s, err := transcript.Open(f.dir); !errors.Is(err, transcript.ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if _, err := transcript.Create(f.dir); !errors.Is(err, transcript.ErrLocked) {
		t.Fatalf("Create over an open session: %v, want ErrLocked", err)
	}
	ro, err := transcript.OpenReadOnly(f.dir)
	if err != nil {
		t.Fatalf("a reader is refused: %v", err)
	}
	ro.Close()
	f.s.Close()
	s, err := transcript.Open(f.dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s.Close()
	if _, err := transcript.Create(f.dir); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing session: %v, want fs.ErrExist", err)
	}
	if _, err := transcript.Open(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a folder without transcript: %v, want fs.ErrNotExist", err)
	}
}

func TestRecallUnknown(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("hi"))
	for _, id := range []string{"b99", "", "r1", "b1 "} {
		if _, err := f.s.Recall(id); !errors.Is(err, transcript.ErrUnknownID) {
			t.Errorf("Recall(%q): %v, want ErrUnknownID", id, err)
		}
		if _, err := transcript.RecallText(f.s, id, 0, 0); !errors.Is(err, transcript.ErrUnknownID) {
			t.Errorf("RecallText(%q): %v, want ErrUnknownID", id, err)
		}
	}
}

func TestKeepRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(f *fixture) conv.Edit
		want error
	}{
		{"rung edit of a block never appended", func(f *fixture) conv.Edit {
			// Added to the conversation but not to the transcript.
			f.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "unrecorded")}})
			return f.rung(f.c.Messages[len(f.c.Messages)-1].Blocks[0].ID, conv.RungPlaceholder, "[cleared]")
		}, transcript.ErrNotDurable},
		{"replace over a message never appended", func(f *fixture) conv.Edit {
			f.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "unrecorded")}})
			return conv.Edit{Kind: conv.EditReplace, From: 8, To: len(f.c.Messages), Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewSummary("s", conv.Span{First: 2, Last: 2})}}}}
		}, transcript.ErrNotDurable},
		{"replace over a message the transcript holds differently", func(f *fixture) conv.Edit {
			// The conversation lost a message the transcript has, so indexes shifted.
			f.c.Messages = slices.Delete(f.c.Messages, 2, 4)
			return conv.Edit{Kind: conv.EditReplace, From: 2, To: 4, Messages: nil}
		}, transcript.ErrNotDurable},
		{"rung edit of an unknown block", func(f *fixture) conv.Edit {
			return conv.Edit{Kind: conv.EditRung, Blocks: []conv.Block{{ID: "b999", Type: conv.TypeText, Text: "x"}}}
		}, transcript.ErrNotDurable},
		{"replace out of range", func(f *fixture) conv.Edit {
			return conv.Edit{Kind: conv.EditReplace, From: 5, To: 50}
		}, conv.ErrEdit},
		{"unknown kind", func(f *fixture) conv.Edit {
			return conv.Edit{Kind: "delete"}
		}, conv.ErrEdit},
		{"rung edit of a block replaced away", func(f *fixture) conv.Edit {
			next := f.c.Messages[6].Blocks[0].Clone()
			f.keep(conv.Edit{Kind: conv.EditReplace, From: 0, To: 7, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewSummary("s", conv.Span{First: 1, Last: 1}), next}}}})
			return conv.Edit{Kind: conv.EditRung, Blocks: []conv.Block{{ID: "b7", Type: conv.TypeToolResult, ToolUseID: "toolu_1", Text: "x"}}}
		}, conv.ErrEdit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			session(f)
			e := tt.edit(f)
			want := f.s.Conversation()
			if err := f.s.Keep(context.Background(), e, f.c); !errors.Is(err, tt.want) {
				t.Fatalf("Keep: %v, want %v", err, tt.want)
			}
			// Nothing was recorded.
			if diff := cmp.Diff(want, f.reopen().Conversation(), convOpts); diff != "" {
				t.Fatalf("a refused edit changed the transcript (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendRejects(t *testing.T) {
	tests := []struct {
		name string
		m    conv.Message
		want string
	}{
		{"block without id", conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{userText("x")}}, "has no id"},
		{"nested block without id", conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{ID: "b50", Type: conv.TypeToolResult, ToolUseID: "t", Content: []conv.Block{{Type: conv.TypeText, Text: "x"}}}}}, "has no id"},
		{"id already recorded", conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{ID: "b1", Type: conv.TypeText, Text: "x"}}}, "already recorded"},
		{"id twice in the message", conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{ID: "b50", Type: conv.TypeText, Text: "x"}, {ID: "b50", Type: conv.TypeText, Text: "y"}}}, "two blocks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.add(conv.RoleUser, userText("hi"))
			if err := f.s.Append(context.Background(), tt.m); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Append: %v, want an error saying %q", err, tt.want)
			}
			if n := len(f.reopen().Conversation().Messages); n != 1 {
				t.Fatalf("%d messages recorded, want 1", n)
			}
		})
	}
}

func TestSpill(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	data := []byte(strings.Repeat("huge output line\n", 10000))
	path, err := f.s.Spill(ctx, "b7.txt", data)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(f.dir, transcript.SpillDir, "b7.txt"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatal("spilled bytes differ")
	}
	if again, err := f.s.Spill(ctx, "b7.txt", data); err != nil || again != path {
		t.Fatalf("same spill again: %s, %v", again, err)
	}
	if _, err := f.s.Spill(ctx, "b7.txt", []byte("other")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("spill over other content: %v, want fs.ErrExist", err)
	}
	for _, name := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd", ".hidden", `a\b`, "a\x00b"} {
		if _, err := f.s.Spill(ctx, name, data); err == nil {
			t.Errorf("Spill(%q) accepted", name)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(f.dir, transcript.SpillDir, ".spill-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	f.reopen() // the spill record replays
}

// TestState: the last state recorded is the one a reopened session
// holds, records between states included; what is not one JSON object is
// refused and leaves the state as it was.
func TestState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if got := f.s.State(); got != nil {
		t.Fatalf("a new session's state: %s", got)
	}
	f.add(conv.RoleUser, userText("hi"))
	if err := f.s.SetState(ctx, json.RawMessage(`{"requests": 1, "saved": 0.5}`)); err != nil {
		t.Fatal(err)
	}
	f.add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "hello"))
	if err := f.s.SetState(ctx, json.RawMessage(`{"requests":2,"saved":1.25}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{``, `null`, `[1]`, `"x"`, `{"a":`, `{} {}`} {
		if err := f.s.SetState(ctx, json.RawMessage(bad)); err == nil {
			t.Errorf("SetState(%q) accepted", bad)
		}
	}
	const want = `{"requests":2,"saved":1.25}`
	if got := string(f.s.State()); got != want {
		t.Fatalf("state %s, want %s", got, want)
	}
	f.reopen()
	f.verify(f.s)
	if got := string(f.s.State()); got != want {
		t.Fatalf("reopened state %s, want %s", got, want)
	}
	ro, err := transcript.OpenReadOnly(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := string(ro.State()); got != want {
		t.Fatalf("read-only state %s, want %s", got, want)
	}
	if err := ro.SetState(ctx, json.RawMessage(want)); err == nil {
		t.Error("a read-only store recorded a state")
	}
}

func TestClosedAndReadOnly(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("hi"))
	ctx := context.Background()
	ro, err := transcript.OpenReadOnly(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	m := conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{{ID: "b9", Type: conv.TypeText, Text: "x"}}}
	if err := ro.Append(ctx, m); !errors.Is(err, transcript.ErrReadOnly) {
		t.Errorf("read-only Append: %v", err)
	}
	if _, err := ro.Spill(ctx, "x", nil); !errors.Is(err, transcript.ErrReadOnly) {
		t.Errorf("read-only Spill: %v", err)
	}
	ro.Close()
	f.s.Close()
	if err := f.s.Append(ctx, m); !errors.Is(err, transcript.ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := f.s.Recall("b1"); !errors.Is(err, transcript.ErrClosed) {
		t.Errorf("Recall after Close: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s := f.reopen()
	if err := s.Append(cctx, m); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a canceled context: %v", err)
	}
}

func TestNewSessionID(t *testing.T) {
	var ids []string
	for range 5 {
		ids = append(ids, transcript.NewSessionID())
		time.Sleep(2 * time.Microsecond)
	}
	if !slices.IsSorted(ids) {
		t.Errorf("ids do not sort by time: %q", ids)
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("duplicate ids: %q", ids)
	}
	for _, id := range ids {
		if !filepath.IsLocal(id) || strings.ContainsAny(id, `/\ :`) {
			t.Errorf("id %q is not a plain folder name", id)
		}
	}
	d, err := transcript.DefaultDir()
	if err != nil || !strings.HasSuffix(d, filepath.Join(".ctxkit", "sessions")) {
		t.Errorf("DefaultDir() = %q, %v", d, err)
	}
}
