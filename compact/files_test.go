package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// carried returns the files c carries, by path, each with the recall id
// its block names.
func carried(c *conv.Conversation) map[string]string {
	out := map[string]string{}
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if path, id, _, ok := parseFile(b.Text); ok && b.Type == conv.TypeText {
				if _, dup := out[path]; dup {
					out[path] = "DUPLICATE"
					continue
				}
				out[path] = id
			}
		}
	}
	return out
}

// filesSession: rounds that each read two files, then edit the first;
// the reads of the second stay current. The files' names end in suffix.
func filesSession(rounds int, suffix string) (*conv.Conversation, map[string]string) {
	b := newBuilder()
	reads := map[string]string{} // path → id of its newest read
	input := func(fields map[string]string) string {
		j, _ := json.Marshal(fields) // strings always encode
		return string(j)
	}
	for r := 1; r <= rounds; r++ {
		b.user(fmt.Sprintf("Round %d: go on.", r))
		edited := fmt.Sprintf("edited%d", r) + suffix
		for _, f := range []string{edited, fmt.Sprintf("kept%d", r) + suffix} {
			b.say("Reading "+f, b.call("Read", input(map[string]string{"file_path": f})))
			b.results(big(f, 200))
			m := b.c.Messages[len(b.c.Messages)-1]
			reads[f] = m.Blocks[0].ID
		}
		b.say("Editing", b.call("Edit", input(map[string]string{"file_path": edited, "old_string": "a", "new_string": "b"})))
		b.results("ok")
		b.steps(r, 2, 600)
		b.say(fmt.Sprintf("Round %d done.", r))
	}
	return b.c, reads
}

func TestCompactionCarriesFiles(t *testing.T) {
	// A path that holds a newline, a quote and the header's own text is
	// carried and recognised again all the same.
	odd := "\n\"x\"" + fileHeaderMid + ".go"
	for _, tt := range []struct {
		name   string
		mode   Mode
		suffix string
	}{
		{"round", ModeRound, ".go"},
		{"region", ModeRegion, ".go"},
		{"round, odd path", ModeRound, odd},
		{"region, odd path", ModeRegion, odd},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, reads := filesSession(6, tt.suffix)
			withRequest(c, "go on")
			k, l := keptLadder(c, tt.mode)
			res, err := l.Before(context.Background(), c, k)
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, c)
			if res.Compactions == 0 || res.TokensAfter >= res.TokensBefore {
				t.Fatalf("no automatic compaction that frees tokens: %+v", res)
			}
			got := carried(c)
			if len(got) == 0 {
				t.Fatal("no file carried")
			}
			listed := map[string]bool{}
			for _, s := range summaries(c) {
				for _, e := range parseIndex(s.Text) {
					listed[e.id] = true
				}
			}
			for path, id := range got {
				switch {
				case id == "DUPLICATE":
					t.Errorf("%s carried twice", path)
				case strings.HasPrefix(path, "edited"):
					t.Errorf("%s carried though edited after its read", path)
				case reads[path] != id:
					t.Errorf("%s carried with recall id %s, want its newest read %s", path, id, reads[path])
				case listed[id]:
					t.Errorf("%s: its read has an index line too", path)
				}
				if i, _ := c.Find(id); i >= 0 {
					t.Errorf("%s carried though its read is still in the context", path)
				}
			}
			// The next compaction carries the same blocks as they are:
			// no copy, and no compaction of them alone.
			before := carried(c)
			more := &builder{c: c, n: 1000}
			more.steps(7, 4, 600).say("Round 7 done.").user("Round 8: go on.")
			k.record(c)
			res, err = l.Before(context.Background(), c, k)
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, c)
			if res.Compactions == 0 {
				t.Fatalf("no second compaction: %+v", res)
			}
			again := 0
			for path, id := range carried(c) {
				if _, ok := before[path]; ok {
					again++
				}
				if id == "DUPLICATE" {
					t.Errorf("%s carried twice after a second compaction", path)
				}
				if old, ok := before[path]; ok && old != id {
					t.Errorf("%s: recall id moved from %s to %s", path, old, id)
				}
			}
			if again == 0 {
				t.Errorf("the second compaction carried none of %v again", before)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	tests := []struct {
		name, path, header string // header: fileText's first line, when checked
	}{
		{"plain", "a/b.go", "[File a/b.go" + fileHeaderMid + "m3b1]"},
		{"spaces", "my dir/a b.go", "[File my dir/a b.go" + fileHeaderMid + "m3b1]"},
		{"backslashes", `C:\src\a.go`, `[File C:\src\a.go` + fileHeaderMid + "m3b1]"},
		{"unicode", "docs/übersicht — 概要.md", "[File docs/übersicht — 概要.md" + fileHeaderMid + "m3b1]"},
		{"closing bracket", "a]b.go", "[File a]b.go" + fileHeaderMid + "m3b1]"},
		{"newline", "a\nb.go", `[File "a\nb.go"` + fileHeaderMid + "m3b1]"},
		{"trailing newline", "a.go\n", `[File "a.go\n"` + fileHeaderMid + "m3b1]"},
		{"separator", "a" + fileHeaderMid + "x.go", `[File "a` + fileHeaderMid + `x.go"` + fileHeaderMid + "m3b1]"},
		{"separator and end", "a" + fileHeaderMid + "x]\n", ""},
		{"quote", `say "hi".txt`, `[File "say \"hi\".txt"` + fileHeaderMid + "m3b1]"},
		{"leading quote", `"a.go`, `[File "\"a.go"` + fileHeaderMid + "m3b1]"},
		{"backquote", "`a`.go", "[File `a`.go" + fileHeaderMid + "m3b1]"},
		{"invalid UTF-8", "a\xffb.go", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := carriedFile{path: tt.path, id: "m3b1", content: "package b\n\nfunc B() {}"}
			text := fileText(f)
			if first, _, _ := strings.Cut(text, "\n"); tt.header != "" && first != tt.header {
				t.Errorf("header = %q, want %q", first, tt.header)
			}
			path, id, content, ok := parseFile(text)
			if !ok || path != f.path || id != f.id || content != f.content {
				t.Errorf("parseFile(%q) = %q %q %q %v, want %q %q %q true", text, path, id, content, ok, f.path, f.id, f.content)
			}
		})
	}
}

