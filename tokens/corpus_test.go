package tokens

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A sample is a piece of text of one kind, taken from a recorded session or
// from testdata.
type sample struct {
	kind string // code, prose, json, cjk, other
	src  string // file and place, for messages
	text string
}

// moduleRoot walks up from the working directory to the folder holding
// go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// sharedDir returns ../shared/<rel> next to the module root, or skips the
// test when it is absent.
func sharedDir(t testing.TB, rel string) string {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "..", "shared", filepath.FromSlash(rel))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("%s is absent (../shared next to the module root holds it); skipping this check", dir)
	}
	return dir
}

// corpusSamples gathers text by kind from the recorded sessions: assistant
// prose, file views and diffs as code, whole JSON records (compact and
// indented) and tool inputs as JSON, everything else a tool returned as
// other.
func corpusSamples(t testing.TB) []sample {
	t.Helper()
	root := sharedDir(t, "corpus/raw")
	var out []sample
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		x := &extractor{src: rel}
		switch {
		case strings.HasSuffix(path, ".jsonl"):
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				line := sc.Bytes()
				var v any
				if json.Unmarshal(line, &v) != nil {
					continue
				}
				x.addJSON(line)
				x.record(v)
			}
		case strings.HasSuffix(path, ".traj"), strings.HasSuffix(path, ".traj.json"):
			var v any
			if json.Unmarshal(data, &v) != nil {
				return nil
			}
			x.record(v)
		}
		out = append(out, x.out...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type extractor struct {
	src   string
	out   []sample
	names map[string]string // tool_use id → tool name (Claude Code)
}

func (x *extractor) add(kind, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	if cjkShare(text) >= 0.2 {
		kind = "cjk"
	} else if kind == "other" && isFileView(text) {
		kind = "code"
	}
	x.out = append(x.out, sample{kind: kind, src: x.src, text: text})
}

// addJSON adds a JSON record as it was stored and indented by two spaces, as
// tools often print it.
func (x *extractor) addJSON(raw []byte) {
	x.add("json", string(raw))
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		x.add("json", buf.String())
	}
}

func (x *extractor) addRaw(v any) {
	if b, err := json.Marshal(v); err == nil && len(b) > 2 {
		x.add("json", string(b))
	}
}

// record picks the texts out of one decoded session record.
func (x *extractor) record(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	switch {
	case m["message"] != nil && (m["type"] == "user" || m["type"] == "assistant"):
		x.claude(m)
	case m["messages"] != nil: // mini-swe-agent
		x.chat(m["messages"], "content")
		x.info(m["info"])
	case m["history"] != nil: // SWE-agent or OpenHands
		if _, ok := m["trajectory"]; ok {
			x.chat(m["history"], "thought")
		} else {
			x.openhands(m["history"])
		}
		x.info(m["info"])
		x.addString("code", m["git_patch"])
		if tr, ok := m["test_result"].(map[string]any); ok {
			x.addString("code", tr["git_patch"])
		}
	}
}

func (x *extractor) addString(kind string, v any) {
	if s, ok := v.(string); ok {
		x.add(kind, s)
	}
}

func (x *extractor) info(v any) {
	if m, ok := v.(map[string]any); ok {
		x.addString("code", m["submission"])
	}
}

func (x *extractor) claude(m map[string]any) {
	msg, _ := m["message"].(map[string]any)
	role, _ := msg["role"].(string)
	blocks, _ := msg["content"].([]any)
	if x.names == nil {
		x.names = map[string]string{}
	}
	for _, b := range blocks {
		b, _ := b.(map[string]any)
		switch b["type"] {
		case "text":
			if role == "assistant" {
				x.addString("prose", b["text"])
			}
		case "tool_use":
			id, _ := b["id"].(string)
			name, _ := b["name"].(string)
			x.names[id] = name
			x.addRaw(b["input"])
		case "tool_result":
			id, _ := b["tool_use_id"].(string)
			kind := "other"
			if x.names[id] == "Read" {
				kind = "code"
			}
			switch c := b["content"].(type) {
			case string:
				x.add(kind, c)
			case []any:
				for _, p := range c {
					if p, ok := p.(map[string]any); ok && p["type"] == "text" {
						x.addString(kind, p["text"])
					}
				}
			}
		}
	}
}

