package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/transcript"
)

var rewriteRecall = flag.Bool("rewrite-recall", false, "rewrite the session folders in testdata/script/recall.txtar")

const recallScript = "testdata/script/recall.txtar"

// writeRecallSession records, with the real store, the session that
// testdata/script/recall.txtar recalls from: two tool results cleared to
// placeholders, one of them not valid UTF-8.
func writeRecallSession(t *testing.T, dir string) *transcript.Store {
	t.Helper()
	ctx := context.Background()
	s, err := transcript.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetHeader(ctx, []conv.Block{conv.NewText(conv.SourceSystem, "You are a coding agent.")}, nil); err != nil {
		t.Fatal(err)
	}
	c := &conv.Conversation{}
	add := func(role conv.Role, bs ...conv.Block) {
		c.Append(conv.Message{Role: role, Blocks: bs})
		if err := s.Append(ctx, c.Messages[len(c.Messages)-1]); err != nil {
			t.Fatal(err)
		}
	}
	clear := func(id, text string) {
		i, j := c.Find(id)
		b := c.Messages[i].Blocks[j].Clone()
		b.SetText(text, conv.RungPlaceholder)
		e := conv.Edit{Kind: conv.EditRung, Reason: "micro:eager", Blocks: []conv.Block{b}}
		if err := s.Keep(ctx, e, c); err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	add(conv.RoleUser, conv.NewText(conv.SourceUser, "count to five"))                                          // b1
	add(conv.RoleAssistant, conv.NewToolUse("toolu_1", "Bash", json.RawMessage(`{"command":"seq 5"}`)))         // b2
	add(conv.RoleUser, conv.NewToolResult("toolu_1", "Bash", "1\n2\n3\n4\n5\n", false))                         // b3
	add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "Five lines."))                                  // b4
	add(conv.RoleUser, conv.NewText(conv.SourceUser, "now the binary"))                                         // b5
	add(conv.RoleAssistant, conv.NewToolUse("toolu_2", "Bash", json.RawMessage(`{"command":"head -c 8 bin"}`))) // b6
	add(conv.RoleUser, conv.NewToolResult("toolu_2", "Bash", "binary \xff\xfe data\n", false))                  // b7
	add(conv.RoleAssistant, conv.NewText(conv.SourceAssistant, "Binary data."))                                 // b8
	clear("b3", `[cleared: Bash "seq 5" — recall b3]`)
	clear("b7", `[cleared: Bash "head -c 8 bin" — recall b7]`)
	if vs := conv.Check(c); len(vs) > 0 {
		t.Fatal(vs.Err())
	}
	return s
}

// TestRecallScriptSession keeps the session folders inside recall.txtar
// true to what the store writes for writeRecallSession: they must load into
// the same conversation and recall the same blocks. Run with
// -rewrite-recall to write them again.
func TestRecallScriptSession(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sess")
	want := writeRecallSession(t, dir)
	defer want.Close()
	arc, err := txtar.ParseFile(recallScript)
	if err != nil {
		t.Fatal(err)
	}
	if *rewriteRecall {
		full, err := os.ReadFile(filepath.Join(dir, transcript.FileName))
		if err != nil {
			t.Fatal(err)
		}
		// The torn copy ends in half of a next record, as a crash mid-write
		// leaves it (txtar ends it with a newline, which the store takes as
		// a damaged last line: torn just the same).
		want.Close()
		s, err := transcript.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		c := s.Conversation()
		c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "this record is torn by a crash")}})
		if err := s.Append(context.Background(), c.Messages[len(c.Messages)-1]); err != nil {
			t.Fatal(err)
		}
		s.Close()
		more, err := os.ReadFile(filepath.Join(dir, transcript.FileName))
		if err != nil {
			t.Fatal(err)
		}
		torn := more[:len(full)+(len(more)-len(full))/2]
		set := map[string][]byte{"sess/" + transcript.FileName: full, "torn/" + transcript.FileName: torn}
		for i := range arc.Files {
			if data, ok := set[arc.Files[i].Name]; ok {
				arc.Files[i].Data = data
				delete(set, arc.Files[i].Name)
			}
		}
		for name, data := range set {
			arc.Files = append(arc.Files, txtar.File{Name: name, Data: data})
		}
		if err := os.WriteFile(recallScript, txtar.Format(arc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, name := range []string{"sess", "torn"} {
		t.Run(name, func(t *testing.T) {
			got := filepath.Join(t.TempDir(), name)
			os.MkdirAll(got, 0o700)
			found := false
			for _, f := range arc.Files {
				if f.Name == name+"/"+transcript.FileName {
					found = true
					if err := os.WriteFile(filepath.Join(got, transcript.FileName), f.Data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !found {
				t.Fatalf("%s has no %s/%s; run go test -run TestRecallScriptSession -rewrite-recall", recallScript, name, transcript.FileName)
			}
			s, err := transcript.OpenReadOnly(got)
			if err != nil {
				t.Fatalf("%v; run go test -run TestRecallScriptSession -rewrite-recall", err)
			}
			defer s.Close()
			if n := len(s.Warnings()); n != map[string]int{"sess": 0, "torn": 1}[name] {
				t.Fatalf("warnings %q", s.Warnings())
			}
			if diff := cmp.Diff(want.Conversation(), s.Conversation(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("the archived session is stale (-want +got); run go test -run TestRecallScriptSession -rewrite-recall:\n%s", diff)
			}
			for i := 1; i <= 8; i++ {
				id := "b" + string(rune('0'+i))
				wb, werr := want.Recall(id)
				gb, gerr := s.Recall(id)
				if werr != nil || gerr != nil || !cmp.Equal(wb, gb, cmpopts.EquateEmpty()) {
					t.Fatalf("Recall(%s): archived %+v, %v; want %+v, %v", id, gb, gerr, wb, werr)
				}
			}
		})
	}
}

func TestParseLines(t *testing.T) {
	tests := []struct {
		in       string
		from, to int
		ok       bool
	}{
		{"", 0, 0, true},
		{"2:3", 2, 3, true},
		{"4", 4, 4, true},
		{"4:", 4, 0, true},
		{":7", 0, 7, true},
		{":", 0, 0, false},
		{"0:3", 0, 0, false},
		{"a:b", 0, 0, false},
		{"-1", 0, 0, false},
		{"1:2:3", 0, 0, false},
	}
	for _, tt := range tests {
		from, to, err := parseLines(tt.in)
		if (err == nil) != tt.ok || tt.ok && (from != tt.from || to != tt.to) {
			t.Errorf("parseLines(%q) = %d, %d, %v", tt.in, from, to, err)
		}
	}
}