func TestParseFileRefuses(t *testing.T) {
	for _, text := range []string{
		"",
		"plain text",
		"[File ]",
		"[File a.go]\nx",
		"[File " + fileHeaderMid + "m3b1]\nx",    // no path
		"[File a.go" + fileHeaderMid + "]\nx",    // no id
		"[File a.go" + fileHeaderMid + "m3b1\nx", // no end
		`[File "a.go` + fileHeaderMid + "m3b1]\nx", // an unclosed quote
		`[File ""` + fileHeaderMid + "m3b1]\nx",    // an empty quoted path
		`[File "a"b` + fileHeaderMid + "m3b1]\nx",  // text after the quoted path
	} {
		if path, id, content, ok := parseFile(text); ok {
			t.Errorf("parseFile(%q) = %q %q %q, true", text, path, id, content)
		}
	}
}

// FuzzCarriedFileHeader: parseFile reads back the path, recall id and
// content fileText wrote, for any non-empty path and id (an id holds no
// newline).
//
//	go test ./compact -run '^$' -fuzz FuzzCarriedFileHeader -fuzztime 1m
func FuzzCarriedFileHeader(f *testing.F) {
	f.Add("a/b.go", "m3b1", "package b\n")
	f.Add("a\nb.go", "m3b1", "")
	f.Add(`"a.go"`, "x]", "]\n")
	f.Add("a"+fileHeaderMid+"b", "c"+fileHeaderMid+"d", fileHeaderMid)
	f.Add("a\xff", "\r", "\n\n")
	f.Fuzz(func(t *testing.T, path, id, content string) {
		if path == "" || id == "" || strings.Contains(id, "\n") {
			t.Skip()
		}
		text := fileText(carriedFile{path: path, id: id, content: content})
		gotPath, gotID, gotContent, ok := parseFile(text)
		if !ok || gotPath != path || gotID != id || gotContent != content {
			t.Fatalf("parseFile(%q) = %q %q %q %v, want %q %q %q true", text, gotPath, gotID, gotContent, ok, path, id, content)
		}
	})
}

// keptLadder is a keeper that has seen c and a ladder of the test
// configuration in mode.
func keptLadder(c *conv.Conversation, mode Mode) (*memKeeper, *Ladder) {
	k := newKeeper()
	k.record(c)
	cfg := testConfig()
	cfg.Mode = mode
	return k, New(nil, cfg)
}

// TestManualCompactionCarriesNoFile: a manual compaction keeps only the
// last step; it carries no file either.
func TestManualCompactionCarriesNoFile(t *testing.T) {
	c, _ := filesSession(6, ".go")
	withRequest(c, "go on")
	k, l := keptLadder(c, ModeRound)
	if _, err := l.Compact(context.Background(), c, k, ""); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, c)
	if got := carried(c); len(got) > 0 {
		t.Errorf("a manual compaction carried %v", got)
	}
}

// TestFilesInTheTailAreNotCarried: a file whose newest read the pinned
// tail holds anyway stays there and is not carried, and no empty carrier
// stands in for it.
func TestFilesInTheTailAreNotCarried(t *testing.T) {
	b := newBuilder()
	for r := 1; r <= 6; r++ {
		b.user(fmt.Sprintf("Round %d: go on.", r))
		b.steps(r, 2, 600)
		b.say(fmt.Sprintf("Round %d done.", r))
	}
	b.user("Round 7: look at the two files.")
	for _, f := range []string{"near1.go", "near2.go"} {
		b.say("Reading "+f, b.call("Read", `{"file_path":"`+f+`"}`))
		b.results(big(f, 40))
	}
	b.say("Checking", b.call("Bash", `{"command":"go vet ./..."}`))
	b.results("ok")
	b.say("Both files read.")
	c := b.c
	withRequest(c, "go on")
	k, l := keptLadder(c, ModeRound)
	res, err := l.Before(context.Background(), c, k)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, c)
	if res.Compactions == 0 {
		t.Fatalf("no compaction: %+v", res)
	}
	for path, id := range carried(c) {
		t.Errorf("carried %q (recall %q), though the tail holds the reads", path, id)
	}
	for _, m := range c.Messages {
		for _, b := range m.Blocks {
			if b.Type == conv.TypeText && strings.HasPrefix(b.Text, fileHeader) {
				t.Errorf("a file carrier stands in the context: %.80q", b.Text)
			}
		}
	}
	for _, s := range res.Summaries {
		if len(s.Files) > 0 {
			t.Errorf("summary %s names files %v", s.ID, s.Files)
		}
	}
	text := allText(c)
	for _, f := range []string{"near1.go line 0", "near2.go line 0"} {
		if !strings.Contains(text, f) {
			t.Errorf("%s: the read left the context", f)
		}
	}
}
