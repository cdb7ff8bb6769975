package judge

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/conv"
	"github.com/ctxkit/ctxkit/summarize"
	"github.com/ctxkit/ctxkit/textfmt"
)

// Kind is the kind of a probe question (Factory.ai's four probe types).
type Kind string

// The probe kinds, in the order Probes takes them.
const (
	Recall       Kind = "recall"       // what was the original error?
	Artifact     Kind = "artifact"     // which files were changed, and how?
	Continuation Kind = "continuation" // what is the next step?
	Decision     Kind = "decision"     // what was decided, and why?
)

// Kinds lists the probe kinds in report order.
func Kinds() []Kind { return []Kind{Recall, Artifact, Continuation, Decision} }

// Probe is one question asked of a session at one point of its recording.
type Probe struct {
	Kind     Kind   `json:"kind"`
	Question string `json:"question"`
	// At is the index in the recording of the assistant message the
	// question is asked before: the answer sees what each strategy would
	// have sent at that point.
	At int `json:"at"`
	// Reference is what the recording itself says (the error's key line,
	// the files and how they changed, what the agent did next, the decision
	// sentence). The consistency test does not use it; it is shown to
	// people reading the probes.
	Reference string `json:"reference"`
}

// ProbeOptions configure probe generation.
type ProbeOptions struct {
	// N is the number of probes per session; 0 means 4 (one of each kind
	// when the session has material for each).
	N int
	// MaxPromptTokens, when positive, limits the questions to turns whose
	// full context (system, tools and messages so far) fits in that many
	// tokens by Counter, since the consistency test needs an answer from the
	// full context.
	MaxPromptTokens int
	Counter         conv.Counter
}

