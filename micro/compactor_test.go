package micro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/pricing"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/toolresult"
)

// session builds a conversation the way an agent grows it and steps a
// Clearer before every request, checking the invariants each time.
type session struct {
	t    tester
	c    *conv.Conversation
	m    *Clearer
	k    *MemoryKeeper
	orig map[string]conv.Block // every result as produced, by id
	n    int
}

// tester is what session needs of *testing.T and *rapid.T.
type tester interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

func newSession(t *testing.T, cfg Config) *session {
	t.Helper()
	s := &session{t: t, c: &conv.Conversation{}, m: New(cfg), k: NewMemoryKeeper(), orig: map[string]conv.Block{}}
	s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "fix the failing tests")}})
	s.step()
	return s
}

// call appends an assistant message calling tool with input and the user
// message with its result, and returns the result's block id.
func (s *session) call(tool, input, result string) string {
	s.t.Helper()
	s.n++
	id := fmt.Sprintf("toolu_%02d", s.n)
	s.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewText(conv.SourceAssistant, "Next step."),
		conv.NewToolUse(id, tool, json.RawMessage(input)),
	}})
	s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewToolResult(id, tool, result, false)}})
	m := s.c.Messages[len(s.c.Messages)-1]
	s.orig[m.Blocks[0].ID] = m.Blocks[0].Clone()
	return m.Blocks[0].ID
}

// say appends an assistant answer and a new user question: the round ends.
func (s *session) say(question string) {
	s.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{conv.NewText(conv.SourceAssistant, "Done.")}})
	s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, question)}})
}

func (s *session) step() Result {
	s.t.Helper()
	res, err := s.m.Step(context.Background(), s.c, s.k)
	if err != nil {
		s.t.Fatalf("Step: %v", err)
	}
	if vs := conv.CheckRequest(s.c); len(vs) > 0 {
		s.t.Fatalf("invariants broken after Step: %v", vs)
	}
	// The incremental token tally matches a count from scratch.
	fresh := s.c.Clone()
	for i := range fresh.Messages {
		for j := range fresh.Messages[i].Blocks {
			fresh.Messages[i].Blocks[j].Meta.Tokens = 0
		}
	}
	if want := fresh.Tokens(s.m.cfg.Counter).Total(); res.Tokens != want {
		s.t.Errorf("Result.Tokens = %d, the conversation counts %d", res.Tokens, want)
	}
	s.checkRecall()
	return res
}

// checkRecall checks that every block below rung 0 names its recall id
// and that the id resolves to the exact original.
func (s *session) checkRecall() {
	s.t.Helper()
	for _, m := range s.c.Messages {
		for _, b := range m.Blocks {
			if b.Type != conv.TypeToolResult || b.Meta.Rung == conv.RungFull {
				continue
			}
			if !strings.Contains(b.Text, "recall "+b.ID) {
				s.t.Errorf("%s at rung %d does not name its recall id: %q", b.ID, b.Meta.Rung, b.Text)
			}
			got, err := s.k.Recall(b.ID)
			if err != nil {
				s.t.Fatalf("recall %s: %v", b.ID, err)
			}
			want := s.orig[b.ID]
			if got.ResultText() != want.ResultText() || got.Meta.Rung != conv.RungFull {
				s.t.Errorf("recall %s: not the original", b.ID)
			}
		}
	}
}

func (s *session) rung(id string) conv.Rung {
	s.t.Helper()
	i, j := s.c.Find(id)
	if i < 0 {
		s.t.Fatalf("no block %s", id)
	}
	return s.c.Messages[i].Blocks[j].Meta.Rung
}

func (s *session) text(id string) string {
	i, j := s.c.Find(id)
	return s.c.Messages[i].Blocks[j].Text
}

func lines(n int, format string) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, format+"\n", i)
	}
	return sb.String()
}

