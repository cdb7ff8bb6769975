package importer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/conv"
)

// rawCounts is what a recording holds, counted from its raw records
// without the importer: the model's responses, its tool calls, and the
// responses that carry recorded usage.
type rawCounts struct {
	responses, calls, usage int
}

// countClaudeCode counts the main thread's API responses (distinct
// message.id of assistant records, leaving out sidechains, <synthetic>
// replies and API errors) and their distinct tool_use ids.
func countClaudeCode(t *testing.T, path string) rawCounts {
	ids, calls, usage := map[string]bool{}, map[string]bool{}, map[string]bool{}
	eachLine(t, path, func(line []byte) {
		var r struct {
			Type        string `json:"type"`
			IsSidechain bool   `json:"isSidechain"`
			IsAPIError  bool   `json:"isApiErrorMessage"`
			Message     struct {
				ID      string          `json:"id"`
				Model   string          `json:"model"`
				Usage   json.RawMessage `json:"usage"`
				Content []struct {
					Type string `json:"type"`
					ID   string `json:"id"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &r) != nil || r.Type != "assistant" || r.IsSidechain || r.IsAPIError || r.Message.Model == "<synthetic>" {
			return
		}
		ids[r.Message.ID] = true
		if len(r.Message.Usage) > 0 {
			usage[r.Message.ID] = true
		}
		for _, c := range r.Message.Content {
			if c.Type == "tool_use" {
				calls[c.ID] = true
			}
		}
	})
	return rawCounts{len(ids), len(calls), len(usage)}
}

// countCodex counts tool calls (function, custom and local shell calls)
// and distinct cumulative usages in token_count events.
func countCodex(t *testing.T, path string) rawCounts {
	var n rawCounts
	totals := map[string]bool{}
	eachLine(t, path, func(line []byte) {
		var r struct {
			Type    string `json:"type"`
			Payload struct {
				Type string          `json:"type"`
				Info json.RawMessage `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &r) != nil {
			return
		}
		switch {
		case r.Type == "response_item" && (r.Payload.Type == "function_call" || r.Payload.Type == "custom_tool_call" || r.Payload.Type == "local_shell_call"):
			n.calls++
		case r.Type == "event_msg" && r.Payload.Type == "token_count" && len(r.Payload.Info) > 0 && string(r.Payload.Info) != "null":
			var info struct {
				Total json.RawMessage `json:"total_token_usage"`
			}
			_ = json.Unmarshal(r.Payload.Info, &info)
			totals[string(info.Total)] = true
		}
	})
	n.usage = len(totals)
	return n
}

// countMiniNative counts a mini-swe-agent 2.x trajectory's assistant
// messages and native tool calls.
func countMiniNative(t *testing.T, path string) rawCounts {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var traj struct {
		Messages []struct {
			Role      string            `json:"role"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(data, &traj); err != nil {
		t.Fatal(err)
	}
	var n rawCounts
	for _, m := range traj.Messages {
		if m.Role == "assistant" {
			n.responses++
			n.usage++
			n.calls += len(m.ToolCalls)
		}
	}
	return n
}

func eachLine(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestCorpusCounts checks the long sessions against counts taken from
// their raw records, so that an importer that quietly drops part of a
// session cannot pass.
func TestCorpusCounts(t *testing.T) {
	raw := corpusDir(t)
	for _, tc := range []struct {
		file  string
		count func(*testing.T, string) rawCounts
		// merged is how many responses the import merges: a damaged line
		// lost the tool results between them.
		merged int
	}{
		{"claude-code/mclaude-3cfce0ff.jsonl", countClaudeCode, 0},
		{"claude-code/mclaude-abc757d1.jsonl", countClaudeCode, 0},
		{"claude-code/mclaude-c76e5be5.jsonl", countClaudeCode, 1},
		{"claude-code/mclaude-ff59cfd2.jsonl", countClaudeCode, 0},
		{"codex/openprintkit-97b66f6c.jsonl", countCodex, 0},
		{"codex/openprintkit-c61729d4.jsonl", countCodex, 0},
		{"mini-swe-agent/deepseekchat-django-13265.traj.json", countMiniNative, 0},
		{"mini-swe-agent/deepseekchat-sqlfluff-1733.traj.json", countMiniNative, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(raw, filepath.FromSlash(tc.file))
			want := tc.count(t, path)
			s := mustLoad(t, path, Options{})
			got := count(s.Conv)
			if got.calls != want.calls {
				t.Errorf("%d tool calls, the raw records hold %d", got.calls, want.calls)
			}
			assistants := 0
			for _, m := range s.Conv.Messages {
				if m.Role == conv.RoleAssistant {
					assistants++
				}
			}
			if want.responses > 0 && assistants != want.responses-tc.merged {
				t.Errorf("%d assistant messages, the raw records hold %d responses (%d merged)", assistants, want.responses, tc.merged)
			}
			if _, n := s.Conv.RecordedUsage(); n != want.usage-tc.merged {
				t.Errorf("%d messages with recorded usage, the raw records hold %d", n, want.usage)
			}
		})
	}
}