// Probes generates up to opts.N probe questions from a recorded session,
// deterministically. They are asked as late as the full context allows (at
// the last assistant message that fits), where compaction has had the most
// chance to lose something:
//
//   - recall: the first error a tool reported (its key line is the
//     reference), then later distinct errors;
//   - artifact: the files the recording's write and edit calls changed;
//   - continuation: cut before the latest assistant message that acts (calls
//     a tool); the reference is what it did;
//   - decision: an assistant sentence stating a decision, preferably with
//     its reason, asked about by its topic (a file or identifier it names).
//
// Kinds are taken in turn (recall, artifact, continuation, decision, then
// the second candidate of each, …); a kind the session has no material for
// is skipped.
func Probes(rec *conv.Conversation, opts ProbeOptions) []Probe {
	n := opts.N
	if n <= 0 {
		n = 4
	}
	k := askTurn(rec, opts)
	if k < 0 {
		return nil
	}
	g := newGen(rec, k)
	cands := [][]Probe{g.recall(), g.artifact(), g.continuation(), g.decision()}
	var out []Probe
	for i := 0; len(out) < n; i++ {
		took := false
		for _, cs := range cands {
			if i < len(cs) && len(out) < n {
				out = append(out, cs[i])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

// askTurn is the index of the last assistant message (after the first one,
// so that there is history to ask about) whose full context fits the
// budget, or -1.
func askTurn(rec *conv.Conversation, opts ProbeOptions) int {
	var asst []int
	for i, m := range rec.Messages {
		if m.Role == conv.RoleAssistant && i > 0 {
			asst = append(asst, i)
		}
	}
	if len(asst) < 2 {
		return -1
	}
	asst = asst[1:]
	if opts.MaxPromptTokens <= 0 || opts.Counter == nil {
		return asst[len(asst)-1]
	}
	c := opts.Counter
	total := 0
	for i := range rec.System {
		total += c.Count(rec.System[i].PlainText())
	}
	for _, t := range rec.Tools {
		total += c.Count(t.Name + " " + t.Description + " " + string(t.InputSchema))
	}
	// total is the size of the context before message i.
	best := -1
	j := 0
	for i := range rec.Messages {
		if j < len(asst) && asst[j] == i {
			if total > opts.MaxPromptTokens {
				break
			}
			best = i
			j++
		}
		for b := range rec.Messages[i].Blocks {
			total += c.Count(rec.Messages[i].Blocks[b].PlainText()) + 4
		}
	}
	return best
}

// gen holds what the candidate builders share: the recording up to the
// asking turn and its tool calls by id.
type gen struct {
	rec   *conv.Conversation
	k     int
	calls map[string]*conv.Block
}

func newGen(rec *conv.Conversation, k int) *gen {
	g := &gen{rec: rec, k: k, calls: make(map[string]*conv.Block)}
	for i := 0; i < k; i++ {
		for j := range rec.Messages[i].Blocks {
			if b := &rec.Messages[i].Blocks[j]; b.Type == conv.TypeToolUse {
				g.calls[b.ToolUseID] = b
			}
		}
	}
	return g
}

func (g *gen) recall() []Probe {
	var out []Probe
	seen := make(map[string]bool)
	for i := 0; i < g.k; i++ {
		for j := range g.rec.Messages[i].Blocks {
			b := &g.rec.Messages[i].Blocks[j]
			if !summarize.IsErrorResult(b) {
				continue
			}
			key := keyLine(b.ResultText())
			if key == "" || seen[key] {
				continue
			}
			seen[key] = true
			what := "a tool call"
			if call := g.calls[b.ToolUseID]; call != nil {
				what = callLabel(call)
			} else if b.Name != "" {
				what = "the " + b.Name + " call"
			}
			q := fmt.Sprintf("What was the original error reported by %s? Give its key error line.", what)
			if len(out) > 0 {
				q = fmt.Sprintf("What error did %s report? Give its key error line.", what)
			}
			out = append(out, Probe{Kind: Recall, Question: q, At: g.k, Reference: key})
		}
	}
	return out
}

var (
	tagRe      = regexp.MustCompile(`</?[a-z_]+>`)
	exitOnlyRe = regexp.MustCompile(`(?i)^\W*(the command completed with )?exit(ed)?[ _]?(code|status)\W*-?\d+\W*$`)
	excRe      = regexp.MustCompile(`\b\w*(Error|Exception|Exit)\b\s*:|\berror(\[\w+\])?:|(?i)\bpanic:|\bfatal:`)
)

// keyLine is the line of an error output that says what went wrong: an
// exception or error line when there is one, else the first telling line
// summarize.ErrorLines finds; "" when the output says no more than its exit
// code.
func keyLine(text string) string {
	var lines []string
	for _, l := range summarize.ErrorLines(text, 6) {
		l = strings.TrimSpace(tagRe.ReplaceAllString(l, ""))
		if l == "" || strings.HasPrefix(l, "Traceback (most recent call last)") || exitOnlyRe.MatchString(l) {
			continue
		}
		lines = append(lines, l)
	}
	for _, l := range lines {
		if excRe.MatchString(l) {
			return l
		}
	}
	if len(lines) > 0 {
		return lines[0]
	}
	return ""
}

func (g *gen) artifact() []Probe {
	var out []Probe
	at := []int{g.k}
	// A second artifact probe asks about the first half of the session.
	if mid := g.assistantAtOrBefore(g.k / 2); mid > 0 && mid < g.k {
		at = append(at, mid)
	}
	last := ""
	for _, k := range at {
		ref := artifactTrail(summarize.Artifacts(g.rec.Messages[:k]))
		if ref == "" || ref == last {
			continue
		}
		last = ref
		out = append(out, Probe{Kind: Artifact, At: k, Reference: ref,
			Question: "Which files have been changed so far in this session, and how? List each file with what was done to it."})
	}
	return out
}

func artifactTrail(arts []summarize.Artifact) string {
	var lines []string
	for _, a := range arts {
		if !a.Changed() {
			continue
		}
		var ops []string
		for _, op := range a.Ops {
			if op.Op == summarize.OpRead {
				continue
			}
			s := op.Op
			if op.How != "" {
				s += " (" + op.How + ")"
			}
			if op.Failed {
				s += " [failed]"
			}
			ops = append(ops, s)
		}
		lines = append(lines, a.Path+": "+strings.Join(ops, ", "))
	}
	return textfmt.Clip(strings.Join(lines, "; "), 1500)
}

// assistantAtOrBefore is the latest assistant message index ≤ i (and > 1,
// so that there is history before it), or -1.
func (g *gen) assistantAtOrBefore(i int) int {
	for ; i > 1; i-- {
		if g.rec.Messages[i].Role == conv.RoleAssistant {
			return i
		}
	}
	return -1
}

func (g *gen) continuation() []Probe {
	var out []Probe
	// Cut points: the last acting turn at or before the asking turn, then
	// acting turns at three quarters and half of it.
	seen := make(map[int]bool)
	for _, frac := range [][2]int{{1, 1}, {3, 4}, {1, 2}} {
		i := g.k * frac[0] / frac[1]
		for ; i > 1; i-- {
			if m := &g.rec.Messages[i]; m.Role == conv.RoleAssistant && acts(m) {
				break
			}
		}
		if i <= 1 || seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, Probe{Kind: Continuation, At: i, Reference: describeStep(&g.rec.Messages[i]),
			Question: "What is the next step? Say in one sentence what you would do next, with which tool and on what, without doing it."})
	}
	return out
}

// acts reports whether an assistant message does something: calls a tool
// other than a todo list (whose "next step" says nothing).
func acts(m *conv.Message) bool {
	for i := range m.Blocks {
		if b := &m.Blocks[i]; b.Type == conv.TypeToolUse && !strings.Contains(strings.ToLower(b.Name), "todo") {
			return true
		}
	}
	return false
}

// describeStep says what an assistant message did: its first sentence and
// its tool calls.
func describeStep(m *conv.Message) string {
	var parts []string
	for i := range m.Blocks {
		b := &m.Blocks[i]
		switch b.Type {
		case conv.TypeText:
			if s := sentences(b.Text); len(s) > 0 && len(parts) == 0 {
				parts = append(parts, textfmt.Clip(s[0], 200))
			}
		case conv.TypeToolUse:
			parts = append(parts, "calls "+callDesc(b))
		}
	}
	return strings.Join(parts, "; ")
}

// Decision cues: strong ones state a choice or a cause; reasons say why.
var (
	strongCues = []string{"decide", "decision", "the fix is", "the fix was", "the fix will", "instead of", "instead,", "the plan is", "root cause", "the issue is", "the issue was", "the problem is", "the problem was", "the bug is", "the bug was", "i'll use", "i will use", "we'll use", "approach", "going with", "opt for", "chose", "choose", "决定", "改为", "改用", "方案", "问题是", "原因是"}
	reasonCues = []string{"because", "since ", "so that", "which means", "due to", "in order to", "otherwise", "因为", "所以", "由于", "以便"}
	planCues   = []string{"i'll ", "i will ", "let me ", "let's ", "we should", "we need to", "i need to", "接下来", "下一步"}
)

func hasAny(s string, cues []string) bool {
	for _, c := range cues {
		if strings.Contains(s, c) {
			return true
		}
	}
	return false
}

// decisionScore rates a sentence as a decision: 3 a choice with its
// reason, 2 a choice, 1 a plan with a reason, 0 none.
func decisionScore(s string) int {
	l := strings.ToLower(s)
	strong, reason := hasAny(l, strongCues), hasAny(l, reasonCues)
	switch {
	case strong && reason:
		return 3
	case strong:
		return 2
	case reason && hasAny(l, planCues):
		return 1
	}
	return 0
}

func (g *gen) decision() []Probe {
	type cand struct {
		score int
		p     Probe
	}
	var cs []cand
	lastCall := ""
	for i := 0; i < g.k; i++ {
		m := &g.rec.Messages[i]
		if m.Role != conv.RoleAssistant {
			continue
		}
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if b.Type == conv.TypeToolUse {
				lastCall = callLabel(b)
				continue
			}
			if b.Type != conv.TypeText {
				continue
			}
			for _, s := range sentences(b.Text) {
				n := utf8.RuneCountInString(s)
				score := decisionScore(s)
				if n < 30 || n > 400 || score == 0 {
					continue
				}
				topic := topicOf(s)
				q := "What did you decide at the start of the work, and why?"
				switch {
				case topic != "":
					q = fmt.Sprintf("What was decided about %s, and why?", quote(topic))
				case lastCall != "":
					q = fmt.Sprintf("What did you decide after %s, and why?", lastCall)
				}
				cs = append(cs, cand{score, Probe{Kind: Decision, Question: q, At: g.k, Reference: textfmt.Clip(s, 400)}})
			}
		}
	}
	// Best score first, the earliest among equals; one decision per
	// question (the best sentence that would ask it).
	var out []Probe
	asked := make(map[string]bool)
	for score := 3; score >= 1; score-- {
		for _, c := range cs {
			if c.score == score && !asked[c.p.Question] {
				asked[c.p.Question] = true
				out = append(out, c.p)
			}
		}
	}
	return out
}

var (
	sentenceRe = regexp.MustCompile(`(?s).+?(?:[.!?](?:\s|$)|[。！？]|\n|$)`)
	backtickRe = regexp.MustCompile("`([^`\\s]{2,60})`")
	pathRe     = regexp.MustCompile(`[A-Za-z_][\w-]*(?:[./][\w-]+)*\.[a-z0-9]{1,5}\b|[\w.-]*/[\w./-]+`)
	identRe    = regexp.MustCompile(`\b(?:[a-z]+[A-Z]\w*|[A-Za-z]\w*_\w+|[A-Za-z_]\w*\(\))`)
)

// sentences splits text into sentences, keeping file names whole (a dot
// ends a sentence only before a space or the end).
func sentences(text string) []string {
	var out []string
	for _, s := range sentenceRe.FindAllString(text, -1) {
		s = strings.TrimSpace(s)
		s = strings.TrimLeft(s, "-*#>• ")
		s = strings.TrimSpace(strings.TrimPrefix(s, "THOUGHT:"))
		if s != "" && !strings.HasPrefix(s, "```") {
			out = append(out, s)
		}
	}
	return out
}

// topicOf returns what a sentence is about: a backquoted term, a file
// path, or an identifier; "" when it names none.
func topicOf(s string) string {
	for _, m := range backtickRe.FindAllStringSubmatch(s, -1) {
		if hasLetter(m[1]) {
			return m[1]
		}
	}
	for _, re := range []*regexp.Regexp{pathRe, identRe} {
		for _, m := range re.FindAllString(s, -1) {
			if hasLetter(m) && !commonAbbrev[strings.ToLower(m)] {
				return strings.TrimRight(m, ".")
			}
		}
	}
	return ""
}

func hasLetter(s string) bool {
	return strings.IndexFunc(s, unicode.IsLetter) >= 0
}

var commonAbbrev = map[string]bool{"e.g": true, "i.e": true, "e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "and/or": true}

// callLabel names a tool call for a question: the tool and its main
// argument (the command, the file), e.g. "the Bash call `go test ./...`".
func callLabel(b *conv.Block) string { return "the " + callDesc(b) + " call" }

// callDesc is a tool call's name and main argument: Bash `go test ./...`.
// A multi-line argument (a heredoc, a script) is shown by its first line.
func callDesc(b *conv.Block) string {
	var in map[string]any
	_ = json.Unmarshal(b.Input, &in)
	var args []string
	for _, key := range []string{"command", "cmd", "file_path", "path", "filename", "notebook_path", "pattern", "query", "url", "code"} {
		switch v := in[key].(type) {
		case string:
			if v = strings.TrimSpace(v); v != "" {
				args = append(args, v)
			}
		case []any:
			var parts []string
			for _, p := range v {
				if s, ok := p.(string); ok {
					parts = append(parts, s)
				}
			}
			if len(parts) > 0 {
				args = append(args, strings.Join(parts, " "))
			}
		}
		// A one-word command (str_replace_editor's "view") says little
		// without the path that follows it.
		if len(args) > 1 || len(args) == 1 && (key != "command" || strings.ContainsAny(args[0], " \n")) {
			break
		}
	}
	if len(args) == 0 {
		return b.Name
	}
	arg := strings.Join(args, " ")
	if first, _, ok := strings.Cut(strings.TrimSpace(arg), "\n"); ok {
		arg = first
	}
	return b.Name + " " + quote(textfmt.Clip(textfmt.OneLine(arg), 80))
}

func quote(s string) string {
	if strings.Contains(s, "`") {
		return `"` + s + `"`
	}
	return "`" + s + "`"
}