// Seed 003's walk-through: results are cleared only once consumed, the
// three most recent consumed stay whole, short ones and read_file stay.
func TestSeedWalkthrough(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}})
	r1 := s.call("read_file", `{"path":"main.py"}`, lines(200, "line %d of main.py"))
	s.step()
	r2 := s.call("bash", `{"command":"pytest --cov"}`, lines(80, "coverage row %d"))
	s.step()
	r3 := s.call("read_file", `{"path":"test_main.py"}`, lines(150, "test line %d"))
	s.step()
	r4 := s.call("edit_file", `{"path":"test_main.py"}`, "Edited test_main.py")
	if res := s.step(); res.Cleared != 0 {
		t.Fatalf("3 consumed results: cleared %d, want 0", res.Cleared)
	}
	r5 := s.call("bash", `{"command":"pytest"}`, lines(30, "test %d passed"))
	s.step() // consumed r1..r4: r1 leaves the window, but it is a preserved read
	if s.rung(r1) != conv.RungFull {
		t.Errorf("read_file result cleared")
	}
	r6 := s.call("bash", `{"command":"git diff"}`, lines(40, "diff line %d"))
	// (r4 edited test_main.py: r3, its read, is stale from now on.)
	res := s.step() // consumed r1..r5: r2 leaves the window
	if res.Cleared != 1 || s.rung(r2) != conv.RungPlaceholder {
		t.Fatalf("r2 rung %d, cleared %d; want r2 cleared", s.rung(r2), res.Cleared)
	}
	if want := `[cleared: bash "pytest --cov" 80 lines — recall ` + r2 + `]`; s.text(r2) != want {
		t.Errorf("placeholder = %q\nwant %q", s.text(r2), want)
	}
	for _, id := range []string{r1, r4, r5, r6} {
		if s.rung(id) != conv.RungFull {
			t.Errorf("%s moved to rung %d", id, s.rung(id))
		}
	}
	s.call("bash", `{"command":"ls"}`, "a.py\nb.py")
	s.step() // r3 leaves the window: a read, but stale since r4 edited its file
	s.call("bash", `{"command":"ls"}`, "a.py\nb.py")
	s.step() // r4 leaves it: short, skipped
	s.call("bash", `{"command":"ls"}`, "a.py\nb.py")
	s.step() // r5 leaves it
	if s.rung(r1) != conv.RungFull || s.rung(r3) != conv.RungPlaceholder || s.rung(r4) != conv.RungFull || s.rung(r5) != conv.RungPlaceholder {
		t.Errorf("r1 rung %d (want 0: preserved), r3 rung %d (want 2: stale), r4 rung %d (want 0: short), r5 rung %d (want 2)", s.rung(r1), s.rung(r3), s.rung(r4), s.rung(r5))
	}
}

// Results the model has not seen yet are never touched, however many.
func TestUnconsumedUntouched(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}, Keep: 1})
	id := "toolu_x"
	s.c.Append(conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		conv.NewToolUse(id+"1", "bash", json.RawMessage(`{"command":"a"}`)),
		conv.NewToolUse(id+"2", "bash", json.RawMessage(`{"command":"b"}`)),
		conv.NewToolUse(id+"3", "bash", json.RawMessage(`{"command":"c"}`)),
	}})
	s.c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{
		conv.NewToolResult(id+"1", "bash", lines(50, "a%d"), false),
		conv.NewToolResult(id+"2", "bash", lines(50, "b%d"), false),
		conv.NewToolResult(id+"3", "bash", lines(50, "c%d"), false),
	}})
	for _, b := range s.c.Messages[len(s.c.Messages)-1].Blocks {
		s.orig[b.ID] = b.Clone()
	}
	if res := s.step(); res.Cleared != 0 {
		t.Errorf("cleared %d unconsumed results", res.Cleared)
	}
	s.call("bash", `{"command":"d"}`, "ok")
	if res := s.step(); res.Cleared != 2 {
		t.Errorf("cleared %d, want 2 of the 3 parallel results now consumed", res.Cleared)
	}
}

