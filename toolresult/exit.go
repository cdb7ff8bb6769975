package toolresult

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/conv"
)

// exitForms are the status lines agents print around a command's output,
// as prefix and suffix around the number.
var exitForms = [][2]string{
	{"<returncode>", "</returncode>"},
	{"[exit code ", "]"}, // importer's form of mini-swe-agent's returncode
	{"[The command completed with exit code ", ".]"},
	{"[Command finished with exit code ", "]"},
	{"Exit code ", ""},
	{"Exit code: ", ""},
}

// ExitCode returns the exit status a command's result reports, from its
// structured data (exit_code) or the status lines agents print around
// plain output (mini-swe-agent's <returncode> first, OpenHands' "[The
// command completed with exit code N.]" last). It returns false when the
// result does not say. Only the first line and the last few are looked
// at, so it costs the same on a megabyte of output.
func ExitCode(result *conv.Block) (int, bool) {
	if env, ok := parseEnvelope(result.Structured); ok {
		var data map[string]json.RawMessage
		if json.Unmarshal(env["data"], &data) == nil {
			for _, k := range []string{"exit_code", "exitCode", "returncode", "exit_status", "code"} {
				var n json.Number
				dec := json.NewDecoder(bytes.NewReader(data[k]))
				dec.UseNumber()
				if dec.Decode(&n) == nil {
					if v, err := strconv.Atoi(n.String()); err == nil {
						return v, true
					}
				}
			}
		}
	}
	text := result.ResultText()
	if o, ok := codexOutput(text); ok && o.Metadata.ExitCode != nil {
		return *o.Metadata.ExitCode, true
	}
	first, _, _ := strings.Cut(text, "\n")
	if v, ok := exitLine(first); ok {
		return v, true
	}
	rest := strings.TrimRight(text, "\n \t")
	for range 6 {
		i := strings.LastIndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if v, ok := exitLine(rest[i+1:]); ok {
			return v, true
		}
		rest = strings.TrimRight(rest[:i], "\n \t")
	}
	return 0, false
}

func exitLine(line string) (int, bool) {
	line = strings.TrimSpace(line)
	for _, f := range exitForms {
		if num, ok := strings.CutPrefix(line, f[0]); ok {
			if num, ok = strings.CutSuffix(num, f[1]); ok {
				if v, err := strconv.Atoi(num); err == nil {
					return v, true
				}
			}
		}
	}
	return 0, false
}

// codexResult is the JSON text Codex CLI's shell tool returns:
// {"output": "...", "metadata": {"exit_code": 0, "duration_seconds": 0.2}}.
type codexResult struct {
	Output   string `json:"output"`
	Metadata struct {
		ExitCode *int `json:"exit_code"`
	} `json:"metadata"`
}

// codexOutput reads text as a Codex shell result.
func codexOutput(text string) (codexResult, bool) {
	var r codexResult
	if !strings.HasPrefix(text, `{"output":`) || json.Unmarshal([]byte(text), &r) != nil {
		return r, false
	}
	return r, true
}