var fence = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")

// viewer matches commands whose output is a file's text.
var viewer = regexp.MustCompile(`^\s*(cat|nl|head|tail|sed -n|open|goto|scroll_up|scroll_down|create|edit)\b`)

// chat handles the mini-swe-agent and SWE-agent message lists: assistant
// text (without its command block) is prose; what a file-viewing command
// printed is code.
func (x *extractor) chat(v any, proseKey string) {
	msgs, _ := v.([]any)
	view := false
	for i, m := range msgs {
		m, _ := m.(map[string]any)
		if demo, _ := m["is_demo"].(bool); demo {
			continue
		}
		content, _ := m["content"].(string)
		if list, ok := m["content"].([]any); ok {
			for _, p := range list {
				if p, ok := p.(map[string]any); ok {
					if s, ok := p["text"].(string); ok {
						content += s
					}
				}
			}
		}
		switch m["role"] {
		case "assistant":
			prose, _ := m[proseKey].(string)
			if proseKey == "content" {
				prose = fence.ReplaceAllString(content, "")
			}
			x.add("prose", prose)
			cmd, _ := m["action"].(string)
			if f := fence.FindAllStringSubmatch(content, -1); cmd == "" && len(f) > 0 {
				cmd = f[len(f)-1][1]
			}
			view = viewer.MatchString(cmd)
		case "user", "tool":
			if i < 2 {
				continue // the task statement
			}
			if view {
				x.add("code", content)
			} else {
				x.add("other", content)
			}
			view = false
		}
	}
}

func (x *extractor) openhands(v any) {
	events, _ := v.([]any)
	view := false
	for _, e := range events {
		e, _ := e.(map[string]any)
		args, _ := e["args"].(map[string]any)
		if args == nil {
			args = e
		}
		x.addString("prose", args["thought"])
		if a, ok := e["action"].(string); ok {
			cmd, _ := args["command"].(string)
			if c, ok := args["code"].(string); ok {
				cmd = c
			}
			view = a == "read" || viewer.MatchString(cmd) || strings.HasPrefix(cmd, "open_file")
			if md, ok := e["tool_call_metadata"].(map[string]any); ok {
				x.addRaw(md["model_response"])
			}
			continue
		}
		if _, ok := e["observation"]; ok {
			if view || e["observation"] == "read" {
				x.addString("code", e["content"])
			} else {
				x.addString("other", e["content"])
			}
			view = false
		}
	}
}

var lineNumber = regexp.MustCompile(`^\s*\d+(→|\||:|\t| )`)

// isFileView reports whether most lines of s carry a line number, as file
// views do.
func isFileView(s string) bool {
	lines := strings.Split(s, "\n")
	total, numbered := 0, 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		total++
		if lineNumber.MatchString(l) {
			numbered++
		}
	}
	return total >= 5 && numbered*2 >= total
}

func cjkShare(s string) float64 {
	var cjk, all int
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		all++
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			cjk++
		}
	}
	if all == 0 {
		return 0
	}
	return float64(cjk) / float64(all)
}

// seedSamples returns the seeds (Chinese specification text), whole and in
// chunks of about 4 KB cut at line ends.
func seedSamples(t testing.TB) []sample {
	t.Helper()
	dir := sharedDir(t, "seeds")
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	sort.Strings(files)
	var out []sample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := "seeds/" + filepath.Base(f)
		out = append(out, sample{kind: "cjk", src: name, text: string(b)})
		for _, c := range chunks(string(b), 4096) {
			out = append(out, sample{kind: "cjk", src: name + " (chunk)", text: c})
		}
	}
	return out
}

func chunks(s string, size int) []string {
	var out []string
	for len(s) > size {
		cut := strings.LastIndexByte(s[:size], '\n') + 1
		if cut == 0 {
			for cut = size; cut > 0 && !utf8.RuneStart(s[cut]); cut-- {
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}
