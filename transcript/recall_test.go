package transcript_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/transcript"
)

func TestRecallText(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("go"))
	f.add(conv.RoleAssistant, conv.NewToolUse("t1", "Bash", json.RawMessage(`{"command":"seq 5"}`)))
	f.add(conv.RoleUser, conv.NewToolResult("t1", "Bash", "1\n2\n3\n4\n5\n", false))
	f.add(conv.RoleAssistant, conv.NewToolUse("t2", "Read", json.RawMessage(`{"path":"a"}`)))
	f.add(conv.RoleUser, conv.Block{Type: conv.TypeToolResult, ToolUseID: "t2", Content: []conv.Block{
		{Type: conv.TypeText, Text: "first part"},
		{Type: conv.TypeImage, ImageSource: json.RawMessage(`{"type":"url","url":"u"}`)},
		{Type: conv.TypeText, Text: "second part"},
	}})
	f.keep(f.rung("b3", conv.RungPlaceholder, "[cleared: Bash seq 5 — recall b3]"))
	tests := []struct {
		id       string
		from, to int
		want     string
		err      string
	}{
		{"b3", 0, 0, "1\n2\n3\n4\n5\n", ""},
		{"b3", 2, 3, "2\n3\n", ""},
		{"b3", 4, 0, "4\n5\n", ""},
		{"b3", 0, 1, "1\n", ""},
		{"b3", 5, 99, "5\n", ""},
		{"b3", 6, 7, "", "has 5 lines"},
		{"b3", 3, 2, "", "empty"},
		{"b3", -1, 2, "", "count from 1"},
		{"b2", 0, 0, `Bash {"command":"seq 5"}`, ""},
		{"b1", 0, 0, "go", ""},
		{"b5", 0, 0, "first part\nsecond part", ""},
		{"b5", 2, 2, "second part", ""},
		{"b6", 0, 0, "first part", ""}, // a nested block by its own id
		{"b7", 0, 0, "", "image"},
		{"b99", 0, 0, "", "unknown recall id"},
	}
	for _, tt := range tests {
		got, err := transcript.RecallText(f.s, tt.id, tt.from, tt.to)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("RecallText(%s, %d, %d) = %q, %v; want error %q", tt.id, tt.from, tt.to, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("RecallText(%s, %d, %d) = %q, %v; want %q", tt.id, tt.from, tt.to, got, err, tt.want)
		}
	}
}

func TestRunRecall(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("line one\nline two\nline three"))
	tool := transcript.RecallTool()
	if tool.Name != "recall" || !json.Valid(tool.InputSchema) {
		t.Fatalf("tool %+v", tool)
	}
	tests := []struct {
		input, want, err string
	}{
		{`{"id":"b1"}`, "line one\nline two\nline three", ""},
		{`{"id":"b1","from":2,"to":2}`, "line two\n", ""},
		{`{"id":" b1 ","from":3}`, "line three", ""},
		{`{"id":"b2"}`, "", "unknown recall id"},
		{`{}`, "", "no id"},
		{`{"id":1}`, "", "bad input"},
		{`not json`, "", "bad input"},
	}
	for _, tt := range tests {
		got, err := transcript.RunRecall(f.s, json.RawMessage(tt.input))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("RunRecall(%s) = %q, %v; want error %q", tt.input, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("RunRecall(%s) = %q, %v; want %q", tt.input, got, err, tt.want)
		}
	}
}

// TestOtherLayout reads a record whose keys were reordered and spaced (a
// line edited by hand, or written by another tool): the layout is JSON, not
// a byte format.
func TestOtherLayout(t *testing.T) {
	f := newFixture(t)
	f.add(conv.RoleUser, userText("hello"))
	f.s.Close()
	path := filepath.Join(f.dir, transcript.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[1]), &env); err != nil {
		t.Fatal(err)
	}
	lines[1] = `{ "data": ` + string(env["data"]) + `, "crc": ` + string(env["crc"]) + `, "type": "message", "seq": 2 }` + "\n"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	f.verify(f.reopen())
}

func TestRecallDuringWrites(t *testing.T) {
	// Recall and Conversation run while another goroutine appends: -race
	// checks the locking.
	f := newFixture(t)
	f.add(conv.RoleUser, userText("start"))
	done := make(chan error)
	go func() {
		c := f.c.Clone()
		for i := range 50 {
			role := conv.RoleAssistant
			if i%2 == 1 {
				role = conv.RoleUser
			}
			c.Append(conv.Message{Role: role, Blocks: []conv.Block{conv.NewText(conv.SourceTool, strings.Repeat("x", i+1))}})
			if err := f.s.Append(context.Background(), c.Messages[len(c.Messages)-1]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 200 {
		if _, err := f.s.Recall("b1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Recall("b40"); err != nil && !errors.Is(err, transcript.ErrUnknownID) {
			t.Fatal(err)
		}
		f.s.Conversation()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func BenchmarkAppend(b *testing.B) {
	s, err := transcript.Create(filepath.Join(b.TempDir(), "sess"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := &conv.Conversation{}
	text := strings.Repeat("output line\n", 400) // ~5 KB, a typical tool result
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceTool, text)}})
		if err := s.Append(context.Background(), c.Messages[len(c.Messages)-1]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetState is the record the agent adds to each request: the
// engine's account, about 150 bytes of JSON, fsync'd.
func BenchmarkSetState(b *testing.B) {
	s, err := transcript.Create(filepath.Join(b.TempDir(), "sess"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	state := json.RawMessage(`{"requests":120,"saved":123456.75,"full":183211,"started":true,"messages":241,"arrived":812}`)
	b.SetBytes(int64(len(state)))
	for b.Loop() {
		if err := s.SetState(context.Background(), state); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSession writes n messages of about 5 KB.
func benchSession(b *testing.B, n int) string {
	dir := filepath.Join(b.TempDir(), "sess")
	s, err := transcript.Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	c := &conv.Conversation{}
	for i := range n {
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceTool, strings.Repeat("output line "+string(rune('a'+i%26))+"\n", 350))}})
		if err := s.Append(context.Background(), c.Messages[i]); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	return dir
}

func BenchmarkRecall(b *testing.B) {
	s, err := transcript.OpenReadOnly(benchSession(b, 500))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	i := 0
	for b.Loop() {
		i = (i + 7) % 500
		if _, err := s.Recall("b" + string(rune('1'+i%9))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	dir := benchSession(b, 500)
	fi, err := os.Stat(filepath.Join(dir, transcript.FileName))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		s, err := transcript.OpenReadOnly(dir)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