// A preserved read becomes clearable when stale: edited, written, or read
// again over the same lines.
func TestStaleReads(t *testing.T) {
	tests := []struct {
		name       string
		tool, in   string
		wantPlaced bool
	}{
		{"edited", "Edit", `{"file_path":"/w/src/app.go","old_string":"a","new_string":"b"}`, true},
		{"written", "Write", `{"file_path":"src/app.go","content":"x"}`, true},
		{"read again", "Read", `{"file_path":"/w/src/app.go"}`, true},
		{"sed -i through bash", "bash", `{"command":"sed -i 's/a/b/' src/app.go"}`, true},
		{"other part read", "Read", `{"file_path":"/w/src/app.go","offset":500,"limit":20}`, false},
		{"other file edited", "Edit", `{"file_path":"/w/src/other.go"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, Config{Policy: Eager{}, Keep: 1})
			read := s.call("Read", `{"file_path":"/w/src/app.go","offset":1,"limit":200}`, lines(200, "%6d\tcode"))
			s.step()
			s.call(tt.tool, tt.in, "done: "+strings.Repeat("x", 20))
			s.step()
			s.call("bash", `{"command":"go vet"}`, "ok")
			s.step()
			if placed := s.rung(read) == conv.RungPlaceholder; placed != tt.wantPlaced {
				t.Errorf("read cleared = %v, want %v (%q)", placed, tt.wantPlaced, s.text(read))
			}
		})
	}
}

// SWE-agent edits name no file: they act on the one opened last.
func TestSWEAgentOpenFile(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}, Keep: 1})
	view := s.call("bash", `{"command":"open src/core.py"}`, "[File: src/core.py (400 lines total)]\n"+lines(100, "%d:code"))
	s.step()
	s.call("bash", `{"command":"edit 10:12\nnew code\nend_of_edit"}`, "File updated. "+strings.Repeat("y", 120))
	s.step()
	s.call("bash", `{"command":"python -m pytest"}`, "ok")
	s.step()
	if s.rung(view) != conv.RungPlaceholder {
		t.Errorf("window of the edited file not cleared: %q", s.text(view))
	}
}

// Once its round has ended, a preserved read is compressed (rung 1).
func TestRung1AtRoundEnd(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}, Keep: 1})
	read := s.call("Read", `{"file_path":"big.go"}`, lines(900, "%6d\tfunc f() {}"))
	s.step()
	s.call("bash", `{"command":"go build"}`, "ok")
	s.step()
	if s.rung(read) != conv.RungFull {
		t.Fatalf("read lowered to %d inside its round", s.rung(read))
	}
	s.say("now add a test")
	res := s.step()
	if s.rung(read) != conv.RungCompressed || res.Compressed != 1 {
		t.Fatalf("read at rung %d after its round ended (compressed %d)", s.rung(read), res.Compressed)
	}
	if txt := s.text(read); !strings.Contains(txt, "400 more lines of big.go not shown (900 total); recall "+read) {
		t.Errorf("rung-1 note missing:\n%s", txt[len(txt)-200:])
	}
	// Stale later: rung 1 goes on down to rung 2, facts from the original.
	s.call("Edit", `{"file_path":"big.go"}`, "edited "+strings.Repeat("z", 200))
	s.step()
	s.call("bash", `{"command":"go test"}`, "ok")
	s.step()
	if want := `[cleared: Read "big.go" 900 lines — recall ` + read + `]`; s.text(read) != want {
		t.Errorf("placeholder %q, want %q", s.text(read), want)
	}
}

// failKeeper refuses every edit.
type failKeeper struct{}

var errDisk = errors.New("disk full")

func (failKeeper) Keep(context.Context, conv.Edit, *conv.Conversation) error { return errDisk }

func TestKeeperFailureChangesNothing(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}, Keep: 1, GuardTokens: 2000})
	for i := range 4 {
		s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), lines(60, "output %d"))
		s.step()
	}
	s.call("bash", `{"command":"huge"}`, lines(3000, "a long line of build output number %d"))
	before := s.c.Clone()
	for range 2 { // a failed step stays failed, and changes nothing
		res, err := s.m.Step(context.Background(), s.c, failKeeper{})
		if !errors.Is(err, errDisk) {
			t.Fatalf("Step error = %v, want the keeper's", err)
		}
		if len(res.Edits) != 0 {
			t.Errorf("edits reported although nothing was kept: %d", len(res.Edits))
		}
		// Counting fills token caches; nothing else may differ.
		if diff := cmp.Diff(before, s.c, cmpopts.IgnoreFields(conv.Meta{}, "Tokens")); diff != "" {
			t.Fatalf("conversation changed although Keep failed:\n%s", diff)
		}
	}
	// With a working keeper the same step goes through.
	res := s.step()
	if res.Spilled != 1 || res.Cleared == 0 {
		t.Errorf("after the keeper recovered: %+v", res)
	}
}

func TestGuard(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}, GuardTokens: 3000, GuardPreview: 300})
	big := lines(5000, "FAIL: TestThing/case_%d (0.01s)")
	id := s.call("Bash", `{"command":"go test ./..."}`, big)
	res := s.step()
	if res.Spilled != 1 || res.BytesSpilled != len(big) {
		t.Fatalf("result: %+v", res)
	}
	txt := s.text(id)
	if !strings.Contains(txt, "the whole output is in memory:"+id+"-bash.txt") || !strings.Contains(txt, "recall "+id) {
		t.Errorf("guard note missing:\n%s", txt)
	}
	if !strings.HasSuffix(strings.TrimSpace(txt), "FAIL: TestThing/case_5000 (0.01s)") {
		t.Errorf("command output must keep its tail:\n…%s", txt[len(txt)-120:])
	}
	data, ok := s.k.File(id + "-bash.txt")
	if !ok || string(data) != big {
		t.Errorf("spilled file does not hold the whole output")
	}
	n := conv.BlockTokens(&s.c.Messages[len(s.c.Messages)-1].Blocks[0], s.m.cfg.Counter)
	if n > 600 {
		t.Errorf("guarded result is %d tokens, want about the 300-token preview", n)
	}
}

func TestGuardStandalone(t *testing.T) {
	m := New(Config{GuardTokens: 100, GuardPreview: 20})
	b := conv.NewToolResult("t1", "Read", lines(400, "line %d of the file"), false)
	b.ID = "b9"
	k := NewMemoryKeeper()
	nb, ok, err := m.Guard(context.Background(), &b, k)
	if err != nil || !ok {
		t.Fatalf("Guard = %v, %v", ok, err)
	}
	if !strings.HasPrefix(nb.Text, "line 1 of the file") || nb.Meta.Rung != conv.RungCompressed || nb.ID != "b9" {
		t.Errorf("a read keeps its head: %+v", nb)
	}
	small := conv.NewToolResult("t2", "Read", "short", false)
	if _, ok, _ := m.Guard(context.Background(), &small, k); ok {
		t.Error("guarded a small result")
	}
}

// A summary replacing turns (an EditReplace by another layer) is noticed
// and the state rebuilt.
func TestRebuildAfterReplace(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}, Keep: 2})
	for i := range 6 {
		s.call("bash", fmt.Sprintf(`{"command":"run %d"}`, i), lines(40, "out %d"))
		s.step()
	}
	sum := conv.NewSummary("Summary of turns so far.", conv.Span{First: 1, Last: 1})
	e := conv.Edit{Kind: conv.EditReplace, From: 0, To: 7, Messages: []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{sum}}}}
	if err := s.k.Keep(context.Background(), e, s.c); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Apply(e); err != nil {
		t.Fatal(err)
	}
	s.c.Renumber()
	s.step()
	var last string
	for i := range 4 {
		last = s.call("bash", fmt.Sprintf(`{"command":"step %d"}`, i), lines(40, "out %d"))
		s.step()
	}
	cleared := 0
	for _, m := range s.c.Messages {
		for _, b := range m.Blocks {
			if b.Meta.Rung == conv.RungPlaceholder {
				cleared++
			}
		}
	}
	if cleared < 4 || s.rung(last) != conv.RungFull {
		t.Errorf("after the rebuild: %d cleared, last at rung %d", cleared, s.rung(last))
	}
}

// With a prompt cache, cache-aware holds small batches deep in the prefix
// that eager clears at once; without one too, when the batch would not
// save a recall round trip (the request read again) within the horizon.
func TestCacheAwareHolds(t *testing.T) {
	run := func(cfg Config) int {
		s := newSession(t, cfg)
		s.call("bash", `{"command":"make"}`, lines(200, "compiling unit %d"))
		s.step()
		for i := range 3 {
			s.call("bash", fmt.Sprintf(`{"command":"ls %d"}`, i), lines(400, "big listing %d"))
			s.step()
		}
		s.call("bash", `{"command":"true"}`, "ok")
		return s.step().Cleared
	}
	if got := run(Config{Keep: 3, Policy: Eager{}}); got != 1 {
		t.Errorf("eager cleared %d, want 1", got)
	}
	if got := run(Config{Keep: 3, Policy: CacheAware{Pricing: pricing.Anthropic()}}); got != 0 {
		t.Errorf("cache-aware cleared %d, want 0: a small block before 3 large ones is not worth the rewrite", got)
	}
	if got := run(Config{Keep: 3, Policy: CacheAware{Pricing: pricing.NoCache()}}); got != 0 {
		t.Errorf("cache-aware without a cache cleared %d, want 0: a small block early in a short session does not save a round trip", got)
	}
	// The listings stay whole at that window (the guard at its most,
	// not a quarter of 8,000): what is cleared is the policy's doing.
	if got := run(Config{Keep: 3, Policy: CacheAware{Pricing: pricing.Anthropic()}, Window: 8_000, GuardTokens: DefaultGuardTokens}); got != 1 {
		t.Errorf("cache-aware near the window cleared %d, want 1", got)
	}
}

// An expired cache makes clearing free: cache-aware clears what it held.
func TestExpiredCache(t *testing.T) {
	build := func(cfg Config) *session {
		s := newSession(t, cfg)
		s.call("bash", `{"command":"make"}`, lines(200, "compiling unit %d"))
		s.step()
		for i := range 3 {
			s.call("bash", fmt.Sprintf(`{"command":"ls %d"}`, i), lines(400, "big listing %d"))
			s.step()
		}
		s.call("bash", `{"command":"true"}`, "ok")
		return s
	}
	// Dollars alone (KeepValue −1): what is tested is the rewrite a cold
	// cache no longer charges, not the recall round trip the knob asks.
	dollars := CacheAware{Pricing: pricing.Anthropic(), KeepValue: -1}
	s := build(Config{Keep: 3, Policy: dollars})
	s.m.Expire()
	if res := s.step(); res.Cleared != 1 {
		t.Errorf("after Expire: cleared %d, want 1", res.Cleared)
	}

	now := time.Date(2026, 1, 5, 15, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s = build(Config{Keep: 3, Clock: clock, Policy: dollars})
	now = now.Add(4 * time.Minute)
	if res := s.step(); res.Cleared != 0 {
		t.Errorf("4 minutes idle: cleared %d, want 0 (cache still warm)", res.Cleared)
	}
	s.call("bash", `{"command":"true"}`, "ok")
	now = now.Add(6 * time.Minute)
	if res := s.step(); res.Cleared != 2 {
		t.Errorf("6 minutes idle: cleared %d, want 2 (cache expired; one more result left the window)", res.Cleared)
	}
}

// gate is a policy a test opens and closes.
type gate struct{ open *bool }

func (gate) Name() string         { return "gate" }
func (g gate) Clear(b Batch) bool { return *g.open && b.Freed > 0 }

// Another layer (the agent's round-end compression) may lower blocks in
// place between steps, even blocks with a pending offer: micro notices,
// rebuilds the offer from the block as it now is, and the placeholder
// still describes the original.
func TestChangedInPlace(t *testing.T) {
	open := false
	s := newSession(t, Config{Policy: gate{&open}, Keep: 1})
	big := s.call("bash", `{"command":"go test -v ./..."}`, lines(900, "=== RUN TestCase%d"))
	s.step()
	s.call("bash", `{"command":"true"}`, "ok")
	s.step()
	s.call("bash", `{"command":"true"}`, "ok")
	if res := s.step(); res.Deferred == 0 {
		t.Fatalf("nothing pending: %+v", res)
	}
	// Compress it elsewhere, kept first, as the agent does.
	i, j := s.c.Find(big)
	uses := s.c.ToolUses()
	nb, ok := toolresult.Compress(&s.c.Messages[i].Blocks[j], uses[s.c.Messages[i].Blocks[j].ToolUseID])
	if !ok {
		t.Fatal("not compressible")
	}
	e := conv.Edit{Kind: conv.EditRung, Reason: "test:elsewhere", Blocks: []conv.Block{nb}}
	if err := s.k.Keep(context.Background(), e, s.c); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Apply(e); err != nil {
		t.Fatal(err)
	}
	open = true
	s.call("bash", `{"command":"true"}`, "ok")
	res := s.step()
	if want := `[cleared: bash "go test -v ./..." 900 lines — recall ` + big + `]`; s.text(big) != want {
		t.Errorf("placeholder %q, want %q", s.text(big), want)
	}
	if max := conv.BlockTokens(&nb, s.m.cfg.Counter); res.Freed >= max {
		t.Errorf("freed %d tokens, but the block held only %d when cleared", res.Freed, max)
	}
	if got := res.Tokens; got != s.c.Tokens(s.m.cfg.Counter).Total() {
		t.Errorf("Result.Tokens %d, conversation holds %d", got, s.c.Tokens(s.m.cfg.Counter).Total())
	}
}

func TestPreserveList(t *testing.T) {
	tests := []struct {
		name        string
		preserve    []string
		read, shell conv.Rung // rung of a Read result and of a bash cat result
	}{
		{"default: read-file tools", nil, conv.RungFull, conv.RungPlaceholder},
		{"nothing preserved", []string{}, conv.RungPlaceholder, conv.RungPlaceholder},
		{"the shell tool by name", []string{"BASH"}, conv.RungPlaceholder, conv.RungFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, Config{Policy: Eager{}, Keep: 1, Preserve: tt.preserve})
			read := s.call("Read", `{"file_path":"a.go"}`, lines(50, "%6d\tcode"))
			s.step()
			shell := s.call("bash", `{"command":"cat b.go"}`, lines(50, "line %d"))
			s.step()
			for range 2 {
				s.call("bash", `{"command":"go vet"}`, "ok")
				s.step()
			}
			if s.rung(read) != tt.read || s.rung(shell) != tt.shell {
				t.Errorf("Read at rung %d (want %d), bash cat at rung %d (want %d)", s.rung(read), tt.read, s.rung(shell), tt.shell)
			}
		})
	}
}

func TestNilKeeper(t *testing.T) {
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hi")}})
	if _, err := New(Config{}).Step(context.Background(), c, nil); err == nil {
		t.Error("Step ran without a Keeper")
	}
}

func TestMemoryKeeper(t *testing.T) {
	k := NewMemoryKeeper()
	if _, err := k.Recall("b1"); !errors.Is(err, ErrUnknownID) {
		t.Errorf("Recall of an unknown id: %v", err)
	}
	c := &conv.Conversation{}
	c.Append(conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{conv.NewText(conv.SourceUser, "hi")}})
	bad := conv.Edit{Kind: conv.EditRung, Blocks: []conv.Block{{ID: "b99", Type: conv.TypeText, Text: "x"}}}
	if err := k.Keep(context.Background(), bad, c); !errors.Is(err, conv.ErrEdit) {
		t.Errorf("Keep of an edit naming no block: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.Keep(ctx, conv.Edit{Kind: conv.EditRung}, c); !errors.Is(err, context.Canceled) {
		t.Errorf("Keep with a cancelled context: %v", err)
	}
}

func TestSamePath(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"src/a.go", "src/a.go", true},
		{"./src/a.go", "src/a.go", true},
		{"/w/src/a.go", "src/a.go", true},
		{"/w/src/a.go", "/x/src/a.go", false},
		{"/w/src/a.go", "rc/a.go", false},
		{"src/a.go", "b/a.go", false},
	}
	for _, tt := range tests {
		if got := samePath(tt.a, tt.b); got != tt.want {
			t.Errorf("samePath(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func TestFenwick(t *testing.T) {
	var f fenwick
	want := []int{}
	for i := range 100 {
		f.push(i * 3)
		want = append(want, i*3)
	}
	f.set(10, 7)
	want[10] = 7
	f.set(99, 1)
	want[99] = 1
	sum := 0
	for n := 0; n <= len(want); n++ {
		if got := f.prefix(n); got != sum {
			t.Fatalf("prefix(%d) = %d, want %d", n, got, sum)
		}
		if n < len(want) {
			sum += want[n]
		}
	}
}

// TestInputRung1AtRoundEnd: a large Write input stays whole while its
// round runs (the execution frontier), and once the round has ended it is
// compressed like a result: same keys, the path, the first lines, size,
// hash and recall id; the original comes back by recall and the artifact
// trail still names the file.
func TestInputRung1AtRoundEnd(t *testing.T) {
	s := newSession(t, Config{Policy: Eager{}})
	content := lines(300, "line %d of the new store")
	in, _ := json.Marshal(map[string]string{"file_path": "src/store.go", "content": content})
	s.call("Write", string(in), "File created successfully at: src/store.go")
	s.step()
	call := s.c.Messages[len(s.c.Messages)-2].Blocks[1]
	if s.rung(call.ID) != conv.RungFull {
		t.Fatalf("input lowered inside its round")
	}
	s.call("Bash", `{"command":"go build ./..."}`, "ok")
	s.step()
	s.say("now add a test")
	res := s.step()
	i, j := s.c.Find(call.ID)
	got := s.c.Messages[i].Blocks[j]
	if got.Meta.Rung != conv.RungCompressed || res.Compressed == 0 {
		t.Fatalf("input at rung %d after its round ended", got.Meta.Rung)
	}
	var m map[string]string
	if err := json.Unmarshal(got.Input, &m); err != nil || len(m) != 2 || m["file_path"] != "src/store.go" {
		t.Fatalf("compressed input %s: %v", got.Input, err)
	}
	for _, w := range []string{"line 1 of the new store", "290 more lines not shown", "sha256 ", "recall " + call.ID} {
		if !strings.Contains(m["content"], w) {
			t.Errorf("%q missing from %q", w, m["content"])
		}
	}
	orig, err := s.k.Recall(call.ID)
	if err != nil || string(orig.Input) != string(in) {
		t.Fatalf("recall %s: %v", call.ID, err)
	}
	paths := ""
	for _, a := range summarize.Artifacts(s.c.Messages) {
		paths += a.Path + " "
	}
	if !strings.Contains(paths, "src/store.go") {
		t.Errorf("artifact trail lost the written file: %q", paths)
	}
}
